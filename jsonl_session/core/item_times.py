"""When each item was added: the ``<file>.jsonl.times`` sidecar, written beside the items, never in them.

The SDK sends the items to the model, so a time cannot go into an item's line. It goes into
a sidecar instead, one short line per ``add_items`` call, appended in the same locked section
as the items::

    1764790710123 3f2a9c01
    1764790711480 197c4aac 5d03e2b1 3

milliseconds since 1970 (UTC, always 13 digits) and the CRC-32 of the item's line (its bytes
without the line ending, 8 hex digits): an *item record*. A call that adds several items
writes one *batch record*: the CRC-32 of its last line, of its first line, and how many lines
it added (the fingerprints of two lines, whatever the count: a CRC of every line cost a 100-item
append without fsync +13 %). Readers do not trust line numbers: they match each item's line to
a record by fingerprint (:func:`align`), a batch record giving its time to the lines from its
first to its last when they are that many apart (otherwise to those two alone), so pops,
rewrites, compaction and hand edits (deleted, re-ordered, changed lines) leave the times of the
kept items right, and an item whose line matches no record simply has no time.

Times are advisory, so they cost little: no fsync of their own (a power loss can lose the
newest ones; the items' own fsync is unchanged), one write at the end per ``add_items`` through
a descriptor kept open (``times_log.TimesLog``), and any error writing them is swallowed: an
append that reached the session is never reported as failed because of its time. A writer
killed in the middle of that write leaves a torn record; the strict format (13 digits, a
space, 8 hex digits; for a batch, a space, 8 hex digits, a space and a count) makes readers
skip it and anything glued to it, and the next descriptor opened ends it with a newline first.
What a crash can lose: the times of the items written last.

Removals keep the file in step (``times_log.TimesLog.forget_popped`` and ``forget_newest`` for
pop and rewind: a pop
of the item the object added last cuts its record off, or for a durable session blanks it in
place for the next append to write over; truncation for clear); a rewrite
writes a new file through the one atomic replace (``storage.replace_file``), keeping the times
of the items it keeps (matched by fingerprint) and stamping new ones now
(``times_log.TimesLog.rewrite``). Records that match no item any more (a line deleted by hand)
are harmless, and dropped by the next rewrite.
"""

from __future__ import annotations

import os
import re
import zlib
from bisect import bisect_left
from collections import deque
from stat import S_ISREG

from . import codec, reads
from .names import TIMES

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Sequence
    from typing import Any

    from .scanner import Scan

__all__ = [
    "LONGEST_RECORD",
    "RECORD_BYTES",
    "align",
    "as_path",
    "encode_lines",
    "fingerprint",
    "line_times",
    "matching_records",
    "newest_item_time",
    "numbered_times",
    "parse_records",
    "stamp",
    "times_path",
]

RECORD_BYTES = 23
"""An item record is ``13 digits, space, 8 hex digits, newline``: 23 bytes (a batch record, up to 43)."""
_RECORD = re.compile(rb"^([0-9]{13}) ([0-9a-f]{8})(?: ([0-9a-f]{8}) ([1-9][0-9]{0,9}))?$", re.MULTILINE)
LONGEST_RECORD = 43
"""A batch record at most: 13 digits, 8 hex, 8 hex, a count of up to 10 digits, 3 spaces, a newline."""
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_crc32 = zlib.crc32
_PIECE = 1 << 20  # bytes read at a time when a whole sidecar must be searched
_CANDIDATES = 16  # lines tried as a batch's last one, newest first (identical lines are many)


def fingerprint(line: bytes) -> int:
    """The CRC-32 of a line without its line ending (a CR left by an editor is not counted).

    Example:
        >>> line = b'{"role":"user","content":"Hi"}'
        >>> fingerprint(line) == fingerprint(line + b"\\r")
        True
    """
    if line[-1:] == b"\r":
        line = line[:-1]
    return _crc32(line)


