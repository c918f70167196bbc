"""Blocking operations on one session file whose descriptor the caller has already locked.

Everything that reads or changes bytes on disk lives here, so the rules are in one place:

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
import warnings

from . import change_mark as marks
from . import codec
from . import temp_files as leftovers
from . import undo_buffer as spill
from .errors import MalformedLineError, OwnershipError, TornTailWarning, UnsafePathError
from .names import TORN_SUFFIX
from .safe_open import fsync_directory

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path
    from typing import Any

# First read from the end: enough for the last line, or for ``limit`` lines of a typical
# size (a chat item is 300-600 bytes); a block that holds too few lines is read again 4x larger.
_TAIL_CHUNK = 4 * 1024
_BYTES_PER_LINE_GUESS = 1024
_MAX_CHUNK = 1024 * 1024
_SNIPPET = 60
_SPLIT_PIECE = 1024 * 1024
# Lines parsed between two young-generation collections during a full read. One pause over
# 100,000 items left ~300,000 young objects for the first collection after it, which held
# the GIL (and stalled an event loop waiting on the worker thread) for 50-250 ms; a
# collection every 4,096 items costs a few ms each and the read got ~10% faster (measured,
# benchmarks/loop_lag.py "stall during a full read").
_PARSE_PIECE = 4096

_fdatasync = getattr(os, "fdatasync", os.fsync)  # macOS has no fdatasync


def read_items(fd: int, path: Path, limit: int | None = None, *, size: int | None = None) -> list[Any]:
    """Return the newest ``limit`` items (all when None), oldest first.

    ``size`` is the file size the caller saw under the lock (saves an ``fstat``).
    """
    if size is None:
        size = os.fstat(fd).st_size
    if limit is None:
        return _read_all(fd, path, size)
    if limit <= 0 or size == 0:
        return []
    items = _newest_items_quickly(fd, size, limit)
    if items is not None:
        return items
    lines, tail_item, _ = _newest_lines(fd, size, limit)
    decode = codec.decoder_for(b"\n".join(line for _, line in lines))
    items = [_decode(fd, path, offset, line, decode) for offset, line in lines]
    if tail_item is not None:
        items.append(tail_item)
    return items


def _newest_items_quickly(fd: int, size: int, count: int) -> list[Any] | None:
    """``read_items(limit)`` for the usual file, in one pass of C calls; None means "go the careful way".

    The usual file ends with a newline and its newest lines are items. Anything else (a
    blank or bad line, a torn tail, fewer lines than wanted in one block) takes the careful
    path, which also knows line numbers for errors. A good part of a ``get_items(limit=20)``
    was that per-line bookkeeping (``benchmarks/loop_lag.py``).
    """
    begin = max(0, size - max(_TAIL_CHUNK, count * _BYTES_PER_LINE_GUESS))
    _, data = _read_block(fd, begin, size)
    lines = data.split(b"\n")
    if lines.pop():
        return None  # no newline at the end: an unterminated or torn last line
    picked = lines[-count:]
    if begin and len(picked) >= len(lines):
        return None  # the block may have cut the oldest line wanted, or holds too few
    if not picked:
        return []
    loads = codec.decoder_for(b"\n".join(picked))
    try:
        items = [loads(line) for line in picked]
    except ValueError:
        return None  # a blank or bad line: the careful path skips or names it
    return items if set(map(type, items)) == {dict} else None


def append(fd: int, path: Path, payload: bytes, *, durable: bool, size: int | None = None) -> None:
    """Append ``payload`` (whole lines) in one write, repairing a missing newline or torn tail first."""
    if size is None:
        size = os.fstat(fd).st_size
    marks.ensure(fd)  # a file without a mark gets one, so followers can trust appends (see marks)
    if size and os.pread(fd, 1, size - 1) != b"\n":
        tail_offset, tail = _tail(fd, size)
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


def pop(fd: int, path: Path, *, durable: bool, size: int | None = None) -> Any:
    """Remove the newest item by truncating to the start of its line; None when there is none."""
    if size is None:
        size = os.fstat(fd).st_size
    if not size:
        return None
    marks.bump(fd)  # before the cut: followers must not take what follows for appends
    tail_offset, tail = _tail(fd, size)
    if not codec.is_blank(tail):
        item = parse_item(tail)
        if item is not None:
            _truncate(fd, path, tail_offset, durable=durable)
            return item
        size = _move_torn_tail(fd, path, tail_offset, tail, durable=durable)
    lines, _, _ = _newest_lines(fd, size, 1)
    if not lines:
        return None
    offset, line = lines[-1]
    item = _decode(fd, path, offset, line)
    _truncate(fd, path, offset, durable=durable)
    return item


def clear(fd: int, path: Path, *, durable: bool, size: int | None = None) -> None:
    """Empty the file in place (it stays, so watchers and git see an empty session).

    A torn tail is moved to the sidecar first: clearing removes items, not evidence.
    """
    if size is None:
        size = os.fstat(fd).st_size
    if size:
        repair_tail(fd, path, durable=durable, size=size)
        marks.bump(fd)
        _truncate(fd, path, 0, durable=durable)


def repair_tail(fd: int, path: Path, *, durable: bool, size: int | None = None) -> bytes | None:
    """Move a torn tail to the sidecar file; return the bytes moved, or None if there was none."""
    if size is None:
        size = os.fstat(fd).st_size
    if not size or os.pread(fd, 1, size - 1) == b"\n":
        return None
    tail_offset, tail = _tail(fd, size)
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
    temp, temp_fd = leftovers.create_temp(path)
    try:
        try:
            _keep_owner(temp_fd, held, path)
            os.fchmod(temp_fd, held.st_mode & 0o777)
            marks.new_file(temp_fd)  # a new file id, even if it gets the old inode number
            # Always synced, even when not durable: a rename that reaches the disk before
            # the data would leave an empty file where the whole history was.
            write_at_end(temp_fd, payload, 0, durable=True)
            # Renamed while still open and locked: `check --fix` removes only a temporary
            # file nobody holds (see ``leftovers``).
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

    Run as root, a rewrite used to hand the session to root (tests/core/test_ownership.py).
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


class Line:
    """One non-blank line of a session file, as :func:`scan_lines` finds it.

    ``Line`` and ``Scan`` are plain classes with slots rather than dataclasses: importing
    ``dataclasses`` (it brings ``inspect``) cost about 12 ms of every command's start-up,
    and ``check`` and the watcher make one ``Line`` per line.
    """

    __slots__ = ("data", "end", "number", "start")

    def __init__(self, number: int, start: int, end: int, data: bytes) -> None:
        self.number = number
        """1-based line number in the file (blank lines count, as an editor shows them)."""
        self.start = start
        """Offset of its first byte in the file (after a BOM)."""
        self.end = end
        """Offset just past its last byte; the newline is not included (a CR before it is)."""
        self.data = data

    def __repr__(self) -> str:
        return f"Line(number={self.number}, start={self.start}, end={self.end}, data={self.data!r})"


class Scan:
    """What :func:`scan_lines` found in a run of bytes."""

    __slots__ = ("consumed", "lines", "newlines", "pending")

    def __init__(self, lines: list[Line], consumed: int, newlines: int, pending: bytes) -> None:
        self.lines = lines
        """Non-blank complete lines, then an unterminated last line if it is an item."""
        self.consumed = consumed
        """Offset up to which the bytes are settled: after the last newline, or after a valid last line."""
        self.newlines = newlines
        """Newlines before ``consumed`` (line numbers after it continue from ``newlines + 1``)."""
        self.pending = pending
        """What follows ``consumed``: a line still being written or a torn tail (``b""`` if none)."""

    def __repr__(self) -> str:
        return (
            f"Scan(lines={self.lines!r}, consumed={self.consumed}, "
            f"newlines={self.newlines}, pending={self.pending!r})"
        )


def scan_lines(data: bytes, *, offset: int = 0, first_number: int = 1) -> Scan:
    """Split bytes of a session file into lines, by the format's rules, in one place.

    ``data`` are the file's bytes from ``offset`` (0: the whole file) to some end. A BOM at
    offset 0 is skipped; blank lines (whitespace, CRLF leftovers) are counted but not
    returned; bytes after the last newline are a line only if they already form an item
    (a valid last line without its newline, as ``get_items`` reads it), and otherwise a line
    still being written or a torn tail, returned as ``pending``. Used by the watcher,
    ``check``, ``grep`` and the secrets scanner, so they all agree with ``get_items``.

    Example:
        >>> scan = scan_lines(b'{"a": 1}\r\n\n{"b"')
        >>> [(line.number, line.data) for line in scan.lines], scan.consumed, scan.pending
        ([(1, b'{"a": 1}\r')], 11, b'{"b"')
    """
    base = offset
    if offset == 0 and data.startswith(codec.BOM):
        data = data[len(codec.BOM) :]
        base = len(codec.BOM)
    lines: list[Line] = []
    append = lines.append
    is_blank = codec.is_blank
    number = first_number
    position = 0
    find = data.find
    while True:
        newline = find(b"\n", position)
        if newline < 0:
            break
        line = data[position:newline]
        if line and not is_blank(line):
            append(Line(number, base + position, base + newline, line))
        number += 1
        position = newline + 1
    consumed = base + position
    pending = data[position:]
    if pending and not is_blank(pending) and parse_item(pending) is not None:
        lines.append(Line(number, consumed, base + len(data), pending))
        consumed, pending = base + len(data), b""
    return Scan(lines, consumed, number - first_number, pending)


def scan_file(fd: int, size: int) -> Iterator[Scan]:
    """The first ``size`` bytes as :func:`scan_lines` splits them, about 1 MB at a time.

    For whole-file checks of any size: memory holds one piece plus the longest line. Every
    scan but the last ends at a newline; the last one has the unterminated tail and applies
    the end-of-file rule to it, so the lines are exactly those of ``scan_lines`` on the whole.

    Example:
        >>> [len(scan.lines) for scan in scan_file(fd, size)]   # doctest: +SKIP
        [2150, 2149, 1021]
    """
    pieces: list[bytes] = []  # a line not yet ended, when a piece holds no newline
    start = position = 0  # file offsets: of pieces[0], and of the next byte to read
    number = 1
    while position < size:
        piece = read_range(fd, position, min(size, position + _SPLIT_PIECE))
        if not piece:
            break  # shorter than ``size`` after all: scan what there is
        position += len(piece)
        newline = piece.rfind(b"\n")
        if newline < 0:
            pieces.append(piece)
            continue
        pieces.append(piece[: newline + 1])
        data = b"".join(pieces)
        scan = scan_lines(data, offset=start, first_number=number)
        yield scan
        start += len(data)
        number += scan.newlines
        pieces = [piece[newline + 1 :]]
    yield scan_lines(b"".join(pieces), offset=start, first_number=number)


def count_items(fd: int) -> int:
    """Non-blank complete lines, plus an unterminated last line if it is an item (torn tails are not).

    Lines are counted, not parsed, so listing a folder stays cheap: ``check`` finds bad lines.
    The file is read in pieces of ``_MAX_CHUNK``: reading it whole made ``ls`` of a 300 MB
    session peak near 600 MB (tests/project/test_memory.py).
    """
    count = 0
    position = 0
    pending: list[bytes] = []  # pieces of the line still unfinished at the end of the last read
    while True:
        raw = os.pread(fd, _MAX_CHUNK, position)
        if not raw:
            break
        chunk = raw.removeprefix(codec.BOM) if position == 0 else raw
        position += len(raw)
        newline = chunk.find(b"\n")
        if newline < 0:
            pending.append(chunk)  # a long line: kept in pieces, joined only if it is the last
            continue
        pending.append(chunk[:newline])
        if not all(codec.is_blank(piece) for piece in pending):
            count += 1
        lines = chunk[newline + 1 :].split(b"\n")
        pending = [lines.pop()]
        count += sum(1 for line in lines if not codec.is_blank(line))
    tail = b"".join(pending)
    if not codec.is_blank(tail) and parse_item(tail) is not None:
        count += 1
    return count


def line_number(fd: int, offset: int) -> int:
    """The 1-based line number of the line starting at ``offset`` (costs a scan; errors only)."""
    newlines = 0
    position = 0
    while position < offset:
        chunk = os.pread(fd, min(_MAX_CHUNK, offset - position), position)
        if not chunk:
            break
        newlines += chunk.count(b"\n")
        position += len(chunk)
    return newlines + 1


def describe_bad_line(line: bytes) -> str | None:
    """Why ``line`` is not a valid item, or None if it is one (used by readers and ``check``)."""
    try:
        value = codec.decode_line(line)
    except ValueError as exc:
        return f"not valid JSON ({exc}): {_snippet(line)}"
    if not isinstance(value, dict):
        return f"not a JSON object (a {type(value).__name__}): {_snippet(line)}"
    return None


def _read_all(fd: int, path: Path, size: int) -> list[Any]:
    lines, long_numbers = read_lines(fd, size)
    loads = codec.decoder(long_numbers=long_numbers)
    tail = lines.pop()
    items: list[Any] = []
    careful = False
    in_pieces = len(lines) > _PARSE_PIECE  # a small read pauses the GC once, as before
    for start in range(0, len(lines), _PARSE_PIECE):
        with codec.gc_paused(young_collection_after=in_pieces):
            # Fast path: one list comprehension, no per-line bookkeeping (about half the cost
            # of the loop below). A blank or bad line sends the whole file down the careful
            # path, which also knows the line numbers for the error.
            try:
                piece = [loads(line) for line in lines[start : start + _PARSE_PIECE]]
            except ValueError:
                piece = None
            if piece is None or (piece and set(map(type, piece)) != {dict}):
                careful = True
                break
            items.extend(piece)
    if careful:
        with codec.gc_paused():
            items = _read_lines_carefully(lines, path, loads)
    if not codec.is_blank(tail):
        item = parse_item(tail)
        if item is not None:
            items.append(item)
    return items


def read_lines(fd: int, size: int) -> tuple[list[bytes], bool]:
    """The file's lines (BOM stripped; the last is what follows the last newline), read and
    split ``_SPLIT_PIECE`` bytes at a time, and whether any holds a 19+ digit run.

    One ``split`` of a 45 MB file holds the GIL for tens of milliseconds, stalling the event
    loop even when the read runs in a worker thread; a piece at a time, the loop gets its turn
    (benchmarks/loop_lag.py measures the longest stall). Reading piece by piece also spares
    copying a whole-file buffer, and the digit check runs on each piece while it is in cache.
    """
    lines: list[bytes] = []
    unfinished: list[bytes] = []  # the line still open at the end of the last piece, in fragments
    long_numbers = False
    previous_end = b""
    for start in range(0, size, _SPLIT_PIECE):
        piece = read_range(fd, start, min(size, start + _SPLIT_PIECE))
        if not piece:
            break  # the file shrank under a lock-free reader: what was read is what there is
        if start == 0:
            piece = piece.removeprefix(codec.BOM)
        if not long_numbers:
            # Each piece is checked whole; a run cut by the boundary is under 19 digits on
            # each side, so the last 18 bytes read before it and the first 18 after hold it.
            long_numbers = codec.has_long_digit_run(piece) or codec.has_long_digit_run(
                previous_end + piece[:18]
            )
            previous_end = (previous_end + piece[-18:])[-18:]
        parts = piece.split(b"\n")
        if len(parts) == 1:  # no newline: a long line goes on (joined once, at its end)
            unfinished.append(piece)
            continue
        if unfinished:
            unfinished.append(parts[0])
            parts[0] = b"".join(unfinished)
        unfinished = [parts.pop()]
        lines.extend(parts)
    lines.append(b"".join(unfinished))
    return lines, long_numbers


def _read_lines_carefully(lines: list[bytes], path: Path, loads: Any) -> list[Any]:
    """Skip blank lines; raise :class:`MalformedLineError` with the number of the first bad one."""
    items: list[Any] = []
    for number, line in enumerate(lines, 1):
        try:
            item = loads(line)
        except ValueError:
            item = None
        if type(item) is dict:
            items.append(item)
        elif not codec.is_blank(line):
            raise MalformedLineError(path, describe_bad_line(line) or "invalid line", number)
    return items


def _decode(fd: int, path: Path, offset: int, line: bytes, decode: Any = codec.decode_line) -> Any:
    if offset == 0 and line.startswith(codec.BOM):
        line = line[len(codec.BOM) :]
    problem = None
    try:
        item = decode(line)
    except ValueError:
        problem = describe_bad_line(line)
    else:
        if type(item) is dict:
            return item
        problem = describe_bad_line(line)
    raise MalformedLineError(path, problem or "invalid line", line_number(fd, offset))


def parse_item(line: bytes) -> Any:
    """The item on ``line`` (a JSON object), or None: blank, torn, malformed or not an object.

    Used for the bytes after the last newline (None there means a torn tail) and by the
    watcher and ``check``. Callers have already skipped a BOM at the file's start; one
    anywhere else makes the bytes torn, not an item (after the next append's newline it
    would be a bad line).
    """
    try:
        item = codec.decode_line(line)
    except ValueError:
        return None
    return item if type(item) is dict else None


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
    warnings.warn(
        TornTailWarning(
            f"{path}: moved a partial last line ({len(tail)} bytes, left by an interrupted "
            f"write) to {sidecar}"
        ),
        stacklevel=4,
    )
    return offset


def _truncate(fd: int, path: Path | None, size: int, *, durable: bool) -> None:
    """Cut the file to ``size``; if the cut cannot be made durable, put the bytes back and raise.

    As for appends, a failed fsync leaves the file as it was: pop and clear used to raise
    with their bytes already gone (tests/reliability/test_faults.py). The bytes are kept by
    ``spill.Removed``, on disk when large, so a clear needs no memory for them.
    """
    if not durable:
        os.ftruncate(fd, size)
        return
    removed = spill.Removed(fd, path.parent if path is not None else None, size, os.fstat(fd).st_size)
    try:
        os.ftruncate(fd, size)
        try:
            _fdatasync(fd)
        except BaseException:
            try:
                removed.restore(fd)
            except OSError:
                pass  # best effort: the original error wins
            raise
    finally:
        removed.close()


def newest_lines(fd: int, size: int, count: int) -> tuple[list[tuple[int, bytes]], Any, int]:
    """The newest ``count`` complete non-blank lines as ``(offset, line)``, oldest first.

    Also the item on an unterminated last line (or None) and where that line starts. The
    cost is proportional to ``count``, not to the file (used by turn-aware reads and rewind).
    """
    return _newest_lines(fd, size, count)


def truncate(fd: int, size: int, *, durable: bool) -> None:
    """Cut the file to ``size`` bytes; if that cannot be made durable, the bytes go back and it raises.

    The removed bytes are kept in memory (callers cut a few turns); ``pop`` and ``clear``
    spill big ones next to the session instead (see ``spill``).
    """
    _truncate(fd, None, size, durable=durable)


def read_range(fd: int, start: int, end: int) -> bytes:
    """Bytes ``start:end`` of the file, in as many ``pread`` calls as the kernel needs."""
    chunks = []
    position = start
    while position < end:
        chunk = os.pread(fd, min(end - position, 1 << 30), position)
        if not chunk:
            break
        chunks.append(chunk)
        position += len(chunk)
    return b"".join(chunks)


def _tail(fd: int, size: int) -> tuple[int, bytes]:
    """The offset and bytes of what follows the last newline (``b""`` when the file ends with one)."""
    chunk = _TAIL_CHUNK
    while True:
        begin = max(0, size - chunk)
        start, data = _read_block(fd, begin, size)
        newline = data.rfind(b"\n")
        if newline >= 0:
            return start + newline + 1, data[newline + 1 :]
        if begin == 0:
            return start, data
        chunk = min(chunk * 4, _MAX_CHUNK) if chunk < _MAX_CHUNK else chunk * 2


def _newest_lines(fd: int, size: int, count: int) -> tuple[list[tuple[int, bytes]], Any, int]:
    """The newest ``count`` non-blank complete lines as ``(offset, line)``, oldest first.

    Also returns the item in an unterminated last line (or None) and its offset. Reads a
    block from the end, and a four times larger one while the block holds too few lines,
    so the cost is proportional to the lines wanted, not to the file.
    """
    chunk = max(_TAIL_CHUNK, count * _BYTES_PER_LINE_GUESS)
    while True:
        begin = max(0, size - chunk)
        _, data = _read_block(fd, begin, size)
        at_file_start = begin == 0
        lines = data.split(b"\n")
        if not lines[:-1] and not at_file_start:
            chunk *= 4  # the last line is longer than the block: we see only its end
            continue
        tail = lines.pop()
        tail_offset = size - len(tail)
        tail_item = parse_item(tail) if not codec.is_blank(tail) else None
        wanted = count - (tail_item is not None)
        complete = lines if at_file_start else lines[1:]  # the first piece may be cut
        picked: list[tuple[int, bytes]] = []
        offset = tail_offset
        for line in reversed(complete):
            offset -= len(line) + 1
            if len(picked) >= wanted:
                break
            if not codec.is_blank(line):
                picked.append((offset, line))
        if len(picked) >= wanted or at_file_start:
            picked.reverse()
            return picked, tail_item, tail_offset
        chunk *= 4


def _read_block(fd: int, start: int, end: int) -> tuple[int, bytes]:
    """Bytes ``start:end`` of the file; a BOM at the very start is skipped (and ``start`` moved past it)."""
    data = os.pread(fd, end - start, start)
    if start == 0 and data.startswith(codec.BOM):
        return len(codec.BOM), data[len(codec.BOM) :]
    return start, data


def _snippet(line: bytes) -> str:
    text = line[:_SNIPPET].decode("utf-8", errors="replace")
    return repr(text + ("..." if len(line) > _SNIPPET else ""))
