"""One bad file does not stop whole-folder work: it is named, the rest is done, the exit code says so (#15.8).

As a non-root user one unreadable session made ``list()``, ``ls``, ``check``, ``stats`` and
``grep`` fail outright, and one file with git conflict markers made ``stats`` fail; each test
here failed before. Root reads every file, so the commands run as ``nobody``.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from privilege_helpers import call_as_nobody, needs_root, run_as_nobody

from jsonl_session import JSONLSession, SessionDirectory, SkippedSessionWarning

pytestmark = needs_root


@pytest.fixture
def folder(shared_tmp: Path) -> Path:
    """``good`` (readable), ``locked`` (root's, 0600: unreadable to nobody), ``merged`` (conflict markers)."""
    folder = shared_tmp / "sessions"
    for name in ("good", "locked", "merged"):
        JSONLSession(name, folder).add_items_sync([{"role": "user", "content": f"hello from {name}"}])
    with (folder / "merged.jsonl").open("ab") as file:
        file.write(b"<<<<<<< HEAD\n=======\n>>>>>>> other\n")
    folder.chmod(0o755)
    (folder / "good.jsonl").chmod(0o644)
    (folder / "merged.jsonl").chmod(0o644)
    return folder


def test_ls_lists_the_rest_and_names_the_unreadable_file(folder: Path) -> None:
    result = run_as_nobody(folder, "ls")
    assert result.code == 1
    assert [line.split()[0] for line in result.out.splitlines()] == ["ID", "merged", "good"]
    assert result.err == f"jsonl-session: warning: {folder}/locked.jsonl: Permission denied; skipped\n"


def test_check_reports_the_unreadable_file_and_checks_the_others(folder: Path) -> None:
    result = run_as_nobody(folder, "check")
    assert result.code == 1
    assert f"{folder}/locked.jsonl: not checked: Permission denied\n" in result.out
    assert f"{folder}/merged.jsonl:2: git merge conflict marker '<<<<<<<'" in result.out
    assert result.err == "checked 3 files: 4 problems\n"


def test_stats_counts_the_readable_sessions_and_names_the_others(folder: Path) -> None:
    result = run_as_nobody(folder, "stats")
    assert result.code == 1
    assert result.out.startswith("1 session: 1 item, 15 characters, 0 tool calls\n")
    assert "locked.jsonl: Permission denied; skipped" in result.err
    assert "merged.jsonl:2: not valid JSON" in result.err


def test_grep_searches_the_readable_sessions_and_names_the_others(folder: Path) -> None:
    result = run_as_nobody(folder, "grep", "hello")
    assert result.code == 1  # a match, but not every session could be searched
    assert result.out == "good:1: user: hello from good\nmerged:1: user: hello from merged\n"
    assert result.err == f"jsonl-session: warning: {folder}/locked.jsonl: Permission denied; skipped\n"


def _list_ids(folder: Path) -> tuple[list[str], list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ids = [info.session_id for info in SessionDirectory(folder).list()]
    return ids, [f"{w.category.__name__}: {w.message}" for w in caught]


def test_list_skips_an_unreadable_session_with_a_warning(folder: Path) -> None:
    ids, caught = call_as_nobody(_list_ids, folder)
    assert sorted(ids) == ["good", "merged"]
    assert caught == [f"SkippedSessionWarning: {folder}/locked.jsonl: Permission denied; skipped"]
    problems: list[str] = []
    assert len(SessionDirectory(folder).list(on_error=lambda path, exc: problems.append(path.name))) == 3
    assert problems == []  # root reads them all
    assert SkippedSessionWarning.__mro__[1] is UserWarning
