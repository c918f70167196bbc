"""Open a session file once, and lock it for each operation on the file its path names *now*.

The lock is a ``flock`` on the data file itself, so no lock file ever appears next to the
sessions (nothing for ``git add sessions/`` to pick up). Writers take it exclusively,
readers shared, so a reader never sees half of an ``add_items`` call or a ``pop_item``
mid-truncation.

One descriptor is kept open per session object and process: reopening costs more than the
append itself. Keeping it raises two races, both handled after the lock is taken:

* an editor or ``git checkout`` may have replaced the file (renamed a new inode over the
  path), or someone deleted it: the path then names another inode, or none, so we drop
  ours and open the path again.
  Our own atomic rewrites rely on the same check to hand waiting processes the new file;
* ``flock`` locks belong to the open file description, which threads (and a forked child)
  share, so a ``threading.Lock`` serialises the threads of one process, and a child
  process opens its own descriptor.
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import os
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import filelock

from .errors import LockTimeout, UnsafePathError

_OPEN_FLAGS = os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK  # NONBLOCK: never hang on a FIFO
_WRITE_FLAGS = _OPEN_FLAGS | os.O_RDWR | os.O_APPEND
_READ_FLAGS = _OPEN_FLAGS | os.O_RDONLY
# Polling backoff while another process holds the lock: first retry after 0.2 ms (an
# append holds it for microseconds), then doubling up to 5 ms so waiting costs little CPU.
DEFAULT_LOCK_TIMEOUT = 10.0
"""Seconds to wait for another process's lock before :class:`LockTimeout` (never forever)."""
_FIRST_DELAY = 0.0002
_MAX_DELAY = 0.005


def backoff_delays() -> Iterator[float]:
    """Waits between attempts on a lock held elsewhere: 0.2 ms, doubling up to 5 ms."""
    delay = _FIRST_DELAY
    while True:
        yield delay
        delay = min(delay * 2, _MAX_DELAY)


BUSY = -1
"""Returned by :meth:`FileHandle.try_acquire` when the lock is held elsewhere."""

# Bumped in every forked child, so handles notice they were inherited (cheaper than getpid()).
_fork_generation = 0


def _after_fork_in_child() -> None:
    global _fork_generation
    _fork_generation += 1


os.register_at_fork(after_in_child=_after_fork_in_child)


