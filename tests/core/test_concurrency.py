"""Many writers, readers, threads and event loops on one session, with real processes."""

from __future__ import annotations

import asyncio
import fcntl
import multiprocessing as mp
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from jsonl_session import JSONLSession, LockTimeout

CTX = mp.get_context("spawn")  # no inherited descriptors or locks: like separate programs


def _append_many(directory: str, writer: int, count: int, start: Any) -> None:
    session = JSONLSession("shared", directory, durable=False)
    start.wait(30)
    for i in range(count):
        session.add_items_sync([{"writer": writer, "i": i, "pad": "x" * (i % 50)}])


def _append_batches_async(directory: str, writer: int, count: int, start: Any) -> None:
    async def main() -> None:
        session = JSONLSession("shared", directory, durable=False)
        for i in range(count):
            await session.add_items(
                [{"writer": writer, "i": i, "half": 0}, {"writer": writer, "i": i, "half": 1}]
            )

    start.wait(30)
    asyncio.run(main())


def _append_then_pop_async(directory: str, writer: int, count: int, start: Any) -> None:
    """One item per call (each call one lock block, ``FileHandle.try_append``); every third call
    is followed by a pop, which takes whichever writer's item is newest."""

    async def main() -> None:
        session = JSONLSession("shared", directory, durable=False)
        for i in range(count):
            await session.add_items([{"writer": writer, "i": i}])
            if i % 3 == 2:
                await session.pop_item()

    start.wait(30)
    asyncio.run(main())


def run_processes(targets: list[tuple[Any, tuple[Any, ...]]]) -> None:
    start = CTX.Event()
    processes = [CTX.Process(target=t, args=(*args, start)) for t, args in targets]
    try:
        for p in processes:
            p.start()
        start.set()
        for p in processes:
            p.join(120)
            assert p.exitcode == 0, f"writer exited with {p.exitcode}"
    finally:
        for p in processes:
            if p.is_alive():
                p.kill()
                p.join()


def test_four_processes_append_every_item_exactly_once(sessions_dir: Path) -> None:
    writers, count = 4, 250
    run_processes([(_append_many, (str(sessions_dir), w, count)) for w in range(writers)])
    session = JSONLSession("shared", sessions_dir)
    items = session.get_items_sync()
    assert len(items) == writers * count
    for w in range(writers):
        mine = [item["i"] for item in items if item["writer"] == w]
        assert mine == list(range(count)), "each writer's items are present once, in its order"
    for line in session.path.read_bytes().split(b"\n")[:-1]:
        assert line.startswith(b"{") and line.endswith(b"}")


@pytest.mark.slow
def test_one_add_items_call_is_never_split_by_another_writer(sessions_dir: Path) -> None:
    run_processes([(_append_batches_async, (str(sessions_dir), w, 150)) for w in range(4)])
    items = JSONLSession("shared", sessions_dir).get_items_sync()
    assert len(items) == 4 * 150 * 2
    for first, second in zip(items[::2], items[1::2]):
        assert (first["writer"], first["i"], first["half"]) == (second["writer"], second["i"], 0)
        assert second["half"] == 1


