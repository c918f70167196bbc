"""The one locked helper: ``FileHandle.locked()``, its async and non-waiting twins, and what they refuse."""

from __future__ import annotations

import asyncio
import os
import pickle
import re
import resource
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from lock_helpers import another_process_can_lock

from jsonl_session import JSONLSession, JSONLSessionError, LockReentryError, LockTimeout
from jsonl_session.core.async_locking import locked_async
from jsonl_session.core.locking import BUSY, MISSING, FileHandle, check_lock_timeout

PACKAGE = Path(__file__).resolve().parents[2] / "jsonl_session"


def test_locked_yields_the_descriptor_or_missing_and_always_unlocks(sessions_dir: Path) -> None:
    path = sessions_dir / "a.jsonl"
    handle = FileHandle(path)
    with handle.locked(write=False, create=False) as fd:
        assert fd == MISSING
    with handle.locked(write=True, create=True) as fd:
        assert fd >= 0
        os.write(fd, b'{"a":1}\n')
        assert not another_process_can_lock(path)
    assert another_process_can_lock(path)
    with pytest.raises(KeyError), handle.locked(write=True, create=False):
        raise KeyError("the block failed")
    assert another_process_can_lock(path)
    handle.close()


def test_try_locked_reports_busy_instead_of_waiting(session: JSONLSession) -> None:
    session.add_items_sync([{"a": 1}])
    other = FileHandle(session.path)
    with other.locked(write=True, create=False), session._handle.try_locked(write=False, create=False) as fd:
        assert fd == BUSY
    with session._handle.try_locked(write=False, create=False) as fd:
        assert fd >= 0
    other.close()


def test_locked_async_is_the_twin_of_locked(session: JSONLSession) -> None:
    session.add_items_sync([{"a": 1}])

    async def main() -> None:
        async with locked_async(session._handle, write=True, create=False, timeout=1) as fd:
            assert fd >= 0
            assert not another_process_can_lock(session.path)
        assert another_process_can_lock(session.path)
        session.lock_timeout = 0.1
        async with locked_async(session._handle, write=True, create=False):
            with pytest.raises(LockTimeout):
                await JSONLSession(session.session_id, session.directory, lock_timeout=0.1).add_items([{}])

    asyncio.run(main())


def test_a_call_inside_rewrite_is_a_lock_reentry_error(session: JSONLSession) -> None:
    session.add_items_sync([{"a": 1}])
    with session.rewrite(), pytest.raises(LockReentryError) as raised:
        session.add_items_sync([{"b": 2}])
    assert isinstance(raised.value, RuntimeError) and isinstance(raised.value, JSONLSessionError)
    assert str(session.path) in str(raised.value)
    copy = pickle.loads(pickle.dumps(raised.value))
    assert type(copy) is LockReentryError and str(copy) == str(raised.value)
    assert session.get_items_sync() == [{"a": 1}]


def test_an_async_call_inside_rewrite_is_a_lock_reentry_error_at_once(session: JSONLSession) -> None:
    """Like its blocking twin: it must not wait the whole lock_timeout, then blame "another process"."""
    import time

    session.add_items_sync([{"role": "user", "content": "a"}])
    session.lock_timeout = 30
    calls: dict[str, Callable[[], Awaitable[object]]] = {
        "add_items": lambda: session.add_items([{"b": 2}]),
        "get_items": session.get_items,
        "pop_item": session.pop_item,
        "clear_session": session.clear_session,
        "replace_items": lambda: session.replace_items([]),
        "rewind": session.rewind,
        "record_usage": lambda: session.record_usage(object()),
        "get_session_usage": session.get_session_usage,
        "get_turn_usage": session.get_turn_usage,
        "save_run_state": lambda: session.save_run_state(_State()),
        "clear_run_state": session.clear_run_state,
    }

    async def main() -> None:
        with session.rewrite():
            for name, call in calls.items():
                started = time.monotonic()
                with pytest.raises(LockReentryError):
                    await call()
                assert time.monotonic() - started < 5, name

    asyncio.run(main())
    assert session.get_items_sync() == [{"role": "user", "content": "a"}]