def encode_lines(items: Iterable[Any]) -> tuple[bytes, list[bytes] | None]:
    """The items' payload as ``codec.encode_items`` makes it, and its lines apart (None: it is one line).

    The lines are kept from before the join for :func:`stamp`: finding them in the joined payload
    again costs about a third of a 100-item append without fsync (``bytes.split`` and ``count``
    scan a byte at a time).

    Example:
        >>> encode_lines([{"a": 1}, {"b": 2}]), encode_lines([{"a": 1}])
        ((b'{"a":1}\\n{"b":2}\\n', [b'{"a":1}', b'{"b":2}']), (b'{"a":1}\\n', None))
    """
    if type(items) is list and len(items) == 1:  # the Runner's usual call: its fast path
        return codec.encode_items(items), None
    lines = codec.encode_lines(items)
    if not lines:
        return b"", None
    if len(lines) == 1:
        return lines[0] + b"\n", None
    lines.append(b"")  # joined with a final newline, without copying the payload again
    payload = b"\n".join(lines)
    lines.pop()
    return payload, lines


def stamp(payload: bytes, lines: list[bytes] | None, ms: int) -> bytes:
    """The record of one append of ``payload`` (its ``lines``, or None when it is one line), at ``ms``.

    Example:
        >>> stamp(b'{"a":1}\\n', None, 1764790710123)
        b'1764790710123 561bacaf\\n'
        >>> stamp(b"", [b'{"a":1}', b'{"b":2}', b'{"c":3}'], 1764790710123)
        b'1764790710123 1eed9d4d 561bacaf 3\\n'
    """
    if lines is None:
        return b"%013d %08x\n" % (ms, _crc32(payload[:-1]))
    return b"%013d %08x %08x %d\n" % (ms, _crc32(lines[-1]), _crc32(lines[0]), len(lines))


def parse_records(data: bytes) -> list[tuple[int, int, int, int, int]]:
    """``(offset, ms, crc, first, count)`` of every well-formed record in ``data``; torn or glued
    lines are skipped. An item record has ``first == crc`` and ``count == 1``.

    Example:
        >>> parse_records(b"17647907\\n1764790710123 561bacaf\\n1764790710124 0000000a 0000000b 2\\n")
        [(9, 1764790710123, 1444654255, 1444654255, 1), (32, 1764790710124, 10, 11, 2)]
    """
    found = []
    for m in _RECORD.finditer(data):
        crc = int(m[2], 16)
        if m[3] is None:
            found.append((m.start(), int(m[1]), crc, crc, 1))
        else:
            found.append((m.start(), int(m[1]), crc, int(m[3], 16), int(m[4])))
    return found


def align(fingerprints: Sequence[int], records: Sequence[tuple[int, ...]]) -> list[int | None]:
    """The time (ms) of each line, by its fingerprint, or None: each record serves one line.

    ``records`` are ``(ms, crc)`` item records or ``(ms, crc, first, count)`` (a batch record:
    :func:`parse_records` without the offset), oldest first. A batch record serves the ``count``
    lines from one whose fingerprint is ``first`` to one whose fingerprint is ``crc`` (or, when
    the lines given begin inside it, the window's lines up to that last one); when no lines fit,
    it serves those two alone (lines of the batch were deleted or moved). Matched from the
    newest line back, each taking the newest unused record with its fingerprint that comes
    before the record the line after it took (so identical lines take their own records, in
    order, and a window of the newest lines aligns as the whole file would), or, when there is
    none (lines moved by hand), the newest unused one.

    Example:
        >>> align([1, 2, 1, 3], [(100, 1), (200, 2), (300, 1)])
        [100, 200, 300, None]
        >>> align([1, 2, 3, 4], [(100, 1), (200, 4, 2, 3)])
        [100, 200, 200, 200]
    """
    if any(len(record) > 2 and record[3] > 1 for record in records):
        records = _per_line(fingerprints, records)
    positions: dict[int, list[int]] = {}
    for index, record in enumerate(records):
        positions.setdefault(record[1], []).append(index)
    used: set[int] = set()
    bound = len(records)
    times: list[int | None] = [None] * len(fingerprints)
    for line in range(len(fingerprints) - 1, -1, -1):
        candidates = positions.get(fingerprints[line])
        if not candidates:
            continue
        chosen = _newest_unused(candidates, bisect_left(candidates, bound), used)
        if chosen is None:
            chosen = _newest_unused(candidates, len(candidates), used)
            if chosen is None:
                continue
        used.add(chosen)
        bound = chosen
        times[line] = records[chosen][0]
    return times


