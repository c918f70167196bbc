"""The command line as a new user meets it: usage mistakes, Ctrl-C, waiting, and what it says.

Exit codes: 0 ok, 1 problems found or the operation failed, 2 a usage mistake (the command
line itself is wrong: bad pattern, impossible id, not a URL), 130 interrupted by Ctrl-C.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO

import pytest
from cli_helpers import cli_env, run

from jsonl_session import JSONLSession

SECRET = "sk-proj-" + "A1b2C3d4E5f6G7h8" * 3


def six(sessions_dir: Path, session_id: str = "six") -> JSONLSession:
    session = JSONLSession(session_id, sessions_dir)
    session.add_items_sync([{"role": "user", "content": f"message {n}"} for n in range(6)])
    return session


@pytest.mark.parametrize(
    "command",
    [
        ["grep", "("],
        ["show", "x" * 300],
        ["add", "y" * 300, "hello"],
        ["export", "six", "--to", "chats.db"],
        ["import", "chats.db", "--id", "six", "--as", "fresh"],
        ["show", "six", "--turns", "--html"],
        ["show", "six", "--turns", "--markdown", "-o", os.devnull],
        ["show", "six", "--json", "--html"],
    ],
    ids=[
        "bad-pattern",
        "long-id-show",
        "long-id-add",
        "export-no-scheme",
        "import-no-scheme",
        "turns-html",
        "turns-markdown",
        "json-html",
    ],
)
def test_usage_mistakes_exit_2_with_one_line(sessions_dir: Path, command: list[str]) -> None:
    six(sessions_dir)
    result = run(sessions_dir, *command)
    assert result.code == 2, result
    assert result.err.startswith("jsonl-session: error: ") and result.err.count("\n") == 1
    assert JSONLSession("six", sessions_dir).get_items_sync()[-1] == {"role": "user", "content": "message 5"}


def test_dir_and_lock_timeout_work_before_the_command_too(sessions_dir: Path) -> None:
    six(sessions_dir)
    before = run(None, "--dir", str(sessions_dir), "ls", "--json")
    assert before.code == 0 and [json.loads(line)["id"] for line in before.out.splitlines()] == ["six"]
    both = run(
        None, "--dir", "/nonexistent", "--lock-timeout", "3", "show", "six", "--dir", str(sessions_dir)
    )
    assert both.code == 0 and "message 5" in both.out  # the one after the command wins


def test_ls_on_a_missing_folder_says_so(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    result = run(missing, "ls")
    assert result.code == 2
    assert result.err == (
        f"jsonl-session: error: {missing}: no such folder "
        "(name the sessions folder with --dir or $JSONL_SESSION_DIR)\n"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run(empty, "ls").err == f"no sessions in {empty}\n"


def test_fork_at_more_than_there_is_says_how_many_it_copied(sessions_dir: Path) -> None:
    six(sessions_dir, "src")
    result = run(sessions_dir, "fork", "src", "dst", "--at", "99")
    assert result.code == 0
    assert result.err == "dst: forked 6 items from src (all it has; --at 99)\n"
    assert run(sessions_dir, "fork", "src", "two", "--at", "2").err == "two: forked 2 items from src\n"


def test_tail_follow_on_a_missing_session_says_it_waits_and_stops_at_the_timeout(sessions_dir: Path) -> None:
    result = run(sessions_dir, "tail", "later", "-f", "--timeout", "0.2")
    assert result.code == 1
    assert result.err == (
        f"later: no such session in {sessions_dir} yet; waiting for it (up to 0.2 s)\n"
        "jsonl-session: error: later: still no such session after 0.2 s\n"
    )
    six(sessions_dir)
    followed = run(sessions_dir, "tail", "six", "-n", "2", "-f", "--timeout", "0.2")
    assert followed.code == 0 and followed.out == "user: message 4\nuser: message 5\n"


def wait_for(pipe: IO[bytes] | None, ready: bytes) -> None:
    """Read ``pipe`` until ``ready`` has been written to it."""
    assert pipe is not None
    seen = b""
    while ready not in seen:
        chunk = os.read(pipe.fileno(), 4096)
        assert chunk, f"ended before writing {ready!r}: {seen!r}"
        seen += chunk


@pytest.mark.parametrize("command", ["tail-f", "clear-prompt"])
def test_ctrl_c_exits_130_without_a_traceback(sessions_dir: Path, command: str) -> None:
    session = six(sessions_dir)
    args = {
        "tail-f": ["tail", "six", "-n", "1", "-f"],
        "clear-prompt": ["clear", "six"],
    }[command]
    process = subprocess.Popen(
        [sys.executable, "-m", "jsonl_session", *args, "--dir", str(sessions_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
    )
    try:
        if command == "tail-f":
            wait_for(process.stdout, b"message 5\n")
            # A change that arrives proves the follow loop is running: Ctrl-C lands in its wait.
            session.add_items_sync([{"role": "user", "content": "message 6"}])
            wait_for(process.stdout, b"message 6\n")
        else:
            wait_for(process.stderr, b"[y/N] ")
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, err
    assert b"Traceback" not in err
    assert len(JSONLSession("six", sessions_dir).get_items_sync()) == (7 if command == "tail-f" else 6)


def test_check_secrets_prints_a_summary_line_like_check(sessions_dir: Path) -> None:
    six(sessions_dir)
    clean = run(sessions_dir, "check", "--secrets")
    assert (clean.code, clean.out, clean.err) == (0, "", "checked 1 file: 0 secrets\n")
    JSONLSession("leaky", sessions_dir).add_items_sync([{"role": "user", "content": f"key {SECRET}"}])
    found = run(sessions_dir, "check", "--secrets")
    assert found.code == 1
    assert found.err == "checked 2 files: 1 secret; `jsonl-session redact ID` replaces them\n"


def test_check_and_redact_accept_the_file_paths_the_hook_prints(sessions_dir: Path, tmp_path: Path) -> None:
    JSONLSession("leaky", sessions_dir).add_items_sync([{"role": "user", "content": f"key {SECRET}"}])
    hook = subprocess.run(
        [sys.executable, "-m", "jsonl_session", "check", "--secrets", "sessions/leaky.jsonl"],
        cwd=sessions_dir.parent,
        capture_output=True,
        text=True,
        env=cli_env(),
        check=False,
    )
    assert hook.returncode == 1 and hook.stdout.startswith("sessions/leaky.jsonl:1: ")
    printed = hook.stdout.split(":", 1)[0]  # what a person copies from the hook's message
    for command in (["redact", printed], ["check", printed], ["check", "--secrets", printed]):
        result = subprocess.run(
            [sys.executable, "-m", "jsonl_session", *command, "--dir", str(tmp_path / "elsewhere")],
            cwd=sessions_dir.parent,
            capture_output=True,
            text=True,
            env=cli_env(),
            check=False,
        )
        assert result.returncode == 0, result.stderr
    assert SECRET not in (sessions_dir / "leaky.jsonl").read_text()
    missing = run(sessions_dir, "redact", str(sessions_dir / "nothing.jsonl"))
    assert (
        missing.code == 1
        and missing.err == f"jsonl-session: error: {sessions_dir / 'nothing.jsonl'}: no such file\n"
    )
