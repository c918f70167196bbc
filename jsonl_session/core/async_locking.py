"""The asynchronous twin of ``locking``: hold a session file's lock across ``await``, never blocking the loop.

The first attempt at the lock is inline, so the uncontended path costs no thread hand-off;
when another process holds it, the wait is ``asyncio.sleep`` between attempts. Every block
lets other tasks run at least once. Slow work inside a block (fsync, a big read, a rewrite)
goes to a worker thread with :meth:`AsyncLocked.finish_in_thread`, and the worker unlocks
when it is done, so a cancelled caller never leaves a write half-done or the lock held.
The lock protocol itself (tokens, replaced files, signals, fork) is ``locking``'s.

Example:
    >>> async with locked_async(handle, write=False, create=False) as fd:  # doctest: +SKIP
    ...     items = reads.read_items(fd, handle.path, 20)
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from types import TracebackType

from .locking import BUSY, DEFAULT_LOCK_TIMEOUT, MISSING, TOKENS, FileHandle, check_lock_timeout

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T")

__all__ = ["YIELD_ONCE", "AsyncLocked", "locked_async"]


def locked_async(
    handle: FileHandle,
    *,
    write: bool,
    create: bool,
    timeout: float = DEFAULT_LOCK_TIMEOUT,
    yield_first: bool = True,
) -> AsyncLocked:
    """The asynchronous equivalent of ``FileHandle.locked``: ``async with``, waiting with ``asyncio.sleep``.

    Every block lets other tasks run at least once: on entering, before anything is done,
    so that a caller cancelled there knows nothing changed (a pop that removed its item and
    then raised would lose it); or, with ``yield_first=False``, on leaving, after the unlock
    (a thread hop, see :meth:`AsyncLocked.finish_in_thread`, counts), which costs less: for
    reads, and for writes that end in a thread. A block that fails to lock yields before
    raising.
    """
    return AsyncLocked(handle, write, create, check_lock_timeout(timeout), yield_first)


class AsyncLocked:
    """The ``async with`` block of :func:`locked_async`.

    Example:
        >>> lock = locked_async(handle, write=True, create=True)          # doctest: +SKIP
        >>> async with lock as fd:                                       # doctest: +SKIP
        ...     os.write(fd, payload)
        ...     await lock.finish_in_thread(os.fdatasync, fd)  # unlocks in the thread
    """

    __slots__ = (
        "__weakref__",
        "_create",
        "_handed_off",
        "_handle",
        "_timeout",
        "_token",
        "_write",
        "_yield_first",
    )

    def __init__(
        self, handle: FileHandle, write: bool, create: bool, timeout: float, yield_first: bool = True
    ) -> None:
        """``timeout`` must be checked already (:func:`check_lock_timeout`): sessions check theirs once."""
        self._handle = handle
        self._token = 0
        self._write, self._create, self._timeout = write, create, timeout
        self._handed_off = False
        self._yield_first = yield_first
        self._token = next(TOKENS)

    async def __aenter__(self) -> int:
        if self._yield_first:
            await YIELD_ONCE  # before any change: cancelled here, the call did nothing
        handle = self._handle
        # Creating is file work (the folder looked at, the create, the unlink of each sidecar a
        # deleted namesake left; a durable one fsyncs the folder), which the loop does not wait
        # for: the lock is taken without creating, and a missing file is created in a worker
        # thread; a durable write, whose fsync goes to a worker anyway, opens there too. Not a
        # block that yields first (a write without fsync): it changes nothing after its one
        # yield, so that its CancelledError means nothing was written, not even an empty file
        # (docs/guarantees.md), and creates on the loop, once per file.
        in_thread = self._create and not self._yield_first
        create_now = self._create and self._yield_first
        if in_thread and handle.durable and handle.fd is None:
            await _open_ahead(handle, self._write)
        token = self._token
        try:
            fd = handle.try_lock(self, token, self._write, create_now, threading.get_ident())
            if fd == BUSY:  # held by another process (or task): wait without blocking the loop
                fd = await handle.lock_polling(self, token, self._write, create_now, self._timeout)
            if fd == MISSING and in_thread:  # new, or deleted while the handle held it open
                await _open_ahead(handle, self._write)
                fd = handle.try_lock(self, token, self._write, True, threading.get_ident())
                if fd == BUSY:
                    fd = await handle.lock_polling(self, token, self._write, True, self._timeout)
            return fd
        except BaseException as error:
            handle.release(token)  # cancelled, or a signal, after the lock was taken
            if isinstance(error, Exception) and not self._yield_first:
                await YIELD_ONCE  # a failing call yields too: a loop that retries must not starve the others
            raise

    def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> Awaitable[None]:
        # A plain method that releases at once and returns an awaitable: a coroutine would
        # hold this object, and one created but never awaited (a signal in between) can be
        # kept alive by whoever records its RuntimeWarning.
        if self._handed_off:
            return _DONE  # the thread hop yielded
        self._handle.release(self._token)
        return _DONE if self._yield_first else YIELD_ONCE  # it promised to yield, and has not

    async def finish_in_thread(self, function: Callable[..., T], *args: Any) -> T:
        """Run ``function(*args)`` in a worker thread, which unlocks when it returns; end the block then.

        If the caller is cancelled, it stops waiting at once, but the work still completes and
        the worker releases the lock: nothing is left half-done or held. The work goes to
        the library's own threads (``worker_threads``) and comes back with one
        ``call_soon_threadsafe``: cheaper for the loop than ``asyncio.shield(loop.run_in_executor(...))``.
        """
        import asyncio

        from . import worker_threads

        handle = self._handle
        if self._handed_off or not handle.holds(self._token):
            raise RuntimeError("finish_in_thread() needs the lock this block holds, once")
        loop = asyncio.get_running_loop()
        done: asyncio.Future[T] = loop.create_future()
        # Whoever takes ``claim`` first unlocks: the worker, which then does the work, or this
        # caller, if an exception (a signal handler's) arrives before the worker starts.
        # ``submit`` queues the work before it starts a thread, so which one runs is decided here.
        claim = threading.Lock()
        handle.hand_over_to_worker()
        try:
            self._handed_off = True
            worker_threads.submit(self._finish, function, args, loop, done, claim)
        except BaseException:
            if claim.acquire(blocking=False):
                handle.release(self._token)  # the work will not run: nobody else unlocks
            raise
        return await done

    def _finish(
        self, function: Callable[..., T], args: tuple[Any, ...], loop: Any, done: Any, claim: threading.Lock
    ) -> None:
        from . import worker_threads

        if not claim.acquire(blocking=False):
            return  # the caller gave up before this started, and unlocked
        worker_threads.run_and_report(self._run_then_unlock, (function, args), loop, done)

    def _run_then_unlock(self, function: Callable[..., T], args: tuple[Any, ...]) -> T:
        try:
            return function(*args)
        finally:
            self._handle.release(self._token)


# Two awaitables that run no Python code: ``await`` iterates a tuple, in C. Every async call
# of a session awaits one of them, and on the hot path each Python frame saved is ~1 µs.


class _Done(tuple):  # type: ignore[type-arg]
    """An awaitable that is already finished: iterating ``()`` ends at once."""

    __slots__ = ()
    __await__ = tuple.__iter__


_DONE: Awaitable[None] = _Done()  # type: ignore[assignment]  # awaitable, as mypy cannot see


class _YieldOnce(tuple):  # type: ignore[type-arg]
    """Lets the other tasks run once, like ``asyncio.sleep(0)``: iterating ``(None,)`` yields
    one bare ``None``, which makes the running task reschedule itself."""

    __slots__ = ()
    __await__ = tuple.__iter__


YIELD_ONCE: Awaitable[None] = _YieldOnce((None,))  # type: ignore[assignment]
"""``await YIELD_ONCE`` lets the other tasks run once, as ``asyncio.sleep(0)`` does, without a Python call."""


async def _open_ahead(handle: FileHandle, write: bool) -> None:
    """Open (creating) the file in a worker thread: creating is file work (and a durable one fsyncs)."""
    from . import worker_threads  # here, not at import time: the CLI never needs threads

    await worker_threads.run(handle.open_ahead, write)