def test_async_appends_and_pops_from_several_processes_keep_every_time(sessions_dir: Path) -> None:
    writers, count = 3, 300
    run_processes([(_append_then_pop_async, (str(sessions_dir), w, count)) for w in range(writers)])
    session = JSONLSession("shared", sessions_dir)
    items = session.get_items_with_times_sync()
    assert len(items) == writers * (count - count // 3)
    for w in range(writers):
        mine = [item["i"] for item, _ in items if item["writer"] == w]
        assert mine == sorted(set(mine)), "each writer's items are present once, in its order"
    assert [item for item, when in items if when is None] == []  # every record found its line
    assert b"\x00" not in session.path.with_name("shared.jsonl.times").read_bytes()


def _pop_many(directory: str, count: int, start: Any, popped: Any) -> None:
    session = JSONLSession("shared", directory, durable=False)
    start.wait(30)
    got = 0
    while got < count:
        if session.pop_item_sync() is not None:
            got += 1
    popped.put(got)


def test_pop_racing_appends_from_another_process(sessions_dir: Path) -> None:
    directory = str(sessions_dir)
    JSONLSession("shared", directory).add_items_sync([{"seed": i} for i in range(100)])
    start = CTX.Event()
    popped = CTX.Queue()
    writer = CTX.Process(target=_append_many, args=(directory, 0, 300, start))
    popper = CTX.Process(target=_pop_many, args=(directory, 200, start, popped))
    try:
        writer.start()
        popper.start()
        start.set()
        writer.join(120)
        popper.join(120)
        assert writer.exitcode == 0 and popper.exitcode == 0
        assert popped.get(timeout=5) == 200
    finally:
        for p in (writer, popper):
            if p.is_alive():
                p.kill()
                p.join()
    session = JSONLSession("shared", directory)
    items = session.get_items_sync()
    assert len(items) == 100 + 300 - 200
    raw = session.path.read_bytes()
    assert raw.endswith(b"\n") and b"\n\n" not in raw


def test_threads_with_their_own_event_loops_share_one_session(session: JSONLSession) -> None:
    """The SDK's Runner.run_sync runs its own loop; one session object serves them all."""

    def worker(n: int) -> None:
        async def main() -> None:
            for i in range(100):
                await session.add_items([{"thread": n, "i": i}])
                await session.get_items(3)

        asyncio.run(main())

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    items = session.get_items_sync()
    assert len(items) == 400
    for n in range(4):
        assert [item["i"] for item in items if item["thread"] == n] == list(range(100))


def _hold_lock(path: str, locked: Any, release: Any) -> None:
    fd = os.open(path, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    locked.set()
    release.wait(60)
    os.close(fd)


class LockHolder:
    """Another process holding the session's lock until told to let go."""

    def __init__(self, path: Path) -> None:
        self.locked, self.release = CTX.Event(), CTX.Event()
        self.process = CTX.Process(target=_hold_lock, args=(str(path), self.locked, self.release))

    def __enter__(self) -> LockHolder:  # noqa: PYI034
        self.process.start()
        assert self.locked.wait(30)
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.process.join(30)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()


def test_lock_wait_times_out_with_a_clear_error(session: JSONLSession) -> None:
    session.add_items_sync([{"a": 1}])
    session.lock_timeout = 0.2
    with LockHolder(session.path):
        for call in (
            session.get_items_sync,
            session.pop_item_sync,
            lambda: session.add_items_sync([{"b": 2}]),
        ):
            with pytest.raises(LockTimeout, match="lock not acquired within 0.2s") as caught:
                call()
            assert isinstance(caught.value, TimeoutError)
            assert caught.value.path == session.path
    assert session.get_items_sync() == [{"a": 1}]


def test_async_wait_for_another_process_does_not_block_the_loop(session: JSONLSession) -> None:
    session.add_items_sync([{"a": 1}])
    with LockHolder(session.path) as holder:

        async def main() -> int:
            ticks = 0
            stop = asyncio.Event()

            async def ticker() -> None:
                nonlocal ticks
                while not stop.is_set():
                    ticks += 1
                    await asyncio.sleep(0)

            ticking = asyncio.create_task(ticker())
            writing = asyncio.create_task(session.add_items([{"b": 2}]))
            while ticks < 50:  # the loop keeps running while add_items waits for the lock
                await asyncio.sleep(0)
            assert not writing.done()
            holder.release.set()
            await asyncio.wait_for(writing, 30)
            stop.set()
            await ticking
            return ticks

        assert asyncio.run(main()) >= 50
    assert session.get_items_sync() == [{"a": 1}, {"b": 2}]


def test_async_lock_timeout(session: JSONLSession) -> None:
    session.add_items_sync([{"a": 1}])
    session.lock_timeout = 0.1
    with LockHolder(session.path), pytest.raises(LockTimeout):
        asyncio.run(session.add_items([{"b": 2}]))
    assert session.get_items_sync() == [{"a": 1}]


def test_cancelled_while_waiting_writes_nothing_and_started_write_completes(session: JSONLSession) -> None:
    session.add_items_sync([{"a": 1}])
    with LockHolder(session.path):

        async def cancel_while_waiting() -> None:
            task = asyncio.create_task(session.add_items([{"never": 1}]))
            for _ in range(20):
                await asyncio.sleep(0)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(cancel_while_waiting())
    assert session.get_items_sync() == [{"a": 1}]

    async def cancel_after_start() -> None:
        # Cancelled once the write is under way (the item is in the file, its fdatasync
        # runs in a worker thread): the call still completes and unlocks.
        task = asyncio.create_task(session.add_items([{"b": 2}, {"c": 3}]))
        while session.path.stat().st_size == size_before:
            await asyncio.sleep(0)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass

    size_before = session.path.stat().st_size
    asyncio.run(cancel_after_start())
    assert session.get_items_sync() == [{"a": 1}, {"b": 2}, {"c": 3}]


def _fork_child_appends(session: JSONLSession) -> None:
    session.add_items_sync([{"from": "child"}])


def test_object_inherited_through_fork_opens_its_own_descriptor(session: JSONLSession) -> None:
    session.add_items_sync([{"from": "parent"}])  # the parent now holds a cached descriptor
    child = mp.get_context("fork").Process(target=_fork_child_appends, args=(session,))
    child.start()
    child.join(30)
    assert child.exitcode == 0
    session.add_items_sync([{"from": "parent"}])
    assert [i["from"] for i in session.get_items_sync()] == ["parent", "child", "parent"]


def test_reader_waits_for_a_writer_rather_than_seeing_half_a_call(session: JSONLSession) -> None:
    session.add_items_sync([{"a": 1}])
    session.lock_timeout = 30
    with LockHolder(session.path) as holder:
        result: list[Any] = []
        reader = threading.Thread(target=lambda: result.append(session.get_items_sync()))
        reader.start()
        reader.join(0.3)
        assert reader.is_alive(), "the reader waits while a writer holds the lock"
        with open(session.path, "ab") as f:  # stand-in for the writer's work
            f.write(b'{"b":2}\n')
        holder.release.set()
        reader.join(30)
    assert result == [[{"a": 1}, {"b": 2}]]


def _close_in_child(session: JSONLSession, done: Any) -> None:
    session.close()
    session.add_items_sync([{"from": "child"}])
    done.set()


def test_close_in_a_forked_child_does_not_hang_on_a_parent_thread_lock(session: JSONLSession) -> None:
    """Regression: close() took the mutex without noticing the fork; a mutex held by a
    parent thread at fork time (a thread that does not exist in the child) hung it forever."""
    session.add_items_sync([{"from": "parent"}])
    ctx = mp.get_context("fork")
    done = ctx.Event()
    with session.rewrite():  # this thread holds the handle's mutex while we fork
        child = ctx.Process(target=_close_in_child, args=(session, done))
        child.start()
        assert not done.wait(0.5), "the child's append must wait for our exclusive lock"
    child.join(30)
    try:
        assert child.exitcode == 0
        assert done.is_set()
    finally:
        if child.is_alive():
            child.kill()
            child.join()
    assert [i["from"] for i in session.get_items_sync()] == ["parent", "child"]
