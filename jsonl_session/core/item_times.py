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
descriptor kept open (:class:`TimesLog`), and any error writing them is swallowed: an append
that reached the session is never reported as failed because of its time. A writer killed
in the middle of that ``write`` leaves a torn record; the strict format (13 digits, a space,
8 hex digits) makes readers skip it and anything glued to it, and the next descriptor opened
ends it with a newline first. What a crash can lose: the times of the items written last.

Removals keep the file in step (:meth:`TimesLog.forget_newest` for pop and rewind, truncation
for clear); a rewrite writes a new file through the one atomic replace
(``storage.replace_file``), keeping the times of the items it keeps (matched by fingerprint)
and stamping new ones now (:meth:`TimesLog.rewrite`). Records that match no item any more (a
line deleted by hand) are harmless, and dropped by the next rewrite.
"""

from __future__ import annotations

import os
import re
import time
import zlib
from bisect import bisect_left
from struct import pack as _pack

from . import codec, reads, scanner, storage
from .fork_safety import close_in_forked_child
from .names import TIMES

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

    from .scanner import Scan

__all__ = [
    "RECORD_BYTES",
    "TimesLog",
    "align",
    "fingerprint",
    "line_times",
    "newest_item_time",
    "numbered_times",
    "parse_records",
    "records_for",
]

RECORD_BYTES = 24
"""Every record is ``13 digits, space, 8 hex digits, newline``: 24 bytes."""
_RECORD = re.compile(rb"^([0-9]{13}) ([0-9a-f]{8})$", re.MULTILINE)
_APPEND_FLAGS = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_crc32 = zlib.crc32


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


def records_for(payload: bytes, ms: int) -> bytes:
    """The records of the lines in ``payload`` (whole lines, each ending with a newline), all stamped ``ms``.

    Example:
        >>> records_for(b'{"a":1}\\n', 1764790710123)
        b'1764790710123 561bacaf\\n'
    """
    lines = payload.split(b"\n")
    lines.pop()
    if not lines:
        return b""
    # A handful of C calls whatever the count: the fingerprints packed, written as hex 8 digits
    # apart, and the time put before each (a loop formatting one record per line cost 3x more).
    crcs = list(map(_crc32, lines))
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
    path = _times_path(session_path)
    window = (len(crcs) + 32) * RECORD_BYTES
    data = _read(path, window)
    times = align(crcs, [(ms, crc) for _, ms, crc in parse_records(data)])
    if None in times and len(data) >= window:
        times = align(crcs, [(ms, crc) for _, ms, crc in parse_records(_read(path, None))])
    return times


def newest_item_time(session_path: str | os.PathLike[str]) -> float | None:
    """When the session's newest item was added (seconds since 1970), or None if unknown.

    For ``ls``: no lock is taken (a race can only make the answer unknown), and a session
    without a sidecar costs one failed ``open``.
    """
    path = _times_path(session_path)
    data = _read(path, 64 * RECORD_BYTES)
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


class TimesLog:
    """The ``.times`` sidecar of one session: its append descriptor, kept open, and its upkeep.

    Every method runs while the session's exclusive lock is held (the items' writers call
    them), and none raises ``OSError``: times are advisory.

    Example:
        >>> log = TimesLog("sessions/convo_1.jsonl")                       # doctest: +SKIP
        >>> with session_locked:                                          # doctest: +SKIP
        ...     os.write(fd, payload); log.stamp(payload)
    """

    __slots__ = ("__weakref__", "_fd", "path")

    def __init__(self, session_path: str | os.PathLike[str]) -> None:
        self.path = _times_path(session_path)
        self._fd = -1
        close_in_forked_child(self)

    def stamp(self, payload: bytes) -> None:
        """Record now as the time of each line of ``payload`` (just appended): one ``write``."""
        try:
            fd = self._fd
            # Replaced (a rewrite elsewhere renamed a new file over it) or deleted (rm): reopen.
            if fd < 0 or not os.fstat(fd).st_nlink:
                fd = self._open()
            if payload.count(b"\n") == 1:  # one item, the Runner's usual call
                os.write(fd, b"%013d %08x\n" % (time.time_ns() // 1_000_000, _crc32(payload[:-1])))
            else:
                os.write(fd, records_for(payload, time.time_ns() // 1_000_000))
        except OSError:
            self.close()  # try again with a fresh descriptor next time

    def sync_and_stamp(self, fd: int, size_before: int, payload: bytes) -> None:
        """``fdatasync`` an append (undone if it fails, see ``storage.sync_or_undo``), then stamp it."""
        storage.sync_or_undo(fd, size_before)
        self.stamp(payload)

    def forget_newest(self, removed: Sequence[Any]) -> None:
        """Drop the records of items just removed from the end (pop, rewind), newest last.

        The records at the end of the sidecar that match the removed items (their lines as
        written, so hand-written ones have none) are cut off; anything else is left alone.
        """
        crcs = []
        for item in removed:
            try:
                crcs.append(_crc32(codec.encode_items([item])[:-1]))
            except (TypeError, ValueError):
                crcs.append(-1)  # cannot be written back, so not one of ours
        try:
            fd, size = self._current()
            if not size:
                return
            start = max(0, size - (len(crcs) + 32) * RECORD_BYTES)
            # A record cut by ``start`` is shorter than a record, so it never parses as one.
            records = parse_records(reads.read_range(fd, start, size))
            cut = size
            for offset, _, crc in reversed(records):
                while crcs and crcs[-1] != crc:
                    crcs.pop()  # a removed item without a record (written by hand)
                if not crcs:
                    break
                crcs.pop()
                cut = start + offset
            if cut < size:
                os.ftruncate(fd, cut)
        except OSError:
            self.close()

    def clear(self) -> None:
        """Empty the sidecar (``clear_session``), if there is one."""
        try:
            fd, size = self._current()
            if size:
                os.ftruncate(fd, 0)
        except OSError:
            self.close()

    def rewrite(self, before: bytes, after: bytes, *, stamp: bool = True) -> None:
        """The session's bytes went from ``before`` to ``after`` (a rewrite): write the sidecar anew.

        Kept lines keep their times (or their lack of one); new lines are stamped now (unless
        ``stamp`` is false). Written through the one atomic replace, without a folder fsync:
        a crash that undoes the rename leaves the old sidecar, whose records still match.
        """
        try:
            old_lines = [line.data for line in scanner.scan_lines(before).lines]
            old_times = line_times(self.path[: -len(TIMES)], old_lines) if old_lines else []
            new_lines = after.split(b"\n")
            new_lines.pop()
            new_crcs = [_crc32(line) for line in new_lines]
            # A new line takes a kept line's time when its bytes are that line's: -1 marks a
            # kept line that had no time, so that it stays without one.
            kept = align(
                new_crcs,
                [(-1 if t is None else t, fingerprint(line)) for t, line in zip(old_times, old_lines)],
            )
            now = time.time_ns() // 1_000_000
            records = []
            for crc, ms in zip(new_crcs, kept):
                if ms is None and stamp:
                    ms = now
                if ms is not None and ms >= 0:
                    records.append(b"%013d %08x\n" % (ms, crc))
            if records or os.path.lexists(self.path):
                storage.replace_file(_as_path(self.path), b"".join(records), durable=False)
        except OSError:
            pass
        self.close()

    def write_records(self, payload: bytes, times: Sequence[int | None]) -> None:
        """The sidecar becomes records of the lines of ``payload`` at ``times`` (None: none): a fork."""
        lines = payload.split(b"\n")
        lines.pop()
        records = [b"%013d %08x\n" % (ms, _crc32(line)) for line, ms in zip(lines, times) if ms is not None]
        try:
            if records or os.path.lexists(self.path):
                storage.replace_file(_as_path(self.path), b"".join(records), durable=False)
        except OSError:
            pass
        self.close()

    def close(self) -> None:
        """Close the descriptor (it is reopened when needed)."""
        fd, self._fd = self._fd, -1
        if fd >= 0:
            try:
                os.close(fd)
            except OSError:
                pass

    def after_fork_in_child(self) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    def _current(self) -> tuple[int, int]:
        """The open sidecar (reopened if it was replaced or deleted) and its size; (-1, 0) if there is none.

        Removals use it: they never create a sidecar.
        """
        fd = self._fd
        if fd >= 0:
            info = os.fstat(fd)
            if info.st_nlink:
                return fd, info.st_size
        if not os.path.lexists(self.path):
            self.close()
            return -1, 0
        fd = self._open()
        return fd, os.fstat(fd).st_size

    def _open(self) -> int:
        self.close()
        fd = os.open(self.path, _APPEND_FLAGS, 0o600)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                os.write(fd, b"\n")  # a torn record from a killed writer: end it before ours
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return fd


def _times_path(session_path: str | os.PathLike[str]) -> str:
    return os.fspath(session_path) + TIMES


def _as_path(path: str) -> Any:
    from pathlib import Path

    return Path(path)


def _read(path: str, newest_bytes: int | None) -> bytes:
    """The sidecar's bytes (only about its last ``newest_bytes``, from a line start, if given), or b""."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        return b""
    try:
        size = os.fstat(fd).st_size
        start = 0 if newest_bytes is None else max(0, size - newest_bytes)
        data = reads.read_range(fd, start, size)
    except OSError:
        return b""
    finally:
        os.close(fd)
    if start:
        data = data[data.find(b"\n") + 1 :]  # the first line may be cut
    return data


def numbered_times(session_path: str | os.PathLike[str], scans: Iterable[Scan]) -> list[list[int]]:
    """``[line number, ms]`` for each line of ``scans`` (a session's, in order) whose time is known.

    What the HTML page shows beside each item (``render.file_io``). The sidecar is read
    without the session's lock: a record written meanwhile matches nothing here, and a
    rewrite's new sidecar still holds the times of the lines it kept.
    """
    numbers: list[int] = []
    crcs: list[int] = []
    for scan in scans:
        for line in scan.lines:
            numbers.append(line.number)
            crcs.append(fingerprint(line.data))
    data = _read(_times_path(session_path), None) if crcs else b""
    if not data:
        return []
    times = align(crcs, [(ms, crc) for _, ms, crc in parse_records(data)])
    return [[number, ms] for number, ms in zip(numbers, times) if ms is not None]