class FileHandle:
    """The cached descriptor of one session file, and the lock protocol around it."""

    def __init__(self, path: Path, *, durable: bool = True) -> None:
        self.path = path
        self.durable = durable
        self._fd: int | None = None
        self._writable = False
        self._identity = (0, 0)
        self.size = 0
        """The file's size, read under the lock by the last successful acquire."""
        self._generation = _fork_generation
        self._mutex = threading.Lock()
        self._owner = 0  # thread holding the mutex, to refuse a same-thread deadlock

    def try_acquire(self, *, write: bool, create: bool) -> int:
        """Lock the file without waiting.

        Returns:
            The locked descriptor (call :meth:`release` when done), ``BUSY`` when another
            thread or process holds a conflicting lock, or ``MISSING`` when the file does
            not exist and ``create`` is false (nothing is held then).
        """
        if self._generation != _fork_generation:
            self._forget_after_fork()
        if not self._mutex.acquire(blocking=False):
            return BUSY
        locked_fd = None
        try:
            for _ in range(100):  # each retry means the file was replaced under us: rare
                fd = self._descriptor(write=write, create=create)
                if fd == MISSING or not _lock_nonblocking(fd, write=write):
                    self._mutex.release()
                    return BUSY if fd != MISSING else MISSING
                locked_fd = fd
                if self._still_current(fd):
                    self._owner = threading.get_ident()
                    return fd
                _unlock(fd)
                locked_fd = None
                self._drop()
            self._mutex.release()
            return BUSY
        except BaseException:
            # Never leave the file locked (or the mutex held) behind an error: other
            # processes would wait for a lock nobody is going to release.
            if locked_fd is not None:
                _unlock(locked_fd)
            self._mutex.release()
            raise

    def acquire(self, *, write: bool, create: bool, timeout: float) -> int:
        """Like :meth:`try_acquire`, but wait up to ``timeout`` seconds; raises :class:`LockTimeout`."""
        fd = self.try_acquire(write=write, create=create)
        if fd != BUSY:
            return fd
        if self._mutex.locked() and self._owner == threading.get_ident():
            raise RuntimeError(
                f"{self.path}: this thread already holds the session's lock (a call inside "
                "session.rewrite()?); waiting for it would deadlock"
            )
        deadline = time.monotonic() + timeout
        for delay in backoff_delays():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            time.sleep(min(delay, remaining))
            fd = self.try_acquire(write=write, create=create)
            if fd != BUSY:
                return fd
        raise LockTimeout(self.path, timeout)

    async def acquire_async(self, *, write: bool, create: bool, timeout: float) -> int:
        """The asynchronous equivalent of :meth:`acquire`: waits with ``asyncio.sleep``.

        The first attempt is inline, so the uncontended path costs no thread hand-off and
        no extra turn of the loop; the loop never blocks while another process holds the lock.
        """
        fd = self.try_acquire(write=write, create=create)
        if fd != BUSY:
            return fd
        deadline = time.monotonic() + timeout
        for delay in backoff_delays():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            await asyncio.sleep(min(delay, remaining))
            fd = self.try_acquire(write=write, create=create)
            if fd != BUSY:
                return fd
        raise LockTimeout(self.path, timeout)

    def release(self, *, invalidate: bool = False) -> None:
        """Unlock. ``invalidate`` after replacing or deleting the file: the next call reopens."""
        try:
            if self._fd is not None:
                # Unlock explicitly even when closing: a forked child shares the open file
                # description, and with it the lock, until it exits; holders of the old
                # inode would wait for it (tests/reliability/test_crash_loop.py).
                _unlock(self._fd)
                if invalidate:
                    self._drop()
        finally:
            self._owner = 0
            self._mutex.release()

    def close(self) -> None:
        """Close the cached descriptor (it is reopened if the handle is used again)."""
        if self._generation != _fork_generation:
            self._forget_after_fork()
        with self._mutex:
            self._drop()

    def _descriptor(self, *, write: bool, create: bool) -> int:
        if self._fd is not None and (self._writable or not write):
            return self._fd
        self._drop()
        fd, writable = _open(self.path, write=write, create=create, durable=self.durable)
        if fd != MISSING:
            held = os.fstat(fd)
            self._fd, self._writable, self._identity = fd, writable, (held.st_dev, held.st_ino)
        return fd

    def _still_current(self, fd: int) -> bool:
        """True when the path still names the inode we hold (checked after locking).

        A ``stat`` of the path (not an ``fstat`` of the descriptor, whose link count would
        miss a replaced file that is hard-linked elsewhere) also gives the size we need.
        """
        try:
            now = os.stat(self.path, follow_symlinks=False)
        except FileNotFoundError:
            return False
        self.size = now.st_size
        return (now.st_dev, now.st_ino) == self._identity

    def _drop(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def _forget_after_fork(self) -> None:
        # The inherited descriptor shares its open file description, and so its lock, with
        # the parent: never unlock it, but close our copy so that, should the parent die,
        # this child does not keep a lock alive. The parent's threads, and with them any
        # holder of the mutex, do not exist here: start with a fresh one.
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
        self._fd = None
        self._mutex = threading.Lock()
        self._owner = 0
        self._generation = _fork_generation

    def __del__(self) -> None:
        if self._fd is not None and self._generation == _fork_generation:
            try:
                os.close(self._fd)
            except OSError:
                pass


MISSING = -2
"""Returned by :meth:`FileHandle.try_acquire` when the file does not exist and ``create`` is false."""


def fsync_directory(directory: Path) -> None:
    """Make a file's creation, rename or removal durable (its directory entry lives here)."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _open(path: Path, *, write: bool, create: bool, durable: bool) -> tuple[int, bool]:
    """Open for reading and writing if we may (read-only files still read); create if asked."""
    try:
        try:
            fd, writable = os.open(path, _WRITE_FLAGS), True
        except OSError as exc:
            # A read-only file, folder or file system still reads.
            if write or exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise
            fd, writable = os.open(path, _READ_FLAGS), False
    except FileNotFoundError:
        if not create:
            return MISSING, False
        fd = _create(path, durable=durable)
        if fd == MISSING:  # someone else created it first: open theirs
            return _open(path, write=write, create=create, durable=durable)
        writable = True
    except OSError as exc:
        raise _explain_open_error(path, exc) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafePathError(path, "is not a regular file; refusing to use it as a session")
    except BaseException:
        os.close(fd)
        raise
    return fd, writable


def _create(path: Path, *, durable: bool) -> int:
    """Create the file owner-only (and its directory, 0700), or return MISSING if it now exists."""
    directory = path.parent
    if not directory.is_dir():
        make_private_directories(directory, durable=durable)
    try:
        fd = os.open(path, _WRITE_FLAGS | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return MISSING
    except OSError as exc:
        raise _explain_open_error(path, exc) from None
    if durable:
        fsync_directory(directory)
    return fd


def make_private_directories(directory: Path, *, durable: bool) -> None:
    """Create ``directory`` and any missing parents, each 0700, and make their entries durable.

    ``os.makedirs(mode=...)`` applies the mode to the last folder only.
    """
    missing = []
    current = directory
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            continue  # another process made it first
        if durable:
            fsync_directory(folder.parent)


def _explain_open_error(path: Path, exc: OSError) -> Exception:
    if exc.errno == errno.ELOOP:
        return UnsafePathError(path, "is a symlink; refusing to follow it out of the sessions folder")
    return exc


def _lock_nonblocking(fd: int, *, write: bool) -> bool:
    if write:
        return filelock.lock_descriptor(fd, blocking=False)
    # filelock has no shared lock on a descriptor; readers use flock's LOCK_SH directly.
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _unlock(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_UN)
