"""Child processes and waits shared by the suite: a child that is always reaped, and a poll for
a state that offers no event to wait on (a server's threads, a database a mirror fills).

``running`` spawns: the child starts from a clean interpreter, as another program on the machine
would, with no lock, thread or descriptor inherited. ``answer_from_fork`` forks, so a fault a
test patches into the library (a failing fsync, a low limit) stays in the child.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

SPAWN = multiprocessing.get_context("spawn")
FORK = multiprocessing.get_context("fork")
JOIN = 60.0  # seconds: a generous bound on reaping a child; a bug fails the test instead of hanging it


@contextmanager
def running(target: Callable[..., Any], *args: Any) -> Iterator[Any]:
    """Run ``target(*args)`` in a spawned process; always joined (or killed) on the way out."""
    process = SPAWN.Process(target=target, args=args, daemon=True)
    process.start()
    try:
        yield process
    finally:
        process.join(JOIN)
        if process.is_alive():
            process.kill()
            process.join(JOIN)


def answer_from_fork(target: Callable[..., None], *args: Any) -> Any:
    """Run ``target(conn, *args)`` in a forked child (what it patches or limits stays there) and
    return what it sends on ``conn``; the child is always reaped."""
    parent, child = FORK.Pipe()
    process = FORK.Process(target=target, args=(child, *args))
    process.start()
    try:
        return parent.recv()
    finally:
        process.join(timeout=30)
        if process.is_alive():
            process.kill()
            process.join()


def wait_until(
    condition: Callable[[], object], timeout: float = 20, what: str = "the state waited for"
) -> None:
    """Poll ``condition`` every 50 ms until it is true; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not done within {timeout} s")
        time.sleep(0.05)
