"""``check --fix`` repairs only under the exclusive lock: never while another process reads.

A plain ``check`` reads under the shared lock, alongside other readers. ``--fix`` moves a
torn tail and removes a killed writer's temporary files, so it must hold the session
exclusively: with another process holding a *shared* lock (a reader, a follower, a
``check`` in another terminal) it waits, times out and says so, and changes nothing. A
``--fix`` that took only the shared lock went unnoticed by the suite.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from cli_helpers import run, write_lines
from lock_helpers import shared_lock_elsewhere

from jsonl_session.tools.check import check_file

USER = '{"role":"user","content":"hi"}'
TORN = b'{"role":"assistant","con'


def torn_session(folder: Path) -> Path:
    return write_lines(folder / "t.jsonl", [USER, TORN.decode()], end=b"")


def test_check_reads_beside_a_shared_lock_but_fix_waits_for_it(sessions_dir: Path) -> None:
    """Catches: ``check_file`` taking the shared lock for ``fix=True`` (``write=False``)."""
    path = torn_session(sessions_dir)
    before = path.read_bytes()
    with shared_lock_elsewhere(path):
        checked = check_file(path, lock_timeout=0.2)  # readers share: checked at once
        assert [(problem.line, problem.fixed) for problem in checked] == [(2, False)]
        problems = check_file(path, fix=True, lock_timeout=0.3)
        assert [problem.reason for problem in problems] == [
            "not checked: lock not acquired within 0.3s (a writer or an edit)"
        ]
        assert path.read_bytes() == before
        assert not (sessions_dir / "t.jsonl.torn").exists()
    fixed = check_file(path, fix=True, lock_timeout=5)  # the reader is gone: now it repairs
    assert [(problem.line, problem.fixed) for problem in fixed] == [(2, True)]
    assert path.read_bytes() == (USER + "\n").encode()


def test_check_fix_command_says_it_did_not_repair_under_a_shared_lock(sessions_dir: Path) -> None:
    path = torn_session(sessions_dir)
    before = path.read_bytes()
    with shared_lock_elsewhere(path):
        result = run(sessions_dir, "check", "t", "--fix", "--lock-timeout", "0.3")
        assert result.code == 1
        assert "not checked: lock not acquired within 0.3s" in result.out
        assert path.read_bytes() == before
    assert run(sessions_dir, "check", "t", "--fix").code == 0
    assert path.read_bytes() == (USER + "\n").encode()


def test_the_shared_lock_holder_really_holds_it(sessions_dir: Path) -> None:
    """The helper above is a real reader: an exclusive ``flock`` from here is refused while it runs."""
    path = torn_session(sessions_dir)
    with shared_lock_elsewhere(path):
        fd = os.open(path, os.O_RDONLY)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                raise AssertionError("the exclusive lock was granted beside a shared one")
            except BlockingIOError:
                pass
        finally:
            os.close(fd)
