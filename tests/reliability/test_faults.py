"""Faults: a write that fails part-way, a failing fsync, a lock that times out.

In every case the error reaches the caller, the session file is byte-for-byte what it was
before the call, and the next call works. Real kernel failures are used where they can be
had without privileges: ``RLIMIT_FSIZE`` gives a genuine short write followed by ``EFBIG``,
and a 64 KiB tmpfs mounted in a private user namespace (``unshare -Urm``) a genuine
``ENOSPC``. EIO and a failing fsync have no unprivileged kernel route, so those tests patch
``os.write`` / the fsync function inside a child process (never in the test process).
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import json
import multiprocessing
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pytest
from process_helpers import answer_from_fork

from jsonl_session import JSONLSession, LockTimeout

_ctx = multiprocessing.get_context("fork")
_BATCH = [{"role": "user", "content": "x" * 3000}, {"role": "assistant", "content": "y" * 3000}]


def _child_main(conn: Connection, function: Callable[..., Any], args: tuple[Any, ...]) -> None:
    try:
        conn.send(("ok", function(*args)))
    except BaseException as exc:  # noqa: BLE001  (report everything: the parent asserts on it)
        conn.send(("raised", f"{type(exc).__name__}: {exc}", getattr(exc, "errno", None)))


def in_child(function: Callable[..., Any], *args: Any) -> tuple[Any, ...]:
    """Run ``function(*args)`` in a forked process (limits and patches stay there)."""
    result: tuple[Any, ...] = answer_from_fork(_child_main, function, args)
    return result


def _seeded(directory: Path, durable: bool = True) -> tuple[JSONLSession, bytes]:
    session = JSONLSession("faults", directory, durable=durable)
    session.add_items_sync([{"n": 1}, {"n": 2}])
    return session, session.path.read_bytes()


# -- a real short write: RLIMIT_FSIZE ----------------------------------------------------------


def _append_under_fsize_limit(directory: str, limit: int, durable: bool) -> dict[str, Any]:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # get EFBIG instead of being killed
    session = JSONLSession("faults", directory, durable=durable)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
    outcome: dict[str, Any] = {}
    try:
        session.add_items_sync(_BATCH)
        outcome["first"] = "returned"
    except OSError as exc:
        outcome["first"] = errno.errorcode.get(exc.errno or 0, str(exc))
    outcome["size_after_failure"] = os.path.getsize(session.path)
    resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    session.add_items_sync([{"n": 3}])  # the same object, the same descriptor: works again
    outcome["items"] = len(session.get_items_sync())
    return outcome


@pytest.mark.timeout(30)
@pytest.mark.parametrize("durable", [True, False], ids=["durable", "fast"])
def test_a_short_write_at_the_file_size_limit_is_taken_back(tmp_path: Path, durable: bool) -> None:
    session, before = _seeded(tmp_path, durable)
    limit = len(before) + 4000  # the kernel writes 4000 of the ~6000 bytes, then EFBIG
    status, outcome = in_child(_append_under_fsize_limit, str(tmp_path), limit, durable)
    assert status == "ok", outcome
    assert outcome["first"] == "EFBIG"
    assert outcome["size_after_failure"] == len(before)
    assert outcome["items"] == 3
    assert session.get_items_sync() == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert session.path.read_bytes() == before + b'{"n":3}\n'


def _repair_under_fsize_limit(directory: str) -> tuple[str, int]:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    session = JSONLSession("faults", directory)
    resource.setrlimit(resource.RLIMIT_FSIZE, (8, resource.RLIM_INFINITY))  # too small for the sidecar
    try:
        session.add_items_sync([{"n": 3}])
        return "returned", 0
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, "?"), os.path.getsize(session.sidecar_path)


@pytest.mark.timeout(30)
def test_a_failed_sidecar_write_leaves_the_torn_tail_in_place(tmp_path: Path) -> None:
    """Moving a torn tail saves it first: if saving fails, nothing is cut off."""
    session, _ = _seeded(tmp_path)
    with session.path.open("ab") as file:
        file.write(b'{"n":3,"content":"torn by a crash')
    before = session.path.read_bytes()
    status, outcome = in_child(_repair_under_fsize_limit, str(tmp_path))
    assert (status, outcome) == ("ok", ("EFBIG", 0))
    assert session.path.read_bytes() == before
    with pytest.warns(UserWarning):
        session.add_items_sync([{"n": 3}])
    assert session.sidecar_path.read_bytes() == b'{"n":3,"content":"torn by a crash\n'
    assert session.get_items_sync() == [{"n": 1}, {"n": 2}, {"n": 3}]


# -- a real full disk: a tiny tmpfs in a private namespace ------------------------------------

_ENOSPC_SCRIPT = textwrap.dedent(
    """
    import errno, json, os, subprocess, sys
    from jsonl_session import JSONLSession
    mount = sys.argv[1]
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mount], check=True)
    session = JSONLSession("faults", mount)
    session.add_items_sync([{"n": 1}, {"n": 2}])
    before = open(session.path, "rb").read()
    filler = os.path.join(mount, "filler")
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"f" * 4096)
    except OSError:
        os.close(fd)
    os.truncate(filler, os.path.getsize(filler) - 4096)  # leave one page free
    free = os.statvfs(mount).f_bavail * os.statvfs(mount).f_frsize
    result = {"part_fits": 0 < free < 20000}  # so the write below fails part-way, not at once
    try:
        session.add_items_sync([{"content": "z" * 20000}])
        result["first"] = "returned"
    except OSError as exc:
        result["first"] = errno.errorcode.get(exc.errno, str(exc))
    result["unchanged"] = open(session.path, "rb").read() == before
    os.unlink(filler)
    session.add_items_sync([{"n": 3}])
    result["items"] = session.get_items_sync()
    print(json.dumps(result))
    """
)


@pytest.mark.timeout(60)
def test_a_full_disk_mid_write_is_taken_back(tmp_path: Path) -> None:
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("needs util-linux unshare for a private tmpfs (not installed)")
    mount = tmp_path / "tiny"
    mount.mkdir()
    command = [
        unshare,
        "--user",
        "--map-root-user",
        "--mount",
        sys.executable,
        "-c",
        _ENOSPC_SCRIPT,
        str(mount),
    ]
    run = subprocess.run(command, capture_output=True, text=True, timeout=50, check=False)
    refused = re.search(r"(unshare|mount)\b.*(not permitted|permission denied)", run.stderr, re.IGNORECASE)
    if run.returncode != 0 and refused:
        pytest.skip(f"user namespaces or tmpfs mounts are not permitted here: {refused.group(0)}")
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result == {
        "part_fits": True,
        "first": "ENOSPC",
        "unchanged": True,
        "items": [{"n": 1}, {"n": 2}, {"n": 3}],
    }


# -- EIO and failing fsync: patched inside a child --------------------------------------------


def _with_eio_after_half_a_write(directory: str) -> dict[str, Any]:
    """No unprivileged way to make a disk return EIO: patch os.write in this child only."""
    session = JSONLSession("faults", directory)
    real_write = os.write
    calls = []

    def failing_write(fd: int, data: Any) -> int:
        calls.append(len(data))
        if len(calls) == 1:
            return real_write(fd, bytes(data[: len(data) // 2]))  # a short write...
        raise OSError(errno.EIO, os.strerror(errno.EIO))  # ...then the device fails

    os.write = failing_write
    try:
        session.add_items_sync(_BATCH)
        first = "returned"
    except OSError as exc:
        first = errno.errorcode[exc.errno or 0]
    finally:
        os.write = real_write
    size = os.path.getsize(session.path)
    session.add_items_sync([{"n": 3}])
    return {"first": first, "size": size, "calls": len(calls)}


@pytest.mark.timeout(30)
def test_an_io_error_after_a_short_write_is_taken_back(tmp_path: Path) -> None:
    session, before = _seeded(tmp_path)
    status, outcome = in_child(_with_eio_after_half_a_write, str(tmp_path))
    assert status == "ok", outcome
    assert outcome == {"first": "EIO", "size": len(before), "calls": 2}
    assert session.path.read_bytes() == before + b'{"n":3}\n'


_OPERATIONS: dict[str, Callable[[JSONLSession], object]] = {
    "add": lambda session: session.add_items_sync(_BATCH),
    "add-async": lambda session: asyncio.run(session.add_items(_BATCH)),
    "pop": lambda session: session.pop_item_sync(),
    "clear": lambda session: session.clear_session_sync(),
    "clear-async": lambda session: asyncio.run(session.clear_session()),
    "replace": lambda session: session.replace_items_sync([{"replaced": True}]),
}


def _with_failing(directory: str, target: str, operation: str) -> dict[str, Any]:
    """No unprivileged way to make fsync fail (dm-error needs root): patch ``target``
    (``module.function``) in this child to raise EIO, run ``operation``, then write once more."""
    import importlib

    module_name, name = target.rsplit(".", 1)
    module = importlib.import_module(module_name)
    session = JSONLSession("faults", directory)  # a file the parent created, not this process
    real = getattr(module, name)

    def failing(*args: object) -> None:
        raise OSError(errno.EIO, "fsync failed")

    setattr(module, name, failing)
    try:
        _OPERATIONS[operation](session)
        first = "returned"
    except OSError as exc:
        first = errno.errorcode[exc.errno or 0]
    finally:
        setattr(module, name, real)
    size = os.path.getsize(session.path)
    session.add_items_sync([{"n": 3}])  # works again (a failed folder fsync is tried again)
    return {"first": first, "size": size}


@pytest.mark.timeout(30)
@pytest.mark.parametrize("operation", ["add", "pop", "clear", "replace"])
def test_a_failing_fsync_surfaces_and_leaves_the_file_as_it_was(tmp_path: Path, operation: str) -> None:
    session, before = _seeded(tmp_path)
    status, outcome = in_child(
        _with_failing, str(tmp_path), "jsonl_session.core.storage._fdatasync", operation
    )
    assert status == "ok", outcome
    assert outcome == {"first": "EIO", "size": len(before)}
    assert session.path.read_bytes() == before + b'{"n":3}\n'
    assert not list(tmp_path.glob(".*.tmp")), "a failed replace left its temporary file"


@pytest.mark.timeout(30)
@pytest.mark.parametrize("operation", ["add", "add-async", "pop", "clear-async"])
def test_a_failing_folder_fsync_surfaces_before_anything_changes(tmp_path: Path, operation: str) -> None:
    """The first durable write to a file this process did not create fsyncs its folder: make that fail."""
    session, before = _seeded(tmp_path)
    status, outcome = in_child(
        _with_failing, str(tmp_path), "jsonl_session.core.locking.fsync_directory", operation
    )
    assert status == "ok", outcome
    assert outcome == {"first": "EIO", "size": len(before)}
    assert session.path.read_bytes() == before + b'{"n":3}\n'


# -- lock timeouts --------------------------------------------------------------------------------


def _hold_lock(directory: str, how: str, conn: Connection) -> None:
    session = JSONLSession("faults", directory)
    if how == "rewrite":
        with session.rewrite():
            conn.send("held")
            conn.recv()
    else:  # a foreign process (e.g. flock(1)) locking the file itself
        fd = os.open(session.path, os.O_RDONLY)
        fcntl.flock(fd, fcntl.LOCK_EX)
        conn.send("held")
        conn.recv()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("how", ["rewrite", "flock"])
def test_a_lock_held_elsewhere_times_out_cleanly_and_then_works(tmp_path: Path, how: str) -> None:
    _, before = _seeded(tmp_path)
    parent, child = _ctx.Pipe()
    holder = _ctx.Process(target=_hold_lock, args=(str(tmp_path), how, child))
    holder.start()
    try:
        assert parent.recv() == "held"
        waiting = JSONLSession("faults", tmp_path, lock_timeout=0.2)
        for call in (
            lambda: waiting.add_items_sync([{"n": 3}]),
            waiting.pop_item_sync,
            waiting.clear_session_sync,
            waiting.get_items_sync,
        ):
            with pytest.raises(LockTimeout) as caught:
                call()
            assert caught.value.path == waiting.path and isinstance(caught.value, TimeoutError)
        assert waiting.path.read_bytes() == before

        async def wait_while_ticking() -> int:
            """The loop keeps running while the lock is awaited: count ticks during the wait."""
            task = asyncio.ensure_future(waiting.add_items([{"n": 3}]))
            ticks = 0
            while not task.done():
                await asyncio.sleep(0.001)
                ticks += not task.done()
            with pytest.raises(LockTimeout):
                task.result()
            return ticks

        assert asyncio.run(wait_while_ticking()) >= 3
        assert waiting.path.read_bytes() == before
        parent.send("release")
        holder.join(timeout=10)
        waiting.add_items_sync([{"n": 3}])
        assert waiting.get_items_sync() == [{"n": 1}, {"n": 2}, {"n": 3}]
    finally:
        if holder.is_alive():
            holder.kill()
            holder.join()