def test_another_task_holding_the_lock_on_the_same_loop_is_waited_for_not_a_reentry(
    session: JSONLSession,
) -> None:
    async def main() -> None:
        async def hold() -> None:
            async with locked_async(session._handle, write=True, create=True):
                await asyncio.sleep(0.05)

        holder = asyncio.ensure_future(hold())
        await asyncio.sleep(0)  # the holder takes the lock first
        await session.add_items([{"a": 1}])
        await holder

    asyncio.run(main())
    assert session.get_items_sync() == [{"a": 1}]


class _State:
    def to_json(self) -> dict[str, object]:
        return {}

    def get_interruptions(self) -> list[object]:
        return []


def test_check_lock_timeout_lives_with_the_lock_and_is_still_importable_from_session() -> None:
    from jsonl_session.session import store as session

    assert session.check_lock_timeout is check_lock_timeout
    with pytest.raises(ValueError, match="lock_timeout must be"):
        check_lock_timeout(float("nan"))


def test_no_code_outside_locking_pairs_acquire_and_release_by_hand() -> None:
    """Every operation that locks goes through FileHandle.locked() (or its twins); only the lock blocks
    of locking and async_locking take and release by hand."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.name in ("locking.py", "async_locking.py"):
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"handle\.(try_acquire|acquire|release)\(", line):
                offenders.append(f"{path.name}:{number}: {line.strip()}")
    assert offenders == []


def test_a_failed_directory_fsync_after_creating_leaks_no_descriptor(sessions_dir: Path) -> None:
    """Issue 15, point 9: with the last descriptor slot taken by the new file, opening its
    folder for the fsync fails with EMFILE; the file's descriptor must not leak."""
    sessions_dir.mkdir()
    session = JSONLSession("new", sessions_dir)
    before = sorted(os.listdir("/proc/self/fd"))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    fillers: list[int] = []
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(map(int, before)) + 16, hard))
        with pytest.raises(OSError) as raised:
            while True:
                fillers.append(os.open(os.devnull, os.O_RDONLY))
        assert raised.value.errno == 24  # EMFILE
        os.close(fillers.pop())  # exactly one free slot: the session file takes it
        with pytest.raises(OSError) as raised:
            session.add_items_sync([{"a": 1}])
        assert raised.value.errno == 24
    finally:
        for fd in fillers:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    # Compared as sets, and only for new descriptors: a watcher thread of an earlier test may
    # still be closing its own (this failed once, after the watch tests, with no leak of ours).
    assert not set(os.listdir("/proc/self/fd")) - set(before)
    session.add_items_sync([{"a": 1}])  # and the next call works
    assert session.get_items_sync() == [{"a": 1}]


def test_above_core_a_file_is_opened_and_locked_only_through_the_transaction_helper() -> None:
    """One open/lock/close block (core.transaction.Transaction) for every locked operation above core.

    The two objects that keep a file open on purpose, a session and a watch's follower, hold
    a FileHandle; nothing else above ``core`` makes one.
    """
    keepers = {PACKAGE / "session" / "store.py", PACKAGE / "watch" / "follower.py"}
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if "core" in path.relative_to(PACKAGE).parts or path in keepers:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if "FileHandle(" in line:
                offenders.append(f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}")
    assert offenders == []


_STDIO_CLOSED = """
import os, sys
os.close(int(sys.argv[3]))  # a daemon started with it closed: a session may get that descriptor
from jsonl_session import JSONLSession
session = JSONLSession("s", sys.argv[1], lock_timeout=1)
session.add_items_sync([{"n": 1}])
session.add_items_sync([{"n": 2}])
with open(sys.argv[2], "w") as out:
    out.write(repr(session.get_items_sync()))
"""


