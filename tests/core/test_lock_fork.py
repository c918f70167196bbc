"""A lock dies with the process that took it, even when that process forked an idle child."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from pathlib import Path
from typing import Any

from lock_helpers import another_process_can_lock

from jsonl_session import JSONLSession

CTX = mp.get_context("spawn")


def _writer_that_forks_an_idle_worker(directory: str, idle: Any, inside: Any, pids: Any) -> None:
    session = JSONLSession("forked", directory)
    session.add_items_sync([{"a": 1}])  # the session object now keeps a descriptor open
    child = os.fork()
    if child == 0:  # an idle worker (a multiprocessing "fork" worker, a pre-forked server)
        idle.set()  # fork() has returned here, so the at-fork hooks have run
        time.sleep(120)
        os._exit(0)
    pids.send(child)
    with session.rewrite() as draft:
        draft.items = [{"b": 2}]
        inside.set()
        time.sleep(120)  # SIGKILLed here, inside rewrite(), holding the lock


def _open_paths(pid: int) -> set[str]:
    paths = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            paths.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except FileNotFoundError:
            pass
    return paths


def _wait_for_exit(process: Any, timeout: float) -> None:
    """Wait for the process itself to end (waitpid), not for its sentinel pipe to close.

    ``Process.join`` waits for the sentinel, a pipe whose write end every process forked from
    ``process`` inherits: with its idle forked child still alive, ``join`` sat out its whole
    timeout (30 s) although the writer died at once. ``exitcode`` reaps with ``waitpid(WNOHANG)``.
    """
    deadline = time.monotonic() + timeout
    while process.exitcode is None and time.monotonic() < deadline:
        time.sleep(0.005)


def test_a_writer_killed_inside_rewrite_leaves_no_lock_with_its_idle_forked_child(sessions_dir: Path) -> None:
    idle, inside = CTX.Event(), CTX.Event()
    receive, send = CTX.Pipe(duplex=False)
    writer = CTX.Process(
        target=_writer_that_forks_an_idle_worker, args=(str(sessions_dir), idle, inside, send)
    )
    writer.start()
    child = None
    try:
        child = receive.recv()
        assert inside.wait(60) and idle.wait(60)
        path = sessions_dir / "forked.jsonl"
        assert str(path) not in _open_paths(child)  # closed right after fork: the child holds nothing
        assert not another_process_can_lock(path)  # the writer holds it, inside rewrite()
        writer.kill()
        _wait_for_exit(writer, 30)
        assert writer.exitcode == -signal.SIGKILL
        os.kill(child, 0)  # the idle child is still alive, and still holds its inherited descriptors
        assert another_process_can_lock(path)  # at once: the idle child did not keep it alive
        assert JSONLSession("forked", sessions_dir, lock_timeout=0).get_items_sync() == [{"a": 1}]
    finally:
        # The child first: once it is gone nothing holds the writer's sentinel, so join() returns.
        if child is not None:
            os.kill(child, signal.SIGKILL)
        writer.kill()
        writer.join(30)


def _async_writer_that_forks(directory: str, result: Any) -> None:
    import asyncio

    session = JSONLSession("pool", directory)
    asyncio.run(session.add_items([{"parent": 1}]))  # the worker pool now has threads
    child = os.fork()
    if child == 0:  # the parent's worker threads do not exist here
        try:
            asyncio.run(session.add_items([{"child": 1}]))  # durable: its fsync needs a worker
        finally:
            os._exit(0)
    result.send(child)
    _, status = os.waitpid(child, 0)
    result.send(os.waitstatus_to_exitcode(status))


def test_a_forked_child_hands_async_file_work_to_workers_of_its_own(sessions_dir: Path) -> None:
    # The child inherits the pool object but not its threads; a pool that believes its old
    # threads are idle would queue the child's fsync forever.
    receive, send = CTX.Pipe(duplex=False)
    writer = CTX.Process(target=_async_writer_that_forks, args=(str(sessions_dir), send))
    writer.start()
    child = receive.recv()
    try:
        finished = receive.poll(60)
        if not finished:
            os.kill(child, signal.SIGKILL)  # hung: not reaped yet, so the pid is still its own
        assert finished, "the forked child never finished its async add_items"
        assert receive.recv() == 0
    finally:
        writer.kill()
        writer.join(30)
    assert JSONLSession("pool", sessions_dir).get_items_sync() == [{"parent": 1}, {"child": 1}]
