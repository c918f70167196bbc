"""When each item was added: the ``<file>.jsonl.times`` sidecar, written beside the items, never in them.

The SDK sends the items to the model, so a time cannot go into an item's line. It goes into
a sidecar instead, one short line per item, appended in the same locked section as the items::

    1764790710123 3f2a9c01

milliseconds since 1970 (UTC, always 13 digits) and the CRC-32 of the item's line (its bytes
without the line ending, 8 hex digits). Readers do not trust line numbers: they match each
item's line to a record by that fingerprint (:func:`align`), so pops, rewrites, compaction
and hand edits (deleted, re-ordered, changed lines) leave the times of the kept items right,
and an item whose line matches no record simply has no time.

Times are advisory, so they cost little: no fsync of their own (a power loss can lose the
newest ones; the items' own fsync is unchanged), one ``write`` per ``add_items`` through a
descriptor kept open (``times_log.TimesLog``), and any error writing them is swallowed: an append
that reached the session is never reported as failed because of its time. A writer killed
in the middle of that ``write`` leaves a torn record; the strict format (13 digits, a space,
8 hex digits) makes readers skip it and anything glued to it, and the next descriptor opened
ends it with a newline first. What a crash can lose: the times of the items written last.

Removals keep the file in step (``times_log.TimesLog.forget_newest`` for pop and rewind, truncation
for clear); a rewrite writes a new file through the one atomic replace
(``storage.replace_file``), keeping the times of the items it keeps (matched by fingerprint)
and stamping new ones now (``times_log.TimesLog.rewrite``). Records that match no item any more (a
line deleted by hand) are harmless, and dropped by the next rewrite.
"""

from __future__ import annotations

import os
import re
import time
import zlib
from bisect import bisect_left
from collections import deque
from stat import S_ISREG
from struct import pack as _pack

from . import codec, reads
from .names import TIMES

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Sequence
    from typing import Any

    from .scanner import Scan

__all__ = [
    "RECORD_BYTES",
    "align",
    "as_path",
    "encode_stamped",
    "fingerprint",
    "line_times",
    "matching_records",
    "newest_item_time",
    "numbered_times",
    "parse_records",
    "times_path",
]

RECORD_BYTES = 23
"""Every record is ``13 digits, space, 8 hex digits, newline``: 23 bytes."""
_RECORD = re.compile(rb"^([0-9]{13}) ([0-9a-f]{8})$", re.MULTILINE)
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_crc32 = zlib.crc32
_PIECE = 1 << 20  # bytes read at a time when a whole sidecar must be searched


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


def encode_stamped(items: Iterable[Any]) -> tuple[bytes, bytes]:
    """The items' lines as ``codec.encode_items`` makes them, and their records, stamped now.

    Each line is fingerprinted before the lines are joined: counting and splitting the joined
    payload again cost about a third of a 100-item append without fsync.

    Example:
        >>> payload, records = encode_stamped([{"a": 1}, {"b": 2}])
        >>> payload, len(records) == 2 * RECORD_BYTES
        (b'{"a":1}\\n{"b":2}\\n', True)
    """
    if type(items) is list and len(items) == 1:  # the Runner's usual call: its fast path
        payload = codec.encode_items(items)
        return payload, b"%013d %08x\n" % (time.time_ns() // 1_000_000, _crc32(payload[:-1]))
    lines = codec.encode_lines(items)
    if not lines:
        return b"", b""
    records = _records(list(map(_crc32, lines)), time.time_ns() // 1_000_000)
    lines.append(b"")
    return b"\n".join(lines), records


def _records(crcs: list[int], ms: int) -> bytes:
    """The records of lines with those fingerprints, all stamped ``ms``."""
    if not crcs:
        return b""
    # A handful of C calls whatever the count: the fingerprints packed, written as hex 8 digits
    # apart, and the time put before each (a loop formatting one record per line cost 3x more).
    prefix = b"%013d " % ms
    hexes = _pack(f">{len(crcs)}I", *crcs).hex("\n", 4).encode()
    return prefix + hexes.replace(b"\n", b"\n" + prefix) + b"\n"


def parse_records(data: bytes) -> list[tuple[int, int, int]]:
    """``(offset, ms, crc)`` of every well-formed record in ``data``; torn or glued lines are skipped.

    Example:
        >>> parse_records(b"17647907\\n1764790710123 561bacaf\\n")
        [(9, 1764790710123, 1444654255)]
    """
    return [(m.start(), int(m[1]), int(m[2], 16)) for m in _RECORD.finditer(data)]


def align(fingerprints: Sequence[int], records: Sequence[tuple[int, int]]) -> list[int | None]:
    """The time (ms) of each line, by its fingerprint, or None: each record serves one line.

    Matched from the newest line back, each taking the newest unused record with its
    fingerprint that comes before the record the line after it took (so identical lines take
    their own records, in order, and a window of the newest lines aligns as the whole file
    would), or, when there is none (lines moved by hand), the newest unused one.

    Example:
        >>> align([1, 2, 1, 3], [(100, 1), (200, 2), (300, 1)])
        [100, 200, 300, None]
    """
    positions: dict[int, list[int]] = {}
    for index, (_, crc) in enumerate(records):
        positions.setdefault(crc, []).append(index)
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
    times = align(crcs, [(ms, crc) for _, ms, crc in parse_records(data)])
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
    [ms] = align([fingerprint(line)], [(ms, crc) for _, ms, crc in parse_records(data)])
    return None if ms is None else ms / 1000


def times_path(session_path: str | os.PathLike[str]) -> str:
    return os.fspath(session_path) + TIMES


def as_path(path: str) -> Any:
    from pathlib import Path

    return Path(path)


def matching_records(path: str, fingerprints: Collection[int]) -> list[tuple[int, int]]:
    """``(ms, crc)`` of the sidecar's records for these fingerprints, oldest first, read a piece at a time.

    What :func:`align` needs of a whole sidecar, in memory that follows the lines asked about,
    never the file: a record for no asked line is dropped as it is read (:func:`align` would
    never use it), and of those kept only the newest ``2 * lines + 1024`` stay (a live sidecar
    holds one per line, plus those of lines deleted since), so a hostile file full of copies of
    one record costs no more. A line longer than a record is skipped as it streams by.
    """
    wanted = set(fingerprints)
    kept: deque[tuple[int, int]] = deque(maxlen=2 * len(fingerprints) + 1024)
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
                if crc in wanted:
                    kept.append((int(match[1]), crc))
            carry = data[max(start, end) :]
            if len(carry) >= RECORD_BYTES:
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
        times = align(list(crcs), [(ms, crc) for _, ms, crc in parse_records(data)])
        if None in times and more:  # an old time, further back
            times = align(list(crcs), matching_records(path, crcs))
    return [[number, ms] for number, ms in zip(numbers, times) if ms is not None]