@pytest.mark.parametrize("closed", [0, 1], ids=["stdin", "stdout"])
def test_a_process_with_a_standard_descriptor_closed_uses_its_sessions(tmp_path: Path, closed: int) -> None:
    """Catches: ``BUSY`` made 0 or 1, descriptors the file can get: the lock was taken and then
    reported busy, and the process timed out on its own lock."""
    result = tmp_path / "items.txt"
    done = subprocess.run(
        [sys.executable, "-c", _STDIO_CLOSED, str(tmp_path / "s"), str(result), str(closed)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert result.read_text() == "[{'n': 1}, {'n': 2}]"


_HOLD_BRIEFLY = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(0.1)  # another process's write, in progress when the session asks
fcntl.flock(fd, fcntl.LOCK_UN)
sys.stdin.read()
"""


def test_a_lock_freed_while_waiting_is_taken_under_a_short_timeout(session: JSONLSession) -> None:
    """Catches: the wait giving up while time remained (``remaining <= 1`` for ``<= 0``): with a
    timeout under a second it never retried, and a lock held for 0.1 s was a ``LockTimeout``."""
    session.add_items_sync([{"n": 1}])
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_BRIEFLY, str(session.path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        short = JSONLSession(session.session_id, session.path.parent, lock_timeout=0.9)
        short.add_items_sync([{"n": 2}])
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    assert session.get_items_sync() == [{"n": 1}, {"n": 2}]


def test_an_error_right_after_the_lock_is_taken_leaves_it_free(tmp_path: Path) -> None:
    """Catches (mutation testing): the error path unlocking only when the lock *was* recorded
    as held (``not`` added): a failure between ``flock`` and the bookkeeping stranded the lock
    with this process. Here the check that the path is still our file fails (a symlink loop
    now sits where the folder's link was)."""
    real, link = tmp_path / "real", tmp_path / "link"
    real.mkdir()
    link.symlink_to(real, target_is_directory=True)
    session = JSONLSession("s", link)
    session.add_items_sync([{"n": 1}])  # the descriptor stays open in the session
    link.unlink()
    link.symlink_to(link)
    with pytest.raises(OSError):
        session.get_items_sync()
    assert another_process_can_lock(real / "s.jsonl")


def test_close_inside_a_locked_block_closes_the_descriptor_when_the_block_ends(session: JSONLSession) -> None:
    """Catches (mutation testing): ``close()`` under the lock forgetting to close afterwards."""
    session.add_items_sync([{"n": 1}])
    handle = FileHandle(session.path, durable=False)
    with handle.locked(write=False, create=False) as fd:
        handle.close()
        os.fstat(fd)  # still open while the block runs
    assert handle.fd is None
    with pytest.raises(OSError):
        os.fstat(fd)


def test_a_create_in_a_worker_leaves_the_handle_free_for_the_loops_lock_attempts(
    sessions_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A durable first add creates its file (and fsyncs the folder) in a worker thread. The
    create must not hold the handle's state lock, which every lock attempt on the loop takes:
    a slow folder fsync then stalled the whole event loop for its length (found in review).
    The worker's real create is held at its start by an event, while the loop tries the lock."""
    import threading

    from jsonl_session.core import locking, safe_open

    inside, go_on = threading.Event(), threading.Event()
    real_open_file = safe_open.open_file

    def held_open_file(*args: object, **kwargs: object) -> object:
        if threading.current_thread() is not threading.main_thread():
            inside.set()
            assert go_on.wait(10)
        return real_open_file(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(locking, "open_file", held_open_file)
    session = JSONLSession("slow", sessions_dir)  # durable: its create runs in a worker

    async def main() -> None:
        add = asyncio.create_task(session.add_items([{"n": 1}]))
        assert await asyncio.to_thread(inside.wait, 30)
        # on the loop, while the worker is inside the create: answers at once, not after it
        assert await session.get_items() == []
        go_on.set()
        await add

    asyncio.run(main())
    assert session.get_items_sync() == [{"n": 1}]
