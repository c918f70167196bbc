"""Cancelling async calls at any moment: whole calls only in the file, and the lock always comes back."""

from __future__ import annotations

import asyncio
import fcntl
import os
import random
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from lock_helpers import another_process_can_lock

from jsonl_session import JSONLSession, LockTimeout, UnsafePathError
from jsonl_session.core import worker_threads as workers
from jsonl_session.core.async_locking import locked_async


def assert_lock_is_free(session: JSONLSession) -> None:
    with session._handle.try_locked(write=True, create=False) as fd:
        assert fd >= 0, "the same object cannot lock"
    assert another_process_can_lock(session.path)


async def finish(task: asyncio.Task[Any]) -> bool:
    """Wait for a cancelled task; True if it completed anyway."""
    try:
        await task
    except asyncio.CancelledError:
        return False
    return True


def test_cancelling_at_random_points_leaves_whole_calls_and_a_free_lock(sessions_dir: Path) -> None:
    session = JSONLSession("cancel", sessions_dir)  # durable: each fdatasync runs in a worker
    rng = random.Random(11)
    completed: list[int] = []

    async def main() -> None:
        for i in range(300):
            writer = asyncio.create_task(session.add_items([{"i": i, "half": 0}, {"i": i, "half": 1}]))
            reader = asyncio.create_task(session.get_items(limit=4))
            for _ in range(rng.randrange(8)):
                await asyncio.sleep(0)
            if rng.random() < 0.3:  # long enough, now and then, to land inside the off-loop fsync
                await asyncio.sleep(rng.uniform(0, 0.002))
            writer.cancel()
            reader.cancel()
            if await finish(writer):
                completed.append(i)
            await finish(reader)

    asyncio.run(main())
    items = session.get_items_sync()
    pairs = [(item["i"], item["half"]) for item in items]
    written = [i for i, half in pairs if half == 0]
    assert pairs == [(i, half) for i in written for half in (0, 1)]  # whole calls, in order
    assert written == sorted(set(written))
    assert set(completed) <= set(written)
    assert 0 < len(written) < 300  # some were cancelled before writing, some were not
    assert_lock_is_free(session)


def test_cancelled_full_reads_pops_and_clears_release_the_lock(sessions_dir: Path) -> None:
    session = JSONLSession("big", sessions_dir)
    session.add_items_sync([{"n": n, "pad": "x" * 100} for n in range(2000)])  # > 64 KB: read off the loop
    rng = random.Random(5)

    async def main() -> None:
        for _ in range(60):
            calls: list[Callable[[], Coroutine[Any, Any, Any]]] = [session.get_items, session.pop_item]
            task = asyncio.create_task(rng.choice(calls)())
            for _ in range(rng.randrange(6)):
                await asyncio.sleep(0)
            task.cancel()
            await finish(task)
        task = asyncio.create_task(session.clear_session())
        await asyncio.sleep(0)
        task.cancel()
        await finish(task)

    asyncio.run(main())
    items = session.get_items_sync()
    assert items == [{"n": n, "pad": "x" * 100} for n in range(len(items))]
    assert_lock_is_free(session)


def test_a_caller_cancelled_during_the_off_loop_fsync_completes_and_unlocks(session: JSONLSession) -> None:
    session.add_items_sync([{"a": 1}])
    size_before = session.path.stat().st_size
    gate = threading.Event()

    async def main() -> None:
        for _ in range(workers.THREADS):  # every worker is busy: our fsync queues
            workers.submit(gate.wait, 60)
        task = asyncio.create_task(session.add_items([{"b": 2}]))
        while session.path.stat().st_size == size_before:  # written on the loop; fsync still to come
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not another_process_can_lock(session.path)  # the worker owes the fsync, and holds the lock
        gate.set()
        workers.wait_for_all()  # joins the workers: the fsync ran and it unlocked

    asyncio.run(main())
    assert session.get_items_sync() == [{"a": 1}, {"b": 2}]
    assert_lock_is_free(session)


@pytest.mark.parametrize("operation", ["add", "pop", "clear"])
def test_a_cancelled_write_that_raises_cancelled_error_changed_nothing(
    sessions_dir: Path, operation: str
) -> None:
    """Without fsync a write never reaches a worker, so CancelledError must mean "not done":
    a pop that removed its item and then raised would lose it, and an add would be retried twice.
    (A durable write may complete in its worker after the caller is cancelled: documented.)"""
    session = JSONLSession("fast", sessions_dir, durable=False)
    outcomes = set()

    async def main() -> None:
        for turns in range(4):
            session.replace_items_sync([{"n": 1}, {"n": 2}])
            before = session.path.read_bytes()
            calls = {"add": lambda: session.add_items([{"n": 3}]), "pop": session.pop_item}
            task = asyncio.create_task(calls.get(operation, session.clear_session)())
            for _ in range(turns):
                await asyncio.sleep(0)
            task.cancel()
            completed = await finish(task)
            outcomes.add(completed)
            if not completed:
                assert session.path.read_bytes() == before, turns

    asyncio.run(main())
    assert outcomes == {True, False}  # both were tried: cancelled in time, and too late to stop


