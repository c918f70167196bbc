"""Every code block of README.md and docs/*.md runs, and prints what the page shows it printing.

How a block runs, what is compared and what is normalised (only date-times, Unix times in
milliseconds, durations and the temporary folder's path) is in ``tests/docs_helpers.py``. Each
page runs in its own fresh folder laid out like a fresh clone, so no block can touch the
checkout. A block that cannot run here is marked on the page, ``<!-- skip: next "why" -->``,
and ``NOT_RUN`` below pins how many each page has: a new skip fails this test until it is
listed here, so none is skipped silently. The last tests run the runner on a small page, as it
is and changed, so that a drifted page is known to fail.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from docs_helpers import ROOT, Workspace, run_page

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# Blocks marked `skip: next` per page (the reasons are on the page, next to each block).
NOT_RUN = {
    "README.md": 3,  # the set-up commands: a venv, packages installed
    "docs/architecture.md": 3,
    "docs/backends.md": 4,
    "docs/benchmarks.md": 5,
    "docs/cli.md": 2,
    "docs/format.md": 2,
    "docs/guarantees.md": 1,
    "docs/index.md": 2,
    "docs/live-tail.md": 1,
    "docs/sdk.md": 1,
    "docs/viewer.md": 1,
    "docs/workflows.md": 5,
}


@pytest.mark.parametrize("page", PAGES, ids=[str(page.relative_to(ROOT)) for page in PAGES])
def test_every_block_runs_and_prints_what_the_page_shows(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("agents.testing", reason="the pages' examples use agents.testing.ScriptedModel")
    workspace = Workspace(tmp_path)
    monkeypatch.chdir(tmp_path)
    for name, value in workspace.env.items():
        if name != "PATH":
            monkeypatch.setenv(name, value)

    failures = run_page(page, workspace)

    name = str(page.relative_to(ROOT))
    assert not failures, f"{name}:\n" + "\n\n".join(failures)
    skipped = workspace.counts.skipped
    assert len(skipped) == NOT_RUN.get(name, 0), (
        f"{name} skips {len(skipped)} blocks, NOT_RUN says {NOT_RUN.get(name, 0)}: "
        + "; ".join(f"line {line}: {why}" for line, why in skipped)
    )


RUNNER_PAGE = """\
<!-- skip: next "marked" -->
```json
{"not": "run"}
```

```python
print("hello")
```

```text
hello
```

<!-- given: what cat shows -->
```console
$ cat sessions/x.txt
one
two
$ jsonl-session ls
ID            ITEMS     SIZE  LAST ACTIVITY (UTC)  TITLE
...
```
"""


def run_text(text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], Workspace]:
    page = tmp_path / "page.md"
    page.write_text(text, encoding="utf-8")
    workspace = Workspace(tmp_path / "clone")
    monkeypatch.chdir(workspace.folder)
    return run_page(page, workspace), workspace


def test_the_runner_runs_compares_and_counts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    failures, workspace = run_text(RUNNER_PAGE, tmp_path, monkeypatch)
    assert failures == []
    counts = workspace.counts
    assert (counts.run, counts.compared, counts.skipped) == (2, 3, [(2, "marked")])  # line: the block
    assert (workspace.folder / "sessions" / "x.txt").read_text() == "one\ntwo\n"


@pytest.mark.parametrize(
    ("change", "reported"),
    [
        (("hello\n```\n\n<!--", "hullo\n```\n\n<!--"), "hullo"),  # a python block's output
        (("ID            ITEMS", "ID  ITEMS"), "ID  ITEMS"),  # a console command's output
        (('<!-- skip: next "marked" -->\n', ""), "```json block has no runner"),  # an unmarked block
        (("<!-- given: what cat shows -->\n", ""), "No such file or directory"),  # cat of a file not made
    ],
    ids=["python-output", "console-output", "unmarked-block", "cat-without-given"],
)
def test_the_runner_fails_a_page_that_drifted(
    change: tuple[str, str], reported: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = change
    assert RUNNER_PAGE.count(old) == 1
    failures, _ = run_text(RUNNER_PAGE.replace(old, new), tmp_path, monkeypatch)
    assert len(failures) == 1 and reported in failures[0], failures