def _per_line(fingerprints: Sequence[int], records: Sequence[tuple[int, ...]]) -> list[tuple[int, int]]:
    """The records as one ``(ms, crc)`` per line they serve: each batch record, by the lines it spans.

    The newest records first, and no more than ``2 * lines + 1024`` in all: a hostile sidecar
    of huge batches over the same lines costs what a real one does.
    """
    at: dict[int, list[int]] = {}
    for index, crc in enumerate(fingerprints):
        at.setdefault(crc, []).append(index)
    limit = 2 * len(fingerprints) + 1024
    found: list[tuple[int, int]] = []  # newest first
    for record in reversed(records):
        if len(found) >= limit:
            break
        if len(record) == 2 or record[3] == 1:
            found.append((record[0], record[1]))
            continue
        ms, last, first, count = record[:4]
        lines = _batch_lines(fingerprints, at.get(last, ()), first, count)
        if lines is None:  # the batch lost lines: its two ends, if they are still there
            found += [(ms, last), (ms, first)]
        else:
            found += [(ms, fingerprints[line]) for line in reversed(lines)]
    found.reverse()
    return found


def _batch_lines(fingerprints: Sequence[int], ends: Sequence[int], first: int, count: int) -> range | None:
    """The lines a batch of ``count`` from ``first`` to one of ``ends`` (line indexes) spans, or None.

    The newest end whose line ``count - 1`` before is ``first``; else, if the lines given begin
    after the batch's first (a window of the newest lines), the newest end with them all.
    """
    window = None
    for end in list(ends)[-1 : -_CANDIDATES - 1 : -1]:
        start = end - count + 1
        if start < 0:
            if window is None:
                window = range(end + 1)
        elif fingerprints[start] == first:
            return range(start, end + 1)
    return window


def _newest_unused(candidates: list[int], end: int, used: set[int]) -> int | None:
    for at in range(end - 1, -1, -1):
        if candidates[at] not in used:
            return candidates[at]
    return None


def line_times(session_path: str | os.PathLike[str], lines: Sequence[bytes]) -> list[int | None]:
    """The time (ms) of each of the session's ``lines`` (its newest ones, or all), read from its sidecar.

    Reads the newest records first and the whole sidecar only when some line found no time there.
    """
    crcs = [fingerprint(line) for line in lines]
    if not crcs:
        return []
    path = times_path(session_path)
    window = (len(crcs) + 32) * RECORD_BYTES
    data, more = _read(path, window)
    times = align(crcs, [record[1:] for record in parse_records(data)])
    if None in times and more:
        times = align(crcs, matching_records(path, crcs))
    return times


def newest_item_time(session_path: str | os.PathLike[str]) -> float | None:
    """When the session's newest item was added (seconds since 1970), or None if unknown.

    For ``ls``: no lock is taken (a race can only make the answer unknown), and a session
    without a sidecar costs one failed ``open``.
    """
    path = times_path(session_path)
    data, _ = _read(path, 64 * RECORD_BYTES)
    if not data:
        return None
    try:
        fd = os.open(session_path, _READ_FLAGS)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        lines, tail_item, tail_offset = reads.newest_lines(fd, size, 1)
        if tail_item is not None:
            line = os.pread(fd, size - tail_offset, tail_offset)
        elif lines:
            line = lines[-1][1]
        else:
            return None
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    [ms] = align([fingerprint(line)], [record[1:] for record in parse_records(data)])
    return None if ms is None else ms / 1000