def test_a_cancelled_first_add_without_fsync_leaves_no_file_and_no_namesakes_sidecar_gone(
    sessions_dir: Path,
) -> None:
    """Creating the file is a change too: a durable=False add to a new session creates it after
    its one yield, on the loop, so a cancel either stops it before anything exists or comes
    too late to stop the add. (Created in a worker thread, a cancelled add left an empty
    session behind, listed by ``ls`` and copied by ``export --all``, and had removed the
    sidecars a deleted namesake left.)"""
    outcomes = set()
    sessions_dir.mkdir(parents=True, exist_ok=True)

    async def main() -> None:
        for turns in range(4):
            session = JSONLSession(f"new{turns}", sessions_dir, durable=False)
            leftover = Path(f"{session.path}.run")
            leftover.write_text("{}\n")  # a deleted namesake's paused run: a create removes it
            task = asyncio.create_task(session.add_items([{"n": 1}]))
            for _ in range(turns):
                await asyncio.sleep(0)
            task.cancel()
            completed = await finish(task)
            workers.wait_for_all()
            outcomes.add(completed)
            if not completed:
                assert not session.path.exists(), turns
                assert leftover.exists(), turns
            else:
                assert session.get_items_sync() == [{"n": 1}]
            session.close()

    asyncio.run(main())
    assert outcomes == {True, False}


class Ticker:
    """Counts the turns another task gets: a call that never yields leaves the count unchanged."""

    def __init__(self) -> None:
        self.ticks = 0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            self.ticks += 1
            await asyncio.sleep(0)

    async def __aenter__(self) -> Ticker:  # noqa: PYI034
        self._task = asyncio.create_task(self._run())
        await asyncio.sleep(0)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._task is not None
        self._task.cancel()
        await finish(self._task)


def test_every_async_call_lets_other_tasks_run(session: JSONLSession) -> None:
    missing = JSONLSession("never-written", session.directory)
    fast = JSONLSession("not-durable", session.directory, durable=False)
    unsafe = JSONLSession("a-symlink", session.directory)
    unsafe_fast = JSONLSession("a-symlink", session.directory, durable=False)
    session.directory.mkdir(parents=True, exist_ok=True)
    unsafe.path.symlink_to("/nonexistent")

    async def main() -> None:
        calls: list[Callable[[], Coroutine[Any, Any, Any]]] = [
            lambda: session.get_items(),  # the file does not exist yet
            lambda: session.add_items([{"a": 1}]),
            lambda: session.add_items([]),
            lambda: session.get_items(limit=0),
            lambda: session.get_items(limit=1),
            session.pop_item,
            session.clear_session,
            # Durable writes yield while their worker works; with no file there is no worker.
            lambda: missing.pop_item(),
            lambda: missing.clear_session(),
            lambda: fast.add_items([{"a": 1}]),
            fast.pop_item,
            fast.clear_session,
            lambda: unsafe.get_items(),  # errors too: a loop that retries must not starve the others
            lambda: unsafe.get_items(limit=1),
            lambda: unsafe.add_items([{"a": 1}]),
            lambda: unsafe_fast.add_items([{"a": 1}]),
            unsafe.pop_item,
        ]
        async with Ticker() as ticker:
            for call in calls:
                before = ticker.ticks
                try:
                    await call()
                except UnsafePathError:
                    pass
                assert ticker.ticks > before, call

    asyncio.run(main())


class Interrupted(Exception):
    """Stands in for a signal handler's exception (a caught Ctrl-C) at an unlucky moment."""


