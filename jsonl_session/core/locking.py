"""Open a session file once, and lock it for each operation on the file its path names *now*.

The lock is a ``flock`` on the data file itself, so no lock file ever appears next to the
sessions (nothing for ``git add sessions/`` to pick up). Writers take it exclusively,
readers shared, so a reader never sees half of an ``add_items`` call or a ``pop_item``
mid-truncation.

Every operation that locks enters one context manager::

    with handle.locked(write=True, create=True, timeout=10.0) as fd:   # fd, or MISSING
        ...
    async with locked_async(handle, write=False, create=False) as fd:  # the twin (async_locking)
        ...
    with handle.try_locked(write=False, create=False) as fd:            # no wait: BUSY too
        ...

except the one write that is a whole block in one call (:meth:`FileHandle.try_append`, an
append without fsync), which falls back to them whenever it would have to wait or repair.

One descriptor is kept open per session object and process: reopening costs more than the
append itself. Keeping it raises two races, both handled after the lock is taken:

* an editor or ``git checkout`` may have replaced the file (renamed a new inode over the
  path), or someone deleted it: the path then names another inode, or none, so we drop
  ours and open the path again. Our own atomic rewrites call :meth:`FileHandle.replaced`
  inside the block so the next operation reopens too;
* ``flock`` locks belong to the open file description, which threads share, so the
  handle also records which operation holds it (a token), and other threads and tasks of
  the process wait for that token to clear.

**Waiting.** A lock held by another process is polled for, never waited for forever by
default: ``lock_timeout`` is a number of seconds (:func:`check_lock_timeout`, checked up front,
:data:`DEFAULT_LOCK_TIMEOUT` unless given), and the polling backs off (:func:`backoff_delays`)
so that a long wait costs little CPU while a short one (an append holds the lock for
microseconds) ends quickly; the async wait sleeps (``asyncio.sleep``) the same delays.

**Signals.** A signal handler may raise (``KeyboardInterrupt``) between any two bytecodes.
The token and the ``flock`` change together inside ``with self._state`` (an ``RLock``, whose
C ``__enter__``/``__exit__`` leave no gap), and each step that can raise undoes what it did.
The one gap Python leaves is the first instruction of a context manager's ``__exit__``: an
exception there skips it, so a weak reference to the lock object releases the lock when that
object is freed, which CPython does as soon as the exception is handled
(``tests/core/test_lock_signals.py``). No ``__del__`` runs on the normal path, where a signal's
exception would be swallowed.

**Fork.** ``flock`` locks are shared with a forked child through the inherited descriptor, so
an idle child would keep a dead writer's lock alive. Every :class:`FileHandle` is registered
with ``fork_safety.close_in_forked_child``, and right after ``fork`` the child closes its copies (it
reopens on its next use). Other objects holding session descriptors (the watchers) register
themselves the same way: anything with an ``after_fork_in_child()`` method.

Example:
    >>> handle = FileHandle(Path("sessions/convo_123.jsonl"))        # doctest: +SKIP
    >>> with handle.locked(write=False, create=False) as fd:         # doctest: +SKIP
    ...     data = b"" if fd == MISSING else os.pread(fd, handle.size, 0)
"""

from __future__ import annotations

import functools
import itertools
import os
import time
from types import TracebackType

from . import change_mark
from .deferred_imports import OnFirstUse
from .errors import LockReentryError, LockTimeout
from .safe_open import MISSING, fsync_directory, make_private_directories, open_file

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    import fcntl
    import threading
    import weakref
    from collections.abc import Callable, Iterator
    from os import PathLike
    from typing import Any, TypeVar

    from . import flock, fork_safety

    T = TypeVar("T")
else:  # on the first lock: a warm `ls` reads DEFAULT_LOCK_TIMEOUT and locks nothing (~0.25x of its start-up)
    fcntl = OnFirstUse("fcntl", globals())
    threading = OnFirstUse("threading", globals())
    weakref = OnFirstUse("weakref", globals())
    flock = OnFirstUse("jsonl_session.core.flock", globals())
    fork_safety = OnFirstUse("jsonl_session.core.fork_safety", globals())


__all__ = [
    "BUSY",
    "DEFAULT_LOCK_TIMEOUT",
    "MISSING",
    "TOKENS",
    "FileHandle",
    "Locked",
    "backoff_delays",
    "check_lock_timeout",
    "fsync_directory",
    "make_private_directories",
]

