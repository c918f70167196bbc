"""Blocking writes to one session file whose descriptor the caller has already locked.

Everything that changes bytes on disk lives here, so the rules are in one place (reads are
in ``reads``, the line rules in ``scanner``):

* appends are one ``write`` of whole lines to an ``O_APPEND`` descriptor; if anything fails
  part-way the file is truncated back to its size before the call;
* ``pop`` truncates to the start of the last line, found by reading backwards, so its cost
  does not depend on the file's size; reading the newest n items works the same way;
* bytes after the last newline that are not a valid item are a *torn tail* (a writer was
  killed mid-write). Readers skip them; the next writer moves them to ``<file>.torn``
  and warns, so they are never glued to a new line and never thrown away;
* a deliberate rewrite goes to a temporary file that is renamed over the session.
"""

from __future__ import annotations

import errno
import os
import stat

from . import change_mark, codec, temp_files, undo_buffer
from .errors import OwnershipError, TornTailWarning, UnsafePathError, warn_at_caller
from .names import TORN_SUFFIX
from .reads import decode_at, newest_lines, read_tail
from .safe_open import fsync_directory
from .scanner import parse_item

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

    Lost = Callable[[bytes, int], object]  # storage.truncate's ``lost``

_fdatasync = getattr(os, "fdatasync", os.fsync)  # macOS has no fdatasync
_POP_BLOCK = 16 * 1024  # a pop reads this much of the end first: a last line shorter needs no second read


def append(fd: int, path: Path, payload: bytes, *, durable: bool, size: int | None = None) -> None:
    """Append ``payload`` (whole lines) in one write, repairing a missing newline or torn tail first."""
    if size is None:
        size = os.fstat(fd).st_size
    change_mark.ensure(fd)  # a file without a mark gets one, so followers can trust appends (see marks)
    if size and os.pread(fd, 1, size - 1) != b"\n":
        tail_offset, tail = read_tail(fd, size)
        if codec.is_blank(tail) or parse_item(tail) is not None:
            payload = b"\n" + payload  # a hand-edited last line without its newline
        else:
            size = _move_torn_tail(fd, path, tail_offset, tail, durable=durable)
    write_at_end(fd, payload, size, durable=durable)


def write_at_end(fd: int, payload: bytes, size_before: int, *, durable: bool) -> None:
    """Write ``payload`` to the end of the file, or leave the file at ``size_before`` and raise."""
    try:
        written = os.write(fd, payload)
        if written < len(payload):  # a short write: try the rest, which raises if the disk is full
            view = memoryview(payload)[written:]
            while view:
                view = view[os.write(fd, view) :]
        if durable:
            _fdatasync(fd)
    except BaseException:
        _undo_append(fd, size_before)
        raise


def write_rest(fd: int, payload: bytes, written: int, size_before: int) -> None:
    """After a short ``write`` of ``payload`` (``written`` bytes): the rest, or the file back at
    ``size_before`` and raise (the disk is full).

    For a caller that makes the first ``os.write`` itself (the async ``add_items``: a raised
    ``os.write`` wrote nothing, so only a short one needs this).
    """
    try:
        view = memoryview(payload)[written:]
        while view:
            view = view[os.write(fd, view) :]
    except BaseException:
        _undo_append(fd, size_before)
        raise


def sync_or_undo(fd: int, size_before: int) -> None:
    """``fdatasync`` an append; if that fails, cut the file back to ``size_before`` and raise.

    The async ``add_items`` writes on the loop and runs this in a worker thread.
    """
    try:
        _fdatasync(fd)
    except BaseException:
        _undo_append(fd, size_before)
        raise


def _undo_append(fd: int, size_before: int) -> None:
    """A short write (ENOSPC, EFBIG, EIO) or failed fsync: take back what did land so the
    file is exactly as before the call. Best effort: the original error wins."""
    try:
        os.ftruncate(fd, size_before)
    except OSError:
        pass


def pop(
    fd: int,
    path: Path,
    *,
    durable: bool,
    size: int | None = None,
    bump: Callable[[int], object] = change_mark.bump,
    lost: Lost | None = None,
) -> tuple[Any, int, bytes]:
    """Remove the newest item by truncating to the start of its line: the item (None when there
    is none), the file's size now and the item's line (without its newline, or a BOM before
    it), whose fingerprint finds its time. ``bump`` marks the change (``FileHandle.bump_mark``
    knows the file id already); ``lost`` as for :func:`truncate`."""
    if size is None:
        size = os.fstat(fd).st_size
    if not size:
        return None, 0, b""
    bump(fd)  # before the cut: followers must not take what follows for appends
    newest = _newest_line(fd, path, size)
    if newest is not None:
        item, offset, removed = newest
        _cut(fd, path, offset, size, removed[:-1], durable=durable, removed=removed, lost=lost)
        return item, offset, removed[:-1]
    tail_offset, tail = read_tail(fd, size)
    if not codec.is_blank(tail):
        item = parse_item(tail)
        if item is not None:
            _cut(fd, path, tail_offset, size, tail, durable=durable, lost=lost)
            return item, tail_offset, tail
        size = _move_torn_tail(fd, path, tail_offset, tail, durable=durable)
    lines, _, _ = newest_lines(fd, size, 1)
    if not lines:
        return None, size, b""
    offset, line = lines[-1]
    item = decode_at(fd, path, offset, line)
    _cut(fd, path, offset, size, line, durable=durable, lost=lost)
    return item, offset, line


