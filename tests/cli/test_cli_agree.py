"""Commands that agree with each other and say what to do: the same situation, the same answer.

``ls`` with a filter that matches nothing exits 1 as ``grep`` does; ``clear``/``rm`` with no
one to answer name ``--yes``; a lock timeout names the option that raises it; ``--version``.
"""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path

from cli_helpers import run

from jsonl_session import JSONLSession
from jsonl_session.core.transaction import Transaction


def chat(sessions_dir: Path, session_id: str = "chat") -> JSONLSession:
    session = JSONLSession(session_id, sessions_dir)
    session.add_items_sync([{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}])
    return session


def test_version_prints_the_installed_version(tmp_path: Path) -> None:
    result = run(None, "--version")
    assert (result.code, result.out) == (0, f"jsonl-session {version('jsonl-session')}\n"), result


def test_ls_with_a_filter_that_matches_nothing_exits_1_like_grep(sessions_dir: Path) -> None:
    chat(sessions_dir)
    for argv in (["ls", "--tag", "nope"], ["ls", "--user", "nobody"], ["ls", "--tag", "nope", "--json"]):
        result = run(sessions_dir, *argv)
        assert (result.code, result.out) == (1, ""), (argv, result)
    assert run(sessions_dir, "grep", "nope").code == 1
    empty = sessions_dir.parent / "empty"
    empty.mkdir()
    assert run(empty, "ls").code == 0  # an empty folder is no failed search


def test_clear_and_rm_with_nobody_to_answer_say_yes_is_needed(sessions_dir: Path) -> None:
    session = chat(sessions_dir)
    for command, verb in (("clear", "cleared"), ("rm", "deleted")):
        result = run(sessions_dir, command, "chat")  # stdin at its end: no terminal, no answer
        assert result.code == 2, result
        assert result.err.endswith(
            f"jsonl-session: error: chat: not {verb}: no answer on stdin; add --yes to {command} "
            "without a question\n"
        ), result
        assert len(session.get_items_sync()) == 2
    declined = run(sessions_dir, "clear", "chat", input="n\n")
    assert declined.code == 1 and declined.err.endswith("jsonl-session: error: chat: not cleared\n")


def test_a_lock_timeout_names_the_option_that_raises_it(sessions_dir: Path) -> None:
    session = chat(sessions_dir)
    with Transaction(session.path, write=True, timeout=5):
        result = run(sessions_dir, "add", "chat", "more", "--lock-timeout", "0.1")
    assert result.code == 1
    assert result.err == (
        f"jsonl-session: error: {session.path}: lock not acquired within 0.1s; another process is "
        "writing or editing this session (raise --lock-timeout, or find the process holding it)\n"
    )


def test_a_grep_snippet_that_fits_is_not_cut(sessions_dir: Path) -> None:
    text = "a" * 60 + " the refund was approved " + "b" * 10  # 95 characters: it fits
    JSONLSession("s", sessions_dir).add_items_sync([{"role": "user", "content": text}])
    result = run(sessions_dir, "grep", "refund")
    assert result.out == f"s:1: user: {text}\n", result
    longer = "c" * 300 + " refund " + "d" * 300
    JSONLSession("t", sessions_dir).add_items_sync([{"role": "user", "content": longer}])
    cut = run(sessions_dir, "grep", "refund", "t").out
    assert cut.startswith("t:1: user: …") and cut.rstrip("\n").endswith("…") and "refund" in cut


def test_show_turns_names_its_columns_and_shows_when_each_turn_started(sessions_dir: Path) -> None:
    session = chat(sessions_dir)
    session.add_items_sync([{"role": "user", "content": "again"}, {"role": "assistant", "content": "ok"}])
    started = [when for _, when in session.get_items_with_times_sync()]
    assert started[0] is not None and started[2] is not None
    lines = run(sessions_dir, "show", "chat", "--turns").out.splitlines()
    assert lines[0].split() == ["TURN", "ITEMS", "WHEN", "(UTC)", "TOKENS", "BYTES", "CONTEXT"] + [
        "LARGEST",
        "TOOL",
        "OUTPUT",
        "QUESTION",
    ]
    assert lines[1].startswith(f"   1  items 1-2       {started[0]:%Y-%m-%d %H:%M:%S}  "), lines
    assert lines[2].startswith(f"   2  items 3-4       {started[2]:%Y-%m-%d %H:%M:%S}  "), lines
    assert lines[0].index("QUESTION") == lines[1].index("hello") == lines[2].index("again")
    records = [
        json.loads(line) for line in run(sessions_dir, "show", "chat", "--turns", "--json").out.splitlines()
    ]
    assert [record["started"] for record in records] == [
        f"{started[0]:%Y-%m-%dT%H:%M:%S}Z",
        f"{started[2]:%Y-%m-%dT%H:%M:%S}Z",
    ]


def test_importing_from_a_sqlite_file_that_does_not_exist_creates_none(
    sessions_dir: Path, tmp_path: Path
) -> None:
    sessions_dir.mkdir()
    database = tmp_path / "nope.db"
    result = run(sessions_dir, "import", f"sqlite:///{database}", "--id", "x")
    assert result.code == 1, result
    assert result.err == f"jsonl-session: error: sqlite:///{database}: no such database file\n"
    every = run(sessions_dir, "import", f"sqlite:///{database}", "--all")
    assert (every.code, every.err) == (1, result.err), every
    assert sorted(tmp_path.iterdir()) == [sessions_dir] and list(sessions_dir.iterdir()) == []
