"""One bad file does not stop whole-folder work: it is named, the rest is done, the exit code says so (#15.8).

As a non-root user one unreadable session made ``list()``, ``ls``, ``check``, ``stats`` and
``grep`` fail outright, and one file with git conflict markers made ``stats`` fail; each test
here failed before. Root reads every file, so the commands run as ``nobody``.
"""

from __future__ import annotations

import subprocess
import warnings
from pathlib import Path

import pytest
from cli_helpers import cli_env, run
from privilege_helpers import call_as_nobody, needs_root, run_as_nobody

from jsonl_session import JSONLSession, SessionDirectory, SkippedSessionWarning


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


@needs_root
def test_ls_lists_the_rest_and_names_the_unreadable_file(folder: Path) -> None:
    result = run_as_nobody(folder, "ls")
    assert result.code == 1
    assert [line.split()[0] for line in result.out.splitlines()] == ["ID", "merged", "good"]
    assert result.err == f"jsonl-session: warning: {folder}/locked.jsonl: Permission denied; skipped\n"


@needs_root
def test_check_reports_the_unreadable_file_and_checks_the_others(folder: Path) -> None:
    result = run_as_nobody(folder, "check")
    assert result.code == 1
    assert f"{folder}/locked.jsonl: not checked: Permission denied\n" in result.out
    assert f"{folder}/merged.jsonl:2: git merge conflict marker '<<<<<<<'" in result.out
    assert result.err == "checked 3 files: 4 problems\n"


@needs_root
def test_stats_counts_the_readable_sessions_and_names_the_others(folder: Path) -> None:
    result = run_as_nobody(folder, "stats")
    assert result.code == 1
    assert result.out.startswith("1 session: 1 item, 15 characters, 0 tool calls, ")
    assert "locked.jsonl: Permission denied; skipped" in result.err
    assert "merged.jsonl:2: not valid JSON" in result.err


@needs_root
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


@needs_root
def test_list_skips_an_unreadable_session_with_a_warning(folder: Path) -> None:
    ids, caught = call_as_nobody(_list_ids, folder)
    assert sorted(ids) == ["good", "merged"]
    assert caught == [f"SkippedSessionWarning: {folder}/locked.jsonl: Permission denied; skipped"]
    problems: list[str] = []
    assert len(SessionDirectory(folder).list(on_error=lambda path, exc: problems.append(path.name))) == 3
    assert problems == []  # root reads them all
    assert SkippedSessionWarning.__mro__[1] is UserWarning


def test_a_session_whose_lock_is_held_too_long_is_named_and_the_rest_listed(sessions_dir: Path) -> None:
    for name in ("busy", "free"):
        JSONLSession(name, sessions_dir).add_items_sync([{"role": "user", "content": "hi"}])
    holder = subprocess.Popen(  # another process holding the write lock, as a long rewrite would
        ["flock", "--exclusive", str(sessions_dir / "busy.jsonl"), "sh", "-c", "echo held; read line"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        listed = run(sessions_dir, "ls", "--lock-timeout", "0.1")
        assert listed.code == 1 and [line.split()[0] for line in listed.out.splitlines()] == ["ID", "free"]
        assert "busy.jsonl: lock not acquired within 0.1s" in listed.err and listed.err.endswith(
            "; skipped\n"
        )
        checked = run(sessions_dir, "check", "--lock-timeout", "0.1")
        assert checked.code == 1 and "busy.jsonl: not checked: lock not acquired within 0.1s" in checked.out
        for engine in ({}, {"JSONL_SESSION_PYTHON_GREP": "1"}):  # the system's grep -F, then Python
            found = run(sessions_dir, "grep", "hi", "--lock-timeout", "0.1", env=cli_env(**engine))
            assert (found.code, found.out) == (1, "free:1: user: hi\n")
            assert "busy.jsonl: lock not acquired within 0.1s" in found.err and found.err.endswith(
                "; skipped\n"
            )
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
        assert holder.stdout is not None
        holder.stdout.close()


def test_stats_skips_a_session_whose_usage_log_is_unreadable_and_counts_the_rest(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    for name in ("good", "bad_log"):
        JSONLSession(name, folder).add_items_sync([{"role": "user", "content": f"hello from {name}"}])
    (folder / "bad_log.jsonl.usage").write_bytes(b'{"total_tokens": 1}\nnot json\n{"total_tokens": 2}\n')
    before = (folder / "bad_log.jsonl.usage").read_bytes()
    result = run(folder, "stats")
    assert result.code == 1
    assert result.out.startswith("1 session: 1 item, 15 characters, 0 tool calls, ")
    assert "bad_log.jsonl.usage:2: not valid JSON" in result.err
    assert "skipped" in result.err
    assert (folder / "bad_log.jsonl.usage").read_bytes() == before