def take_newest(
    fd: int, path: Path, size: int, bump: Callable[[int], object] = change_mark.bump
) -> tuple[Any, int, bytes] | None:
    """A durable pop's first half: the newest item, where its line starts and the bytes from there
    to the end, with the change mark bumped for the cut that :func:`truncate` (given those bytes)
    makes next; None, with nothing done, unless it is the common case :func:`pop` reads in one
    block and the line is an item (a bad line's error, which counts the lines to name it, is
    :func:`pop`'s).

    The async ``pop_item`` runs this on the loop (a read of at most 16 KiB and a parse), and the
    cut and its sync in a worker: the calls a worker makes just after it wakes cost several
    times what the loop's do (docs/benchmarks.md, "pop_item, durable"), and a cut of a big file
    takes ~200 µs.
    """
    newest = _newest_line(fd, path, size, quiet=True) if size else None
    if newest is not None:
        bump(fd)  # before the cut: followers must not take what follows for appends
    return newest


def _newest_line(fd: int, path: Path, size: int, *, quiet: bool = False) -> tuple[Any, int, bytes] | None:
    """The common case in one read of at most 16 KiB: the file ends with a newline, and the block
    read from its end holds the whole last line and the newline before it. The newest item, where
    its line starts, and the bytes from there to the end (what a durable cut keeps to put back);
    else None: a first line (which may start with a BOM), a longer one, a torn tail or blank
    lines take the general path. A line that is no item raises ``MalformedLineError``, or with
    ``quiet`` gives None."""
    begin = max(0, size - _POP_BLOCK)
    block = os.pread(fd, size - begin, begin)
    if len(block) == size - begin and block.endswith(b"\n"):
        start = block.rfind(b"\n", 0, -1) + 1
        if start:
            line = block[start:-1]
            if not codec.is_blank(line):
                offset = begin + start
                if not quiet:
                    return decode_at(fd, path, offset, line), offset, block[start:]
                try:
                    item = codec.decode_line(line)
                except ValueError:
                    return None
                return (item, offset, block[start:]) if type(item) is dict else None
    return None


def clear(
    fd: int,
    path: Path,
    *,
    durable: bool,
    size: int | None = None,
    bump: Callable[[int], object] = change_mark.bump,
) -> None:
    """Empty the file in place (it stays, so watchers and git see an empty session).

    A torn tail is moved to the sidecar first: clearing removes items, not evidence.
    """
    if size is None:
        size = os.fstat(fd).st_size
    if size:
        repair_tail(fd, path, durable=durable, size=size)
        bump(fd)
        _truncate(fd, path, 0, durable=durable)


def repair_tail(fd: int, path: Path, *, durable: bool, size: int | None = None) -> bytes | None:
    """Move a torn tail to the sidecar file; return the bytes moved, or None if there was none."""
    if size is None:
        size = os.fstat(fd).st_size
    if not size or os.pread(fd, 1, size - 1) == b"\n":
        return None
    tail_offset, tail = read_tail(fd, size)
    if codec.is_blank(tail) or parse_item(tail) is not None:
        return None
    _move_torn_tail(fd, path, tail_offset, tail, durable=durable)
    return tail


def replace(fd: int, path: Path, payload: bytes, *, durable: bool) -> None:
    """Atomically replace the file's content: write a temporary file, rename it over ``path``.

    The caller holds the lock on the old inode; processes waiting for it notice the rename
    (see ``locking``) and lock the new file instead. The old file's permissions are kept.
    A torn tail is saved to the sidecar first, as by every writer: the items being written
    never include it.
    """
    repair_tail(fd, path, durable=durable)
    held = os.fstat(fd)

    def like_the_old_file(temp_fd: int) -> None:
        _keep_owner(temp_fd, held, path)
        os.fchmod(temp_fd, held.st_mode & 0o777)
        change_mark.new_file(temp_fd)  # a new file id, even if it gets the old inode number

    replace_file(path, payload, durable=durable, prepare=like_the_old_file)


def replace_file(
    path: Path, payload: bytes, *, durable: bool, prepare: Callable[[int], None] | None = None
) -> None:
    """The one atomic replace, for session files and sidecars alike: nobody ever sees half of either.

    ``payload`` goes to a locked temporary file named by ``temp_files`` (so ``check`` knows
    what a killed writer leaves, and ``check --fix`` removes it), is synced, and is renamed
    over ``path``; then the folder is fsynced if ``durable``. ``prepare(temp_fd)`` runs first.
    """
    temp, temp_fd = temp_files.create_temp(path)
    try:
        try:
            if prepare is not None:
                prepare(temp_fd)
            # Always synced, even when not durable: a rename that reaches the disk before
            # the data would leave an empty file where the whole history was.
            write_at_end(temp_fd, payload, 0, durable=True)
            # Renamed while still open and locked: `check --fix` removes only a temporary
            # file nobody holds (see ``temp_files``). A symlink at ``path`` is replaced itself.
            os.replace(temp, path)
        finally:
            os.close(temp_fd)
    except BaseException:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass
        raise
    if durable:
        fsync_directory(path.parent)


