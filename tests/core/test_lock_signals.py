"""A signal handler that raises between any two bytecodes never strands the lock.

A one-shot ``ITIMER_REAL`` fires at a random microsecond offset into each operation, and its
handler raises (as Ctrl-C's ``KeyboardInterrupt`` does in an app that catches it and carries
on). Afterwards the same object and another process must get the lock at once.
"""

from __future__ import annotations

import gc
import random
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from lock_helpers import another_process_can_lock

from jsonl_session import JSONLSession


class Interrupted(Exception):
    """Raised by the timer's signal handler."""


@contextmanager
def raising_timer() -> Iterator[Callable[[float], None]]:
    def handler(signum: int, frame: FrameType | None) -> None:
        raise Interrupted

    # A handler that fires inside a GC callback (hypothesis installs one once its tests have
    # run) cannot raise into our code: Python reports it as unraisable, which fails the
    # suite (CI run, 2026-12-02). Those callbacks are not ours to test: set them aside.
    callbacks = gc.callbacks[:]
    gc.callbacks.clear()
    previous = signal.signal(signal.SIGALRM, handler)
    try:

        def arm(seconds: float) -> None:
            signal.setitimer(signal.ITIMER_REAL, seconds)

        yield arm
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        gc.callbacks[:] = callbacks


class Offsets:
    """Random timer offsets that cover the whole of one kind of operation, on any machine.

    A fixed range (1-80 µs) could miss the end of a slow operation every time: on a busy CI
    machine the first add, which also creates the folder, never finished, so the file never
    existed (CI run, 2026-12-03). The ceiling is 1.5x the last uninterrupted run and grows
    while every run is interrupted, so both outcomes keep happening.
    """

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._ceiling = 50e-6
        self.completed = self.interrupted = 0

    def pick(self) -> float:
        return self._rng.uniform(1e-6, self._ceiling)

    def record(self, seconds: float | None) -> None:
        """``seconds`` an uninterrupted run took, or None when the handler interrupted it."""
        if seconds is None:
            self.interrupted += 1
            self._ceiling *= 1.05
        else:
            self.completed += 1
            self._ceiling = max(2e-6, 1.5 * seconds)


def assert_lock_is_free(session: JSONLSession) -> None:
    with session._handle.try_locked(write=True, create=False) as fd:
        assert fd >= 0, "the same object cannot lock"
    assert another_process_can_lock(session.path)
    assert all(set(item) == {"n"} for item in session.get_items_sync())  # whole items only


def test_a_raising_signal_handler_never_strands_the_lock_of_sync_calls(sessions_dir: Path) -> None:
    session = JSONLSession("signals", sessions_dir, durable=False, lock_timeout=0)
    session.add_items_sync([{"n": 0}])  # the end state is about the lock, not about creating the file
    rng = random.Random(3)
    operations: list[tuple[Callable[[], Any], Offsets]] = [
        (lambda: session.add_items_sync([{"n": 1}, {"n": 2}]), Offsets(rng)),
        (lambda: session.get_items_sync(limit=3), Offsets(rng)),
        (session.pop_item_sync, Offsets(rng)),
        (lambda: session.get_items_sync(), Offsets(rng)),
    ]
    with raising_timer() as arm:
        for i in range(6000):
            operation, offsets = operations[i % len(operations)]
            seconds = None
            try:
                try:
                    arm(offsets.pick())
                    started = time.perf_counter()
                    operation()
                    seconds = time.perf_counter() - started
                finally:
                    arm(0)
                session.get_items_sync(limit=1)  # a handler that ran late lands here, still caught
            except Interrupted:
                pass
            offsets.record(seconds)
            if i % 500 == 0:
                with session.rewrite() as draft:
                    draft.items = draft.items[-50:]
    assert all(offsets.interrupted and offsets.completed for _, offsets in operations)
    assert_lock_is_free(session)


def test_a_raising_signal_handler_never_strands_the_lock_of_async_calls(sessions_dir: Path) -> None:
    """The coroutines are driven by hand (``send``), not by an event loop: asyncio's own
    machinery is not safe against a raising handler (an exception inside its ``Handle._run``
    loses a task's wake-up, which is why ``asyncio.run`` installs its own SIGINT handler),
    and this test is about our lock, not theirs."""
    session = JSONLSession("signals", sessions_dir, durable=False, lock_timeout=0)
    session.add_items_sync([{"n": 0}])  # the end state is about the lock, not about creating the file
    rng = random.Random(4)
    adds, reads = Offsets(rng), Offsets(rng)
    with raising_timer() as arm:
        for i in range(4000):
            coroutine = session.add_items([{"n": i}]) if i % 2 else session.get_items(limit=3)
            offsets = adds if i % 2 else reads
            seconds = None
            try:
                try:
                    arm(offsets.pick())
                    started = time.perf_counter()
                    while True:
                        coroutine.send(None)  # each await of this uncontended call is a sleep(0)
                except StopIteration:
                    seconds = time.perf_counter() - started
                finally:
                    arm(0)
                    coroutine.close()  # interrupted between two steps: as a cancelled task would
                session.get_items_sync(limit=1)  # a handler that ran late lands here, still caught
            except Interrupted:
                pass
            offsets.record(seconds)
    assert adds.interrupted and adds.completed and reads.interrupted and reads.completed
    assert_lock_is_free(session)


def test_a_raising_signal_handler_during_the_first_write_leaves_a_usable_session(tmp_path: Path) -> None:
    """The first write also creates the folder and the file: interrupting it anywhere leaves
    either nothing or a whole item, and the next write works at once."""
    rng = random.Random(5)
    offsets = Offsets(rng)
    with raising_timer() as arm:
        for i in range(300):
            session = JSONLSession("first", tmp_path / str(i) / "sessions", durable=False, lock_timeout=0)
            seconds = None
            try:
                try:
                    arm(offsets.pick())
                    started = time.perf_counter()
                    session.add_items_sync([{"n": 1}])
                    seconds = time.perf_counter() - started
                finally:
                    arm(0)
            except Interrupted:
                pass
            offsets.record(seconds)
            session.add_items_sync([{"n": 2}])
            assert session.get_items_sync() in ([{"n": 2}], [{"n": 1}, {"n": 2}])
            with session._handle.try_locked(write=True, create=False) as fd:
                assert fd >= 0
    assert offsets.interrupted and offsets.completed
    assert another_process_can_lock(session.path)
