"""Docstring examples are documentation users copy: every `>>>` one in the package must stay true."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import jsonl_session

# Deprecated import shims warn on import; ``__main__`` runs the command line on import.
NOT_RUN = {f"jsonl_session.{name}" for name in ("bulk", "replay", "secrets", "workers", "__main__")}


def test_every_docstring_example_is_true() -> None:
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)  # as pytest --doctest-modules
    report: list[str] = []
    for info in pkgutil.walk_packages(jsonl_session.__path__, "jsonl_session."):
        if info.name not in NOT_RUN:
            for test in finder.find(importlib.import_module(info.name)):
                runner.run(test, out=report.append)
    results = runner.summarize(verbose=False)
    assert results.failed == 0, "".join(report)
    assert results.attempted >= 80, f"only {results.attempted} examples ran"