def _keep_owner(temp_fd: int, held: os.stat_result, path: Path) -> None:
    """Give the new file the old one's owner and group, or refuse before anything is replaced.

    Run as root, a rewrite would otherwise hand the session to root (tests/core/test_ownership.py).
    """
    made = os.fstat(temp_fd)
    if (made.st_uid, made.st_gid) == (held.st_uid, held.st_gid):
        return
    try:
        os.fchown(temp_fd, held.st_uid, held.st_gid)
    except PermissionError:
        raise OwnershipError(
            path,
            f"is owned by uid {held.st_uid} (gid {held.st_gid}); rewriting it as uid {os.geteuid()} "
            "would change that and only root may give it back: run this as the file's owner",
        ) from None


def _move_torn_tail(fd: int, path: Path, offset: int, tail: bytes, *, durable: bool) -> int:
    """Save the torn bytes to the sidecar (durably, first), then cut them off the session.

    If we crash in between, the bytes are in both places and the next writer saves them
    again: a duplicate in the sidecar, never a loss.
    """
    sidecar = path.with_name(path.name + TORN_SUFFIX)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        side_fd = os.open(sidecar, flags, 0o600)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO):  # a planted symlink or FIFO
            raise UnsafePathError(sidecar, "is not a regular file; refusing to write through it") from None
        raise
    try:
        side_stat = os.fstat(side_fd)
        if not stat.S_ISREG(side_stat.st_mode):
            raise UnsafePathError(sidecar, "is not a regular file; refusing to write through it")
        side_size = side_stat.st_size
        write_at_end(side_fd, tail + b"\n", side_size, durable=durable)
    finally:
        os.close(side_fd)
    if durable and side_size == 0:
        fsync_directory(path.parent)  # the new sidecar's name must survive before we truncate
    _truncate(fd, path, offset, durable=durable)
    warn_at_caller(
        TornTailWarning(
            f"{path}: moved a partial last line ({len(tail)} bytes, left by an interrupted "
            f"write) to {sidecar}"
        )
    )
    return offset


def _truncate(
    fd: int, path: Path | None, size: int, *, durable: bool, removed: bytes | None = None, end: int = -1
) -> None:
    """Cut the file to ``size``; if the cut cannot be made durable, put the bytes back and raise.

    As for appends, a failed fsync leaves the file as it was: pop and clear never raise
    with their bytes already gone (tests/reliability/test_faults.py). The bytes are kept by
    ``undo_buffer.Removed``, on disk when large, so a clear needs no memory for them; a caller
    that has read them already (a pop) passes them as ``removed``, the bytes ``size:end``.
    """
    if not durable:
        os.ftruncate(fd, size)
        return
    if removed is not None:
        kept = undo_buffer.Removed(fd, None, size, end, data=removed)
    else:
        kept = undo_buffer.Removed(fd, path.parent if path is not None else None, size, os.fstat(fd).st_size)
    try:
        os.ftruncate(fd, size)
        try:
            _fdatasync(fd)
        except BaseException:
            try:
                kept.restore(fd)
            except OSError:
                pass  # best effort: the original error wins
            raise
    finally:
        kept.close()


def truncate(
    fd: int, size: int, *, durable: bool, removed: bytes | None = None, lost: Lost | None = None
) -> None:
    """Cut the file to ``size`` bytes; if that cannot be made durable, the bytes go back and it raises.

    The removed bytes are kept in memory (callers cut a few turns); ``pop`` and ``clear``
    spill big ones next to the session instead (see ``undo_buffer``). ``removed``: those bytes,
    when the caller has read them (:func:`take_newest`), one line. ``lost(line, size)`` is
    called if that line was cut and could not be put back either (the disk refused it): a pop's
    ``TimesLog.forget_popped``, so that no record outlives its line.
    """
    if removed is None:
        _truncate(fd, None, size, durable=durable)
    else:
        _cut(fd, None, size, size + len(removed), removed[:-1], durable=durable, removed=removed, lost=lost)


def _cut(
    fd: int,
    path: Path | None,
    offset: int,
    end: int,
    line: bytes,
    *,
    durable: bool,
    removed: bytes | None = None,
    lost: Lost | None = None,
) -> None:
    """:func:`_truncate` of the one ``line`` from ``offset`` to ``end``; ``lost(line, offset)`` if
    that raised with the line neither kept nor put back."""
    try:
        _truncate(fd, path, offset, durable=durable, removed=removed, end=end)
    except BaseException:
        if lost is not None and _size_or_none(fd) != end:
            lost(line, offset)
        raise


def _size_or_none(fd: int) -> int | None:
    try:
        return os.fstat(fd).st_size
    except OSError:
        return None