def times_path(session_path: str | os.PathLike[str]) -> str:
    return os.fspath(session_path) + TIMES


def as_path(path: str) -> Any:
    from pathlib import Path

    return Path(path)


def matching_records(path: str, fingerprints: Collection[int]) -> list[tuple[int, ...]]:
    """The sidecar's records for these fingerprints, oldest first, read a piece at a time, for :func:`align`.

    What :func:`align` needs of a whole sidecar, in memory that follows the lines asked about,
    never the file: a record for no asked line (a batch record: whose first and last lines
    are neither asked) is dropped as it is read (:func:`align` would never use it), and of
    those kept only the newest ``2 * lines + 1024`` stay (a live sidecar holds one per line at
    most, plus those of lines deleted since), so a hostile file full of copies of one record
    costs no more. A line longer than any record is skipped as it streams by.
    """
    wanted = set(fingerprints)
    kept: deque[tuple[int, ...]] = deque(maxlen=2 * len(fingerprints) + 1024)
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        return []
    try:
        if not S_ISREG(os.fstat(fd).st_mode):
            return []
        offset, carry, cut = 0, b"", False
        while True:
            chunk = os.pread(fd, _PIECE, offset)
            if not chunk:
                break
            offset += len(chunk)
            data = carry + chunk
            start = 0
            if cut:  # the rest of a line too long to be a record
                start = data.find(b"\n") + 1
                if not start:
                    carry = b""
                    continue
                cut = False
            end = data.rfind(b"\n") + 1
            for match in _RECORD.finditer(data[start:end]):
                crc = int(match[2], 16)
                if match[3] is None:
                    if crc in wanted:
                        kept.append((int(match[1]), crc))
                    continue
                first = int(match[3], 16)
                if crc in wanted or first in wanted:
                    kept.append((int(match[1]), crc, first, int(match[4])))
            carry = data[max(start, end) :]
            if len(carry) >= LONGEST_RECORD:
                carry, cut = b"", True
    except OSError:
        return list(kept)
    finally:
        os.close(fd)
    return list(kept)


def _read(path: str, newest_bytes: int) -> tuple[bytes, bool]:
    """About the sidecar's last ``newest_bytes`` (from a line start), or b"" when it cannot be read;
    and whether there is more before it."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        return b"", False
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - newest_bytes)
        data = reads.read_range(fd, start, size)
    except OSError:
        return b"", False
    finally:
        os.close(fd)
    if start:
        data = data[data.find(b"\n") + 1 :]  # the first line may be cut
    return data, start > 0


def numbered_times(
    session_path: str | os.PathLike[str], scans: Iterable[Scan], *, newest: int | None = None
) -> list[list[int]]:
    """``[line number, ms]`` for each line of ``scans`` (a session's, in order) whose time is known.

    What the HTML page shows beside each item (``render.file_io``). The sidecar is read
    without the session's lock: a record written meanwhile matches nothing here, and a
    rewrite's new sidecar still holds the times of the lines it kept. With ``newest``, only
    the newest that many lines are kept while scanning (``show -n``: memory stays flat).
    """
    numbers: deque[int] = deque(maxlen=newest)
    crcs: deque[int] = deque(maxlen=newest)
    for scan in scans:
        for line in scan.lines:
            numbers.append(line.number)
            crcs.append(fingerprint(line.data))
    if not crcs:
        return []
    path = times_path(session_path)
    if newest is None:
        times = align(list(crcs), matching_records(path, crcs))
    else:
        window = (len(crcs) + 32) * RECORD_BYTES
        data, more = _read(path, window)
        if not data:
            return []
        times = align(list(crcs), [record[1:] for record in parse_records(data)])
        if None in times and more:  # an old time, further back
            times = align(list(crcs), matching_records(path, crcs))
    return [[number, ms] for number, ms in zip(numbers, times) if ms is not None]
