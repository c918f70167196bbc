"""A signal handler that raises between any two bytecodes never strands the lock.

A one-shot ``ITIMER_REAL`` fires at a random microsecond offset into each operation, and its
handler raises (as Ctrl-C's ``KeyboardInterrupt`` does in an app that catches it and carries
on). Afterwards the same object and another process must get the lock at once.
"""

from __future__ import annotations

import gc
import random
import signal
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


def assert_lock_is_free(session: JSONLSession) -> None:
    with session._handle.try_locked(write=True, create=False) as fd:
        assert fd >= 0, "the same object cannot lock"
    assert another_process_can_lock(session.path)
    assert all(set(item) == {"n"} for item in session.get_items_sync())  # whole items only


def test_a_raising_signal_handler_never_strands_the_lock_of_sync_calls(sessions_dir: Path) -> None:
    session = JSONLSession("signals", sessions_dir, durable=False, lock_timeout=0)
    rng = random.Random(3)
    operations: list[Callable[[], Any]] = [
        lambda: session.add_items_sync([{"n": 1}, {"n": 2}]),
        lambda: session.get_items_sync(limit=3),
        session.pop_item_sync,
        lambda: session.get_items_sync(),
    ]
    interrupted = 0
    with raising_timer() as arm:
        for i in range(6000):
            try:
                try:
                    arm(rng.uniform(1e-6, 60e-6))
                    operations[i % len(operations)]()
                finally:
                    arm(0)
                session.get_items_sync(limit=1)  # a handler that ran late lands here, still caught
            except Interrupted:
                interrupted += 1
            if i % 500 == 0:
                with session.rewrite() as draft:
                    draft.items = draft.items[-50:]
    assert interrupted > 0
    assert_lock_is_free(session)


def test_a_raising_signal_handler_never_strands_the_lock_of_async_calls(sessions_dir: Path) -> None:
    """The coroutines are driven by hand (``send``), not by an event loop: asyncio's own
    machinery is not safe against a raising handler (an exception inside its ``Handle._run``
    loses a task's wake-up, which is why ``asyncio.run`` installs its own SIGINT handler),
    and this test is about our lock, not theirs."""
    session = JSONLSession("signals", sessions_dir, durable=False, lock_timeout=0)
    rng = random.Random(4)
    interrupted = 0
    with raising_timer() as arm:
        for i in range(4000):
            coroutine = session.add_items([{"n": i}]) if i % 2 else session.get_items(limit=3)
            try:
                try:
                    arm(rng.uniform(1e-6, 80e-6))
                    while True:
                        coroutine.send(None)  # each await of this uncontended call is a sleep(0)
                except StopIteration:
                    pass
                finally:
                    arm(0)
                    coroutine.close()  # interrupted between two steps: as a cancelled task would
                session.get_items_sync(limit=1)  # a handler that ran late lands here, still caught
            except Interrupted:
                interrupted += 1
    assert interrupted > 0
    assert_lock_is_free(session)