BUSY = -1
"""Yielded by :meth:`FileHandle.try_locked` when the lock is held elsewhere (nothing is held then)."""

TOKENS = itertools.count(1)
"""``next(TOKENS)`` is a new lock block's token: which block holds a handle's lock, since threads
share the ``flock``. A bare ``next()`` rather than a function: every lock takes one (~1 µs a call)."""

DEFAULT_LOCK_TIMEOUT = 10.0
"""Seconds to wait for another process's lock before :class:`LockTimeout` (never forever)."""

# Polling backoff while another process holds the lock: first retry after 0.2 ms (an
# append holds it for microseconds), then doubling up to 5 ms so waiting costs little CPU.
_FIRST_DELAY = 0.0002
_MAX_DELAY = 0.005
_time_ns = time.time_ns


def check_lock_timeout(value: Any) -> float:
    """A lock wait must be bounded: refuse None, negatives, NaN and non-numbers up front.

    Example:
        >>> check_lock_timeout(2)
        2.0
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(
            f"lock_timeout must be a number of seconds >= 0, not {value!r} "
            "(waiting forever for another process is never the default)"
        )
    return float(value)


def backoff_delays() -> Iterator[float]:
    """Waits between attempts on a lock held elsewhere: 0.2 ms, doubling up to 5 ms."""
    delay = _FIRST_DELAY
    while True:
        yield delay
        delay = min(delay * 2, _MAX_DELAY)


class FileHandle:
    """The cached descriptor of one session file, and the lock protocol around it.

    Args:
        path: The session file (a ``str`` is enough: ``jsonl-session ls`` never imports pathlib).
        durable: fsync the folder when the file is created.

    Example:
        >>> handle = FileHandle(Path("sessions/convo_123.jsonl"))      # doctest: +SKIP
        >>> with handle.locked(write=True, create=True) as fd:         # doctest: +SKIP
        ...     os.write(fd, b'{"role":"user","content":"Hi"}\\n')
    """

    def __init__(self, path: str | PathLike[str], *, durable: bool = True) -> None:
        self.path = path
        self._path_str = os.fspath(path)  # os.stat() on a str skips a Path.__fspath__ call per lock
        self.durable = durable
        self.fd: int | None = None
        """The cached descriptor (None: closed, reopened on the next lock); read only under the protocol."""
        self._writable = False
        self._identity = (0, 0)
        self.size = 0
        """The file's size, read under the lock by the last successful lock."""
        self._left_size = -1  # see left_as; -1: nothing vouched for
        self._left_ns = 0
        self._mark_id: bytes | None = None  # see bump_mark; None: not known for this descriptor
        self.folder_unsynced = False
        """The open file's folder entry may not be durable yet: see :meth:`sync_folder_once`."""
        self._state = threading.RLock()  # guards the fields below; held for microseconds
        self._holder = 0  # token of the Locked/AsyncLocked holding the lock, 0 when free
        self._holder_thread = 0  # to refuse a same-thread deadlock
        self._reopen = False  # drop the descriptor on release (the file was replaced)
        self._then: Callable[[], object] | None = None  # a close()'s ``then``, run on release
        self._abandoned: weakref.ref[object] | None = None  # see try_lock
        fork_safety.close_in_forked_child(self)

    def locked(self, *, write: bool, create: bool, timeout: float = DEFAULT_LOCK_TIMEOUT) -> Locked:
        """Hold the lock for a ``with`` block, waiting up to ``timeout`` seconds for it.

        The block gets the locked descriptor, or ``MISSING`` (nothing held) when the file
        does not exist and ``create`` is false.

        Raises:
            LockTimeout: another process or thread kept it longer than ``timeout``.
            LockReentryError: this thread already holds it (a call inside ``rewrite()``).

        Example:
            >>> with handle.locked(write=False, create=False) as fd:   # doctest: +SKIP
            ...     items = reads.read_items(fd, handle.path)
        """
        return Locked(self, write, create, check_lock_timeout(timeout))

    def try_locked(self, *, write: bool, create: bool) -> Locked:
        """Like :meth:`locked`, but never wait: the block gets ``BUSY`` when the lock is held elsewhere.

        Example:
            >>> with handle.try_locked(write=False, create=False) as fd:   # doctest: +SKIP
            ...     if fd == BUSY: ...  # try again later
        """
        return Locked(self, write, create, None)

    def sync_folder_once(self) -> None:
        """Inside a locked block, before an in-place write: make the file's name durable (if ``durable``).

        ``fdatasync`` does not persist the folder entry that names a file. A file this handle
        created had its folder fsynced then; one made by ``git checkout``, an editor or ``cp``
        may never have, and a crash could lose it whole. So once per opened file, the folder
        is fsynced too (``tests/core/test_folder_durability.py``).
        """
        if self.folder_unsynced and self.durable:
            fsync_directory(os.path.dirname(self._path_str) or ".")
            self.folder_unsynced = False

    def left_as(self, size: int) -> None:
        """Inside a write lock, after an append or a pop: the file is ``size`` bytes and ends a line.

        :meth:`try_append` then need not read the last byte while nobody changed the file
        since: the same inode and size, and no inode change time after now. The kernel stamps a
        change with a clock never ahead of ``time.time_ns()``, and nobody can set that time back
        (``touch`` and ``cp -p`` set the modification time), so a later change shows, unless it
        comes within the same clock tick (a few ms) and leaves exactly this size. Every write
        lock forgets it, so a change of this process's own that does not call this (a clear, a
        rewrite) is never vouched for.
        """
        self._left_size, self._left_ns = size, _time_ns()

    def bump_mark(self, fd: int) -> None:
        """Inside a write lock, before a pop or clear: give the file's change mark a new generation.

        The file id in the mark (``change_mark``) changes only with the file, and every writer
        keeps it, so it is read once per descriptor, not on every pop: a durable pop spends ~5 µs
        on that read just after its worker wakes (``benchmarks/run.py``). A mark removed while
        the file is open here (by hand, or by another process on a file system that refuses
        it, see ``change_mark``) and given a new id elsewhere can make followers take this
        pop for a new file (``replaced``: every item delivered again), never for appends: each
        bump writes a new generation.
        """
        self._mark_id = change_mark.bump(fd, self._mark_id)

    def try_append(
        self, payload: bytes, lines: T, stamp: Callable[[bytes, T, int, bool], None] | None
    ) -> bool:
        """A whole write block in one call, if it needs no wait and no repair: lock, append
        ``payload``, call ``stamp(payload, lines, size_before, untouched)``, unlock. False: nothing done.

        For the append that does not fsync (``add_items`` of a ``durable=False`` session, after
        its one yield to the loop), where the lock protocol's own calls cost more than the
        append (``benchmarks/run.py``). The state lock is held throughout, so no other thread
        of this process can take the file meanwhile (the ``flock`` is theirs too), and the
        block sets no holder. False when the lock is held (here or elsewhere), the descriptor
        is closed or read-only, the path names another inode or none, or the file does not
        end its last line (a torn tail, a hand edit): :class:`Locked` and
        ``async_locking.AsyncLocked`` wait, reopen, create and repair. ``untouched``: nobody
        changed the file since this handle's last :meth:`left_as` (then the last byte is not read).
        """
        with self._state:
            fd = self.fd
            if self._holder or fd is None or not self._writable:
                return False
            try:  # the unlock in ``finally`` is harmless when the lock was not taken: no one
                # else in this process can hold it while the state lock is held and no holder is set
                if not flock.lock_exclusive()(fd, blocking=False):
                    return False
                try:
                    now = os.stat(self._path_str, follow_symlinks=False)  # as try_lock checks it
                except FileNotFoundError:
                    return False  # deleted: the long way reopens (or creates) it
                if (now.st_dev, now.st_ino) != self._identity:
                    return False
                size = now.st_size
                untouched = size == self._left_size and now.st_ctime_ns <= self._left_ns
                self._left_size = -1
                if size and not untouched and os.pread(fd, 1, size - 1) != b"\n":
                    return False
                written = os.write(fd, payload)  # storage.write_at_end, written out
                if written < len(payload):
                    from .storage import write_rest  # here: a short write is rare, `ls` never writes

                    write_rest(fd, payload, written, size)
                self.size = size
                if stamp is not None:
                    stamp(payload, lines, size, untouched)
                self._left_size, self._left_ns = size + len(payload), _time_ns()
                return True
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def replaced(self) -> None:
        """Inside a locked block: the file was replaced or deleted, reopen it next time."""
        self._reopen = True

    def close(self, then: Callable[[], object] | None = None) -> None:
        """Close the cached descriptor (it is reopened if the handle is used again), then call
        ``then`` (what else the lock's holders write through, the ``.times`` sidecar's).

        Inside a locked block, a worker's too, both happen when the block ends.
        """
        with self._state:
            if self._holder:
                self._reopen = True
                self._then = then
            else:
                self._drop()
                if then is not None:
                    then()

    def after_fork_in_child(self) -> None:
        """Close the descriptor a forked child inherited, and forget the parent's lock state.

        Never unlock it: the parent shares its open file description and lock. The
        parent's threads do not exist here, so the state lock starts fresh.
        """
        fd, self.fd = self.fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass
        self._state = threading.RLock()
        self._holder = self._holder_thread = 0
        self._reopen = False
        self._then = None  # the sidecar closes itself in the child (fork_safety)
        self._abandoned = None

    # -- the protocol: every change of state happens under self._state ---------------------
    # ``Locked`` and ``async_locking.AsyncLocked`` are its only callers: a block gets a
    # token (``next(TOKENS)``), tries or waits for the lock with it, and releases it.

    def holds(self, token: int) -> bool:
        """Whether the block with ``token`` holds the lock now."""
        return self._holder == token

    def hand_over_to_worker(self) -> None:
        """The holding block hands the lock to a worker thread, which releases it; this thread may wait."""
        self._holder_thread = 0

    def try_lock(self, owner: object, token: int, write: bool, create: bool, thread: int) -> int:
        """Take the lock for ``owner`` (a lock block) without waiting: the fd, ``BUSY`` or ``MISSING``."""
        with self._state:
            if self._holder:
                return BUSY
            # If ``owner`` is dropped still holding the lock (a signal handler raised before
            # its __exit__'s first line), this releases it. Normally the release drops the
            # reference first and the callback never runs.
            abandoned = weakref.ref(owner, functools.partial(self.release, token))
            # The common path (descriptor open, lock free, file not replaced) is written out
            # in this one function: in a busy process each Python call costs ~1 µs of cold caches.
            try:
                for _ in range(100):  # each retry means the file was replaced under us: rare
                    fd = self.fd
                    if fd is None or (write and not self._writable):
                        fd = self._open(write=write, create=create)
                        if fd == MISSING:
                            return MISSING
                    if not (flock.lock_exclusive()(fd, blocking=False) if write else flock.lock_shared(fd)):
                        return BUSY
                    # Is the path still the inode we hold? A ``stat`` of the path, not an
                    # ``fstat``, whose link count would miss a replaced file hard-linked
                    # elsewhere (an editor's backup); it also gives the size we need.
                    try:
                        now = os.stat(self._path_str, follow_symlinks=False)
                    except FileNotFoundError:
                        now = None
                    if now is not None and (now.st_dev, now.st_ino) == self._identity:
                        self.size = now.st_size
                        if write:  # whatever this block writes, it vouches for anew (left_as)
                            self._left_size = -1
                        # No call between these two lines and the return, so no signal
                        # handler can run in between.
                        self._holder, self._holder_thread, self._abandoned = token, thread, abandoned
                        return fd
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    self._drop()
                return BUSY
            except BaseException:
                # An error, or a signal handler's exception after flock() succeeded: never
                # leave the file locked for a lock nobody in this process holds.
                if self._holder != token and self.fd is not None:
                    fcntl.flock(self.fd, fcntl.LOCK_UN)
                raise

    def release(self, token: int, _: object = None) -> None:
        """Unlock if ``token`` still holds the lock (calling it twice is harmless)."""
        with self._state:
            if self._holder != token:
                return
            self._holder = self._holder_thread = 0
            self._abandoned = None
            try:
                if self.fd is not None:
                    # Unlock explicitly even when closing: a forked child may share the open
                    # file description until it exits (tests/reliability/test_crash_loop.py).
                    fcntl.flock(self.fd, fcntl.LOCK_UN)
            finally:
                if self._reopen:
                    self._reopen = False
                    self._drop()
                    then, self._then = self._then, None
                    if then is not None:
                        then()

    def lock_waiting(
        self, owner: object, token: int, write: bool, create: bool, timeout: float | None
    ) -> int:
        thread = threading.get_ident()
        fd = self.try_lock(owner, token, write, create, thread)
        if fd != BUSY or timeout is None:
            return fd
        if self._holder and self._holder_thread == thread:
            raise LockReentryError(self.path)
        deadline = time.monotonic() + timeout
        for delay in backoff_delays():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            time.sleep(min(delay, remaining))
            fd = self.try_lock(owner, token, write, create, thread)
            if fd != BUSY:
                return fd
        raise LockTimeout(self.path, timeout)

    async def lock_polling(self, owner: object, token: int, write: bool, create: bool, timeout: float) -> int:
        """After a first attempt found the lock ``BUSY``: retry, sleeping on the loop in between.

        Raises:
            LockTimeout: another process or task kept it longer than ``timeout``.
            LockReentryError: a blocking block of this thread holds it (inside ``rewrite()``).
        """
        import asyncio  # here, not at import time: the CLI starts without asyncio

        thread = threading.get_ident()
        if self._held_by_blocking_block_of(thread):
            # ``await session.add_items()`` inside ``with session.rewrite():`` would wait the whole
            # timeout, then blame another process. A blocking block held by this
            # thread cannot end while this coroutine waits: raise at once, as the twin does.
            # An async block of another task on this loop (``AsyncLocked``) is waited for.
            raise LockReentryError(self.path)
        deadline = time.monotonic() + timeout
        for delay in backoff_delays():
            # Sleep at least once, even with no time left: every async call lets the other
            # tasks run, and the last attempt is made at the deadline.
            await asyncio.sleep(max(0.0, min(delay, deadline - time.monotonic())))
            fd = self.try_lock(owner, token, write, create, thread)
            if fd != BUSY or time.monotonic() >= deadline:
                break
        if fd == BUSY:
            raise LockTimeout(self.path, timeout)
        return fd

    def _held_by_blocking_block_of(self, thread: int) -> bool:
        """Whether a ``Locked`` block (not an async one) of ``thread`` holds the lock (BUSY path only)."""
        with self._state:
            owner = self._abandoned() if self._abandoned is not None else None
            return bool(self._holder) and self._holder_thread == thread and isinstance(owner, Locked)

    def open_ahead(self, write: bool) -> None:
        """Open (and create) the file now, in a worker thread: creating is file work, and a
        durable create fsyncs the folder.

        Opened without holding the state lock, which the loop's own lock attempts take: a
        slow create must not stall them. A descriptor someone installed meanwhile wins.
        """
        with self._state:
            if not self._wants_open(write):
                return
        fd, writable, created = open_file(self.path, write=write, create=True, durable=self.durable)
        try:
            held = os.fstat(fd)
            with self._state:
                if not self._wants_open(write):
                    os.close(fd)
                    return
                self._drop()
                self._install(fd, writable, created, held)
        except BaseException:
            if self.fd != fd:
                os.close(fd)
            raise

    def _wants_open(self, write: bool) -> bool:
        """Unlocked, and without a descriptor that will do (under the state lock)."""
        return not self._holder and (self.fd is None or (write and not self._writable))

    def _open(self, *, write: bool, create: bool) -> int:
        """(Re)open the file, writable if ``write``: the cached descriptor is missing or read-only."""
        self._drop()
        fd, writable, created = open_file(self.path, write=write, create=create, durable=self.durable)
        if fd != MISSING:
            self._install(fd, writable, created, os.fstat(fd))
        return fd

    def _install(self, fd: int, writable: bool, created: bool, held: os.stat_result) -> None:
        self.fd, self._writable, self._identity = fd, writable, (held.st_dev, held.st_ino)
        self._mark_id = None
        self.folder_unsynced = not (created and self.durable)  # a durable create fsynced it

    def _drop(self) -> None:
        self._left_size = -1
        if self.fd is not None:
            fd, self.fd = self.fd, None
            os.close(fd)

    def __del__(self) -> None:
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass


class Locked:
    """The ``with`` block of :meth:`FileHandle.locked` and :meth:`FileHandle.try_locked`.

    Example:
        >>> with handle.locked(write=True, create=False) as fd:   # doctest: +SKIP
        ...     if fd != MISSING: os.ftruncate(fd, 0)
    """

    __slots__ = ("__weakref__", "_create", "_handle", "_timeout", "_token", "_write")

    def __init__(self, handle: FileHandle, write: bool, create: bool, timeout: float | None) -> None:
        self._handle = handle
        self._token = 0
        self._write, self._create, self._timeout = write, create, timeout
        self._token = next(TOKENS)

    def __enter__(self) -> int:
        handle = self._handle
        try:
            return handle.lock_waiting(self, self._token, self._write, self._create, self._timeout)
        except BaseException:
            handle.release(self._token)  # a signal handler raised after the lock was taken
            raise

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._handle.release(self._token)
