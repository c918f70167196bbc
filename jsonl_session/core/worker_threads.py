"""The worker threads that do async calls' slow file work (fsyncs, big reads, rewrites) off the loop.

A queue and a few threads rather than ``concurrent.futures.ThreadPoolExecutor``: nothing here
needs a ``Future`` (the caller learns the outcome through its own event loop, see
``async_locking.AsyncLocked.finish_in_thread``), and ``ThreadPoolExecutor.submit`` cost ~11 µs of the
event loop's time per call against ~0.4 µs for a queue ``put`` (measured on this 2-core VM).

* The pool outlives ``asyncio.run`` (which shuts the loop's default pool down), so
  ``Runner.run_sync`` calls in a row reuse warm threads.
* A forked child starts with no pool: the parent's threads do not exist there.
* Work still queued when the interpreter exits is finished first, as ``concurrent.futures``
  does: an fsync a cancelled caller left behind still happens.

Example:
    >>> import os, tempfile
    >>> from jsonl_session.core import worker_threads as workers
    >>> with tempfile.TemporaryFile() as file:
    ...     workers.submit(os.fdatasync, file.fileno())
    ...     workers.wait_for_all()              # returns once the fsync is done
"""

from __future__ import annotations

import atexit
import os
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["THREADS", "report", "run", "run_and_report", "submit", "wait_for_all"]

THREADS = min(32, (os.cpu_count() or 1) + 4)
"""At most this many worker threads (the size of ``asyncio``'s default pool)."""

Work = tuple[Callable[..., Any], tuple[Any, ...]]


class PoolClosed(RuntimeError):
    """The pool was closed by :func:`wait_for_all` (a new one takes the work) or at exit."""


class _Pool:
    def __init__(self) -> None:
        self._work: queue.SimpleQueue[Work | None] = queue.SimpleQueue()
        # One entry per worker back from a piece of work. A C queue, not a threading.Semaphore,
        # whose release is Python code run after the worker reported: the loop, woken by that
        # report, can wait for the GIL until the worker is back in ``get``.
        self._idle: queue.SimpleQueue[None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, work: Work) -> None:
        with self._lock:
            if self._closed:
                raise PoolClosed("the worker pool is closed")
            self._work.put(work)
            self._grow()

    def _grow(self) -> None:
        """Start a thread for the work just queued, unless one is idle (or there are enough)."""
        try:
            self._idle.get_nowait()
            return
        except queue.Empty:
            pass
        if len(self._threads) < THREADS:
            thread = threading.Thread(
                target=self._serve, name=f"jsonl-session-io-{len(self._threads)}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def close(self) -> None:
        """Finish what is queued, then stop every thread and wait for them."""
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        for _ in threads:
            self._work.put(None)
        for thread in threads:
            thread.join()

    def _serve(self) -> None:
        while True:
            work = self._work.get()
            if work is None:
                return
            function, args = work
            try:
                function(*args)  # reports its own outcome (see ``report``): nothing to keep here
            except BaseException:  # noqa: BLE001  (a bug of ours: show it, keep the thread)
                import traceback

                traceback.print_exc()
            self._idle.put(None)


_pool: _Pool | None = None
_creating = threading.Lock()
_exiting = False


def _current_pool() -> _Pool:
    global _pool
    pool = _pool
    if pool is None:
        with _creating:  # two loops in two threads must not make two pools
            if _exiting:
                raise PoolClosed("the interpreter is exiting")
            if _pool is None:
                _pool = _Pool()
            pool = _pool
    return pool


def submit(function: Callable[..., Any], *args: Any) -> None:
    """Run ``function(*args)`` in a worker thread; it must report its own outcome.

    Raises:
        PoolClosed: the interpreter is exiting.
    """
    while True:
        pool = _current_pool()
        try:
            pool.submit((function, args))
            return
        except PoolClosed:
            if pool is _pool:
                raise
            # wait_for_all() closed it between the two lines above: the next pool takes it


async def run(function: Callable[..., Any], *args: Any) -> Any:
    """Await ``function(*args)`` run in a worker; a cancelled wait does not stop it."""
    import asyncio

    loop = asyncio.get_running_loop()
    done = loop.create_future()
    submit(run_and_report, function, args, loop, done)
    return await done


def run_and_report(function: Callable[..., Any], args: tuple[Any, ...], loop: Any, done: Any) -> None:
    """In a worker: run ``function(*args)`` and settle ``done`` with its result or exception."""
    try:
        result = function(*args)
    except BaseException as error:  # noqa: BLE001  (handed to the awaiting task, which raises it)
        report(loop, done, None, error)
    else:
        report(loop, done, result, None)


def report(loop: Any, done: Any, result: Any, error: BaseException | None) -> None:
    """From a worker: settle the future ``done`` on its loop (unless its waiter gave up)."""
    try:
        loop.call_soon_threadsafe(_settle, done, result, error)
    except RuntimeError:
        pass  # the loop is closed: nobody waits any more


def _settle(done: Any, result: Any, error: BaseException | None) -> None:
    if done.cancelled():
        return
    if isinstance(error, StopIteration):  # a future refuses it: the waiter would wait forever
        error = RuntimeError(f"the worker raised StopIteration: {error!r}")
    if error is not None:
        done.set_exception(error)
    else:
        done.set_result(result)


def wait_for_all() -> None:
    """Wait until all work handed to workers so far is done (the pool restarts on next use).

    Work whose caller was cancelled still runs to the end; this is how to wait for it, e.g.
    before checking a file in a test.
    """
    global _pool
    with _creating:
        pool, _pool = _pool, None
    if pool is not None:
        pool.close()


@atexit.register
def _finish_at_exit() -> None:
    global _exiting
    with _creating:
        _exiting = True
    wait_for_all()


def _forget_in_child() -> None:
    global _pool, _creating
    _pool = None
    _creating = threading.Lock()  # another thread may have held it at the fork


os.register_at_fork(after_in_child=_forget_in_child)
