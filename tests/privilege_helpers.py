"""Run a command as an unprivileged user, for the tests of what permissions change.

The suite runs as root here and in CI, and root reads every file: "one unreadable session"
or "a rewrite by someone who may not chown" only happen to other users. These helpers run
the CLI or a function as ``nobody`` in a forked child, in the ``shared_tmp`` folder
(conftest.py) that ``nobody`` can reach: pytest's own temp folder is 0700 root.

The child imports what the parent has not yet (the CLI's modules, orjson), so ``nobody``
must be able to read the source tree: from a clone in a private folder it cannot, and the
tests failed with ``ModuleNotFoundError``. They skip instead, saying why.
"""

from __future__ import annotations

import functools
import os
import pickle
import pwd
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import Result

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to chown files and switch users")


def nobody() -> tuple[int, int]:
    entry = pwd.getpwnam("nobody")
    return entry.pw_uid, entry.pw_gid


def source_folders() -> list[Path]:
    """The folders a child running as ``nobody`` imports from: the package and its compiled dependency."""
    import orjson

    import jsonl_session

    return [Path(jsonl_session.__file__).parent, Path(orjson.__file__).parent]


@functools.cache
def nobody_reads_the_source() -> str | None:
    """None if ``nobody`` can list and read every folder of :func:`source_folders`; else why not."""
    return _call_as(*nobody(), _unreadable, source_folders())  # type: ignore[no-any-return]


def _unreadable(folders: list[Path]) -> str | None:
    for folder in folders:
        try:
            names = sorted(name for name in os.listdir(folder) if name.endswith((".py", ".so")))
            if names:
                with open(folder / names[0], "rb") as file:
                    file.read(1)
        except OSError as exc:
            return f"{folder}: {exc.strerror}"
    return None


def skip_unless_nobody_reads_the_source() -> None:
    """Skip the calling test, with the reason, when ``nobody`` cannot import this checkout."""
    problem = nobody_reads_the_source()
    if problem is not None:
        pytest.skip(
            f"nobody cannot read the source tree ({problem}): clone it into a folder other users "
            "can read to run the tests that switch users"
        )


# Standard modules the CLI imports only when a command needs them. The interpreter here lives
# under /root, which ``nobody`` cannot read: the forked child can import only what the parent
# already has, so whether a test passed depended on what earlier tests had imported.
_LAZY_STANDARD_MODULES = (
    "argparse",
    "datetime",
    "hashlib",
    "json",
    "pathlib",
    "shlex",
    "signal",
    "sqlite3",
    "stat",
    "tarfile",
    "tempfile",
    "traceback",
    "urllib.parse",
    "zlib",
)


def _import_the_standard_library_the_cli_uses() -> None:
    import importlib

    for name in _LAZY_STANDARD_MODULES:
        importlib.import_module(name)


def run_as_nobody(directory: Path, *args: str) -> Result:
    """The CLI's ``main`` as ``nobody``, in a forked child with its own stdout and stderr.

    Forked rather than exec'd: the interpreter may live where ``nobody`` cannot read it
    (here, under /root). Arguments, output and exit code are exactly the command's.
    """
    skip_unless_nobody_reads_the_source()
    _import_the_standard_library_the_cli_uses()
    uid, gid = nobody()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:
            code = 70
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115  (flushed before _exit)
                sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
                os.chdir(directory.parent)
                _drop_to(uid, gid)
                from jsonl_session.cli.commands import main

                code = main([*args, "--dir", str(directory)])
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        out.seek(0)
        err.seek(0)
        return Result(os.waitstatus_to_exitcode(status), out.read().decode(), err.read().decode())


def _drop_to(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)


def call_as_nobody(function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)`` in a forked child running as ``nobody``; its result, or its exception re-raised."""
    skip_unless_nobody_reads_the_source()
    return _call_as(*nobody(), function, *args)


def _call_as(uid: int, gid: int, function: Callable[..., Any], *args: Any) -> Any:
    read_fd, write_fd = os.pipe()
    _import_the_standard_library_the_cli_uses()
    pid = os.fork()
    if pid == 0:  # the child: drop privileges for good, run, report through the pipe
        try:
            os.close(read_fd)
            _drop_to(uid, gid)
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
