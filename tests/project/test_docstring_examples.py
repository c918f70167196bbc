"""Docstring examples are documentation users copy: every `>>>` one in the package must stay true."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import jsonl_session

ROOT = Path(__file__).resolve().parents[2]

# Deprecated import shims warn on import; ``__main__`` runs the command line on import.
NOT_RUN = {f"jsonl_session.{name}" for name in ("bulk", "replay", "secrets", "workers", "__main__")}


def test_every_docstring_example_is_true(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run in an empty folder: examples write ``sessions/convo_123.jsonl`` as a user's would,
    and once left it in the project's own ``sessions/`` (untracked clutter in every checkout)."""
    repo_sessions = sorted(path.name for path in (ROOT / "sessions").iterdir())
    monkeypatch.chdir(tmp_path)
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
    assert sorted(path.name for path in (ROOT / "sessions").iterdir()) == repo_sessions
