"""Blocking reads of one session file whose descriptor the caller has already locked.

The newest ``n`` items are found by reading backwards from the end, so the cost of
``get_items(limit=n)`` does not depend on the file's size; a whole read goes a piece at a time
so the GIL (and an event loop waiting on the worker thread) gets its turn. Lines are split by
:mod:`scanner`'s rules; bytes after the last newline that are not an item are a torn tail,
which readers skip.
"""

from __future__ import annotations

import os
import re

from . import codec
from .errors import MalformedLineError
from .scanner import Scan, describe_bad_line, is_conflict_marker, lines_containing, parse_item, scan_lines

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path
    from typing import Any

# First read from the end: enough for the last line, or for ``limit`` lines of a typical
# size (a chat item is 300-600 bytes); a block that holds too few lines is read again 4x larger.
_TAIL_CHUNK = 4 * 1024
_BYTES_PER_LINE_GUESS = 1024
_MAX_CHUNK = 1024 * 1024
_SPLIT_PIECE = 1024 * 1024
# ``count_items`` reads this much at a time: a piece that stays in the CPU's cache between
# the read and the count is counted faster than 1 MB pieces (benchmarks/ls_speed.py).
_COUNT_PIECE = 256 * 1024
# A line that may be blank (``codec.is_blank``) or a git merge conflict marker
# (``scanner.is_conflict_marker``): it starts with whitespace, a newline or a marker's first
# character. One character class after the newline costs the regex no more than the blank-line
# pattern alone did (benchmarks/ls_speed.py); the lines of such a piece are then checked one by one.
_ODD_LINE = re.compile(rb"\n[\t\n\x0b\x0c\r <=>|]")
_MARKER_HEAD = 64  # bytes of a line that tell whether it is a conflict marker
_FIND_PIECE = 64 * 1024  # a first user message is nearly always in the first 64 KB
# Lines parsed between two young-generation collections during a full read. One pause over
# 100,000 items left ~300,000 young objects for the first collection after it, which held
# the GIL (and stalled an event loop waiting on the worker thread) for 50-250 ms; a
# collection every 4,096 items costs a few ms each and the read got ~10% faster (measured,
# benchmarks/loop_lag.py "stall during a full read").
_PARSE_PIECE = 4096


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
    lines, tail_item, _ = newest_lines(fd, size, limit)
    decode = codec.decoder_for(b"\n".join(line for _, line in lines))
    items = [decode_at(fd, path, offset, line, decode) for offset, line in lines]
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


def newest_lines(fd: int, size: int, count: int) -> tuple[list[tuple[int, bytes]], Any, int]:
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


def read_tail(fd: int, size: int) -> tuple[int, bytes]:
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


def _read_block(fd: int, start: int, end: int) -> tuple[int, bytes]:
    """Bytes ``start:end`` of the file; a BOM at the very start is skipped (and ``start`` moved past it)."""
    data = os.pread(fd, end - start, start)
    if start == 0 and data.startswith(codec.BOM):
        return len(codec.BOM), data[len(codec.BOM) :]
    return start, data


def scan_file(fd: int, size: int, *, piece_bytes: int = _SPLIT_PIECE) -> Iterator[Scan]:
    """The first ``size`` bytes as :func:`scan_lines` splits them, ``piece_bytes`` (1 MB) at a time.

    For whole-file checks of any size: memory holds one piece plus the longest line (a server
    that holds a piece per client asks for smaller ones). Every
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
        piece = read_range(fd, position, min(size, position + piece_bytes))
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
    """Non-blank complete lines, plus an unterminated last line if it is an item (torn tails are not),
    less the git merge conflict marker lines (:func:`count_lines`)."""
    return count_lines(fd)[0]


def count_lines(fd: int) -> tuple[int, int]:
    """``(items, conflict markers)``: the lines :func:`count_items` counts, and the git merge
    conflict marker lines (``<<<<<<<``, ``=======``, ``>>>>>>>``), which are not items.

    Lines are counted, not parsed, so listing a folder stays cheap: ``check`` finds bad lines.
    The file is read in pieces of ``_COUNT_PIECE``: reading it whole made ``ls`` of a 300 MB
    session peak near 600 MB (tests/project/test_memory.py).

    A piece's newlines are counted in C (``replace`` finds them with ``memchr``, several times
    faster than ``bytes.count`` here), and its lines are checked one by one only when a regex
    finds a blank line or a line that starts like a marker in it. Checking every line in Python
    made ``ls`` of a 50 MB folder take ~6x ``wc -l`` (``benchmarks/ls_speed.py``).
    ``tests/core/test_count_items.py`` holds the counts equal to the scanner's over random bytes
    and piece boundaries.
    """
    count = markers = 0
    position = 0
    pending: list[bytes] = []  # pieces of the line still unfinished at the end of the last read
    is_blank, is_marker = codec.is_blank, is_conflict_marker
    while True:
        # The first read takes at least a whole BOM, whatever the piece size.
        raw = os.pread(fd, _COUNT_PIECE if position else max(_COUNT_PIECE, len(codec.BOM)), position)
        if not raw:
            break
        data = raw.removeprefix(codec.BOM) if position == 0 else raw
        position += len(raw)
        first = data.find(b"\n")
        if first < 0:
            pending.append(data)  # a long line: kept in pieces, joined only if it is the last
            continue
        pending.append(data[:first])
        if not all(is_blank(part) for part in pending):
            if is_marker(_head(pending)):
                markers += 1
            else:
                count += 1
        last = data.rfind(b"\n")
        if last > first:  # complete lines between the first newline and the last
            if _ODD_LINE.search(data, first, last + 1) is None:
                count += len(data) - len(data.replace(b"\n", b"")) - 1
            else:
                for line in data[first + 1 : last].split(b"\n"):
                    if is_blank(line):
                        continue
                    if is_marker(line):
                        markers += 1
                    else:
                        count += 1
        pending = [data[last + 1 :]]
    tail = b"".join(pending)
    if not is_blank(tail):
        if parse_item(tail) is not None:
            count += 1
        elif is_marker(tail):
            markers += 1
    return count, markers


def _head(parts: list[bytes]) -> bytes:
    """The first bytes of a line kept in pieces: enough to tell a conflict marker."""
    head = b""
    for part in parts:
        head += part[: _MARKER_HEAD - len(head)]
        if len(head) >= _MARKER_HEAD:
            break
    return head


def first_line_where(fd: int, size: int, needle: bytes, pick: Callable[[bytes], Any]) -> Any:
    """The first non-None ``pick(line)`` over the lines of the file's first ``size`` bytes that
    contain ``needle``, in order; None when no line gives one.

    A search of the bytes, a piece at a time: a listing finds a session's first user message
    (every one contains ``"user"``) without splitting its other lines. Memory holds a piece
    plus the longest line.
    """
    position, carry = 0, b""
    while True:
        piece = os.pread(fd, min(_FIND_PIECE, size - position), position) if position < size else b""
        data = carry + piece if carry else piece
        if position == 0:
            data = data.removeprefix(codec.BOM)
        position += len(piece)
        end = data.rfind(b"\n") + 1 if piece else len(data)
        for line in lines_containing(data[:end], needle):
            found = pick(line.rstrip(b"\r"))
            if found is not None:
                return found
        if not piece:
            return None
        carry = data[end:]


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


def decode_at(fd: int, path: Path, offset: int, line: bytes, decode: Any = codec.decode_line) -> Any:
    """The item on ``line`` (at ``offset``), or :class:`MalformedLineError` naming its line number."""
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
