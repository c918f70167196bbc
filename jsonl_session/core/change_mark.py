"""A cheap mark on each session file that changes whenever the library does more than append.

Followers (``watch``) must know whether a file was only appended to since they last looked:
then reading the new bytes is enough. Proving that from the bytes alone means comparing the
whole file, so every write that is *not* an append leaves a mark instead, an extended
attribute ``user.jsonl_session.mark`` of 16 bytes:

* bytes 0-7, the *file id*: random, written on each new file (the temporary copy that
  ``replace`` renames over the session; the first append to a file without a mark). A new
  file whose inode number is an old one's (ext4 reuses freed numbers at once) still differs;
* bytes 8-15, the *generation*: new on every ``pop`` and ``clear`` (a random start per process).

A follower that finds the same inode and the same mark knows only appends happened, and
reads only the new bytes. Anything else (no mark, another mark, another inode) makes it
compare the whole file. File systems without user extended attributes (some network and
FUSE file systems) just have no marks: followers then always compare, which is correct
and costs a read of the file per wake-up. Marks are hints for live followers, not data: they
are not fsynced and nothing else reads them.
"""

from __future__ import annotations

import errno
import itertools
import os

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from collections.abc import Iterator

NAME = "user.jsonl_session.mark"
SIZE = 16
_UNSUPPORTED = (errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM, errno.EACCES, errno.EROFS, errno.ENOSPC)

_getxattr = getattr(os, "getxattr", None)  # Linux only; elsewhere there are no marks
_setxattr = getattr(os, "setxattr", None)
_removexattr = getattr(os, "removexattr", None)
_STEP = 0x9E3779B97F4A7C15  # odd, so 2**64 steps pass before a generation comes back
_MASK = (1 << 64) - 1
_generations: Iterator[int] | None = None  # this process's; None: not started (a forked child)


def _new_generation() -> bytes:
    """A generation no earlier mark of this process had: a random start, then fixed steps.

    Not ``os.urandom`` per mark: a durable pop marks the file just after its worker thread
    wakes, where each system call costs ~3-5 µs (``benchmarks/run.py``). Another process starts
    from its own random point, so it repeats a generation of this one with odds of 2**-64.
    ``next`` on a ``count`` is one step even without a GIL: two threads never get one value.
    """
    global _generations
    generations = _generations
    if generations is None:
        generations = _generations = itertools.count(int.from_bytes(os.urandom(8), "little"), _STEP)
    return (next(generations) & _MASK).to_bytes(8, "little")


def _start_afresh() -> None:
    global _generations
    _generations = None  # else parent and child would write the same generations


os.register_at_fork(after_in_child=_start_afresh)


def read(fd: int) -> bytes | None:
    """The file's mark, or None (none written yet, or no extended attributes here)."""
    if _getxattr is None:
        return None
    try:
        value: bytes = _getxattr(fd, NAME)
    except OSError:
        return None
    return value if len(value) == SIZE else None


def new_file(fd: int) -> None:
    """Give a new file (or one without a mark) a fresh file id and generation."""
    _write(fd, os.urandom(SIZE))


def ensure(fd: int) -> None:
    """Mark a file that has no mark yet (one ``getxattr`` when it has one: cheap for appends)."""
    if _getxattr is not None and read(fd) is None:
        new_file(fd)


def bump(fd: int, file_id: bytes | None = None) -> bytes:
    """Record a change other than an append (pop, clear): same file id, new generation.

    Returns the file id, which only a new file changes: a caller that keeps the file open
    passes it back next time (``FileHandle.bump_mark``), and the mark is not read again.
    """
    if file_id is None:
        current = read(fd)
        file_id = current[:8] if current is not None else os.urandom(8)
    _write(fd, file_id + _new_generation())
    return file_id


def _write(fd: int, value: bytes) -> None:
    if _setxattr is None:
        return
    try:
        _setxattr(fd, NAME, value)
    except OSError as exc:
        if exc.errno not in _UNSUPPORTED:
            raise
        # No user xattrs here (or no room for one): followers compare instead, provided no
        # stale mark is left that would vouch for appends only. Callers mark *before* they
        # change the file, so if even that fails the change is refused with nothing done.
        try:
            if _removexattr is not None:
                _removexattr(fd, NAME)
        except OSError as again:
            if again.errno not in (errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP):
                raise exc from None
