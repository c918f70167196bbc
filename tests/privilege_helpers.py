"""Run a command as an unprivileged user, for the tests of what permissions change.

The suite runs as root here and in CI, and root reads every file: "one unreadable session"
or "a rewrite by someone who may not chown" only happen to other users. These helpers run
the real CLI (or a forked function) as ``nobody``, in the ``shared_tmp`` folder (conftest.py)
that ``nobody`` can reach: pytest's own temp folder is 0700 root.
"""

from __future__ import annotations

import os
import pickle
import pwd
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import Result, cli_env

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to chown files and switch users")


def nobody() -> tuple[int, int]:
    entry = pwd.getpwnam("nobody")
    return entry.pw_uid, entry.pw_gid


def run_as_nobody(directory: Path, *args: str) -> Result:
    """The CLI as ``nobody``; skipped if that user cannot import the package from here."""
    uid, gid = nobody()
    command = [sys.executable, "-m", "jsonl_session", *args, "--dir", str(directory)]
    completed = subprocess.run(
        command,
        capture_output=True,
        check=False,
        env=cli_env(),
        timeout=60,
        user=uid,
        group=gid,
        extra_groups=[],
        cwd=directory.parent,
    )
    if b"No module named" in completed.stderr:
        pytest.skip(f"nobody cannot import jsonl_session from {sys.executable}")
    return Result(completed.returncode, completed.stdout.decode(), completed.stderr.decode())


def call_as_nobody(function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)`` in a forked child running as ``nobody``; its result, or its exception re-raised."""
    uid, gid = nobody()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop privileges for good, run, report through the pipe
        try:
            os.close(read_fd)
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            try:
                outcome: tuple[bool, Any] = (True, function(*args))
            except BaseException as exc:  # noqa: BLE001  (sent to the parent, which re-raises it)
                outcome = (False, exc)
            with os.fdopen(write_fd, "wb") as pipe:
                pickle.dump(outcome, pipe)
        finally:
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    ok, value = pickle.loads(data)
    if not ok:
        raise value
    return value