def test_an_exception_inside_submit_after_queueing_never_unlocks_under_the_worker(
    session: JSONLSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    # submit() queues the work, then starts a thread (which waits): a signal handler raising
    # there would make the caller unlock while the worker still wrote.
    grow = workers._Pool._grow

    def grow_then_interrupted(pool: Any) -> None:
        grow(pool)
        raise Interrupted

    monkeypatch.setattr(workers._Pool, "_grow", grow_then_interrupted)
    session.add_items_sync([{"n": 1}])
    unlocked_while_working: list[bool] = []
    caller_gone = threading.Event()

    def work(fd: int) -> None:
        caller_gone.wait(30)  # the caller has taken its exception and left the block
        with session._handle.try_locked(write=True, create=False) as other:
            unlocked_while_working.append(other >= 0)

    async def main() -> None:
        lock = locked_async(session._handle, write=True, create=False)
        with pytest.raises(Interrupted):
            async with lock as fd:
                await lock.finish_in_thread(work, fd)

    asyncio.run(main())
    caller_gone.set()
    monkeypatch.undo()
    workers.wait_for_all()
    assert unlocked_while_working in ([], [False])  # not run at all, or run while still locked
    assert_lock_is_free(session)


def test_a_submit_racing_wait_for_all_is_not_refused(
    session: JSONLSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The race made deterministic: the pool is closed between being looked up and submit().
    # The durable add had written its line; refusing it then invited a retry that would
    # store the item twice.
    real = workers._current_pool
    raced: list[bool] = []

    def pool_then_waited_for() -> Any:
        pool = real()
        if not raced:  # once: the race is a moment, not a state
            raced.append(True)
            workers.wait_for_all()
        return pool

    session.add_items_sync([{"n": 0}])
    monkeypatch.setattr(workers, "_current_pool", pool_then_waited_for)
    asyncio.run(session.add_items([{"n": 1}]))
    assert raced
    assert session.get_items_sync() == [{"n": 0}, {"n": 1}]


def test_durable_writes_yield_even_when_the_lock_times_out_at_once(sessions_dir: Path) -> None:
    session = JSONLSession("busy", sessions_dir, lock_timeout=0)
    session.add_items_sync([{"n": 1}])
    other = os.open(session.path, os.O_RDONLY)
    fcntl.flock(other, fcntl.LOCK_EX)

    async def main() -> None:
        calls: list[Callable[[], Coroutine[Any, Any, Any]]] = [
            lambda: session.add_items([{"n": 2}]),
            session.pop_item,
            session.clear_session,
        ]
        async with Ticker() as ticker:
            for call in calls:
                before = ticker.ticks
                with pytest.raises(LockTimeout):
                    await call()
                assert ticker.ticks > before, call

    try:
        asyncio.run(main())
    finally:
        os.close(other)
    assert session.get_items_sync() == [{"n": 1}]


def test_a_worker_raising_stop_iteration_reaches_its_caller(session: JSONLSession) -> None:
    # A future refuses StopIteration as an exception: the caller would wait forever.
    session.add_items_sync([{"n": 1}])

    def work(fd: int) -> None:
        raise StopIteration

    async def main() -> None:
        lock = locked_async(session._handle, write=True, create=False)
        async with lock as fd:
            await asyncio.wait_for(lock.finish_in_thread(work, fd), 30)

    with pytest.raises(RuntimeError, match="StopIteration"):
        asyncio.run(main())
    assert_lock_is_free(session)


def test_work_handed_to_a_thread_needs_the_lock_held_once(session: JSONLSession) -> None:
    """``finish_in_thread`` hands the held lock to a worker that releases it: without the lock
    it would run the work unlocked, and a second hand-over would release it twice.

    Catches (mutation testing): the guard satisfied by one of its two conditions alone."""

    async def main() -> None:
        unheld = session.locked_async(write=True, create=True)  # never entered: holds nothing
        with pytest.raises(RuntimeError, match="needs the lock this block holds, once"):
            await unheld.finish_in_thread(list)
        block = session.locked_async(write=True, create=True)
        async with block:
            assert await block.finish_in_thread(list) == []
            with pytest.raises(RuntimeError, match="needs the lock this block holds, once"):
                await block.finish_in_thread(list)
        assert another_process_can_lock(session.path)

    asyncio.run(main())


def test_a_lock_block_lets_other_tasks_run_before_it_does_anything(sessions_dir: Path) -> None:
    """By default an async lock block yields on entering, before the lock is taken, so that a
    caller cancelled there knows nothing was done.

    Catches (mutation testing): the default made "yield on leaving", which ran the block first."""
    from jsonl_session.core.locking import FileHandle

    handle = FileHandle(sessions_dir / "s.jsonl", durable=False)  # no folder fsync to wait for
    sessions_dir.mkdir()
    done: list[str] = []

    async def block() -> None:
        async with locked_async(handle, write=True, create=True):
            done.append("ran")

    async def main() -> None:
        task = asyncio.create_task(block())
        await asyncio.sleep(0)  # the task's first step
        assert done == [] and not task.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert done == [] and not (sessions_dir / "s.jsonl").exists()  # cancelled before anything
        await block()
        assert done == ["ran"]

    asyncio.run(main())
    handle.close()
