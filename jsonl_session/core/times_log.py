"""The ``.times`` sidecar's writer: the descriptor a session keeps open to stamp its appends, and the upkeep.

The format and the readers are :mod:`jsonl_session.core.item_times`; this is what the session's
writers call under its exclusive lock: :meth:`TimesLog.stamp` after an append (one record, one
write at the end), :meth:`TimesLog.forget_popped` after a pop (after its sync: a failed pop
keeps its record unless its line could not be put back), :meth:`TimesLog.forget_newest` after
a rewind, :meth:`TimesLog.clear`, and :meth:`TimesLog.rewrite` after a rewrite. Nothing here
raises ``OSError``: times are advisory.
"""

from __future__ import annotations

import os
import time
import zlib

from . import reads, scanner, storage
from .fork_safety import close_in_forked_child
from .item_times import (
    LONGEST_RECORD,
    RECORD_BYTES,
    align,
    as_path,
    fingerprint,
    line_times,
    parse_records,
    stamp,
    times_path,
)
from .names import TIMES

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["TimesLog"]


def _linux_at_least(version: tuple[int, int]) -> bool:
    """Whether this is Linux ``version`` or later (a kernel release such as ``6.1.0-13-amd64``)."""
    uname = os.uname()
    try:
        major, minor = uname.release.split(".")[:2]
        return uname.sysname == "Linux" and (int(major), int(minor.split("-")[0])) >= version
    except ValueError:
        return False


_time_ns = time.time_ns
_pwrite = os.pwrite
_pwritev = getattr(os, "pwritev", None)
_write = os.write
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
# Each record goes at the sidecar's end as the kernel knows it, whoever wrote last, with no look
# at its size first; the descriptor's offset is then where this object's last record ends. Linux
# 4.16 and later append one write (``RWF_APPEND``) and the descriptor stays plain, for a pop's
# blank written at a place; elsewhere it is ``O_APPEND``, turned off for that one write.
_RWF_APPEND = getattr(os, "RWF_APPEND", 0) if _linux_at_least((4, 16)) else 0
_APPEND_FLAGS = os.O_NONBLOCK | (0 if _RWF_APPEND else os.O_APPEND)  # the status flags (F_SETFL)
_WRITE_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | _APPEND_FLAGS
_BLANK = b" " * (RECORD_BYTES - 1) + b"\n"  # a popped item's record, blanked: a line that is no record
_crc32 = zlib.crc32
_RECHECK_MS = 1000


def _append(fd: int, data: bytes) -> None:
    """Write ``data`` at the sidecar's end, and leave the descriptor's offset after it."""
    if _RWF_APPEND:
        _pwritev(fd, (data,), -1, _RWF_APPEND)  # type: ignore[misc]
    else:
        _write(fd, data)


def _origins(new: Sequence[int], old: Sequence[int]) -> list[int | None]:
    """For each new line (by fingerprint), the index of the old line it comes from, or None (new).

    A line whose bytes are an old line's comes from it (:func:`~.item_times.align`). Then a run
    of unmatched new lines between two matched ones (or an end) comes, line for line, from the
    unmatched old lines between the old lines those two came from, when there are exactly as
    many: content changed in place (a redacted secret, an edited message) is the same item, and
    keeps its time. Otherwise (lines added, or dropped and changed around each other) they are new.

    Example:
        >>> _origins([1, 9, 3], [1, 2, 3]), _origins([1, 9, 8, 3], [1, 2, 3])
        ([0, 1, 2], [0, None, None, 2])
    """
    origins = align(new, list(enumerate(old)))
    used = {at for at in origins if at is not None}
    start = 0
    while start < len(new):
        if origins[start] is not None:
            start += 1
            continue
        end = start
        while end < len(new) and origins[end] is None:
            end += 1
        left = origins[start - 1] if start else -1
        right = origins[end] if end < len(new) else len(old)
        assert left is not None and right is not None
        gap = range(left + 1, right)
        if len(gap) == end - start and not used.intersection(gap):
            origins[start:end] = list(gap)
        start = end
    return origins


class TimesLog:
    """The ``.times`` sidecar of one session: its append descriptor, kept open, and its upkeep.

    Every method runs while the session's exclusive lock is held (the items' writers call
    them), and none raises ``OSError``: times are advisory.

    Example:
        >>> log = TimesLog("sessions/convo_1.jsonl")                       # doctest: +SKIP
        >>> with session_locked:                                          # doctest: +SKIP
        ...     os.write(fd, payload); log.stamp(payload, None, size)
    """

    __slots__ = (
        "__weakref__",
        "_blank",
        "_end",
        "_fd",
        "_last_crc",
        "_last_end",
        "_recheck",
        "path",
    )

    def __init__(self, session_path: str | os.PathLike[str]) -> None:
        self.path = times_path(session_path)
        self._fd = -1
        self._end = -1  # the session's size after the last change made through this object
        # If this object's last write was the whole record of one item, its fingerprint (else -1):
        # a pop of that item drops the record, which ends at ``_last_end`` when the append knew
        # the sidecar's size (-1: it did not; the descriptor's offset says).
        self._last_crc = -1
        self._last_end = -1
        self._blank = -1  # where this object's last pop blanked a record (-1: none since)
        self._recheck = 0  # the clock (ms) at which an append next checks the descriptor anyway
        close_in_forked_child(self)

    def stamp(
        self, payload: bytes, lines: list[bytes] | None, size_before: int, untouched: bool = False
    ) -> None:
        """Record the lines of ``payload`` (``item_times.encode_lines``), just appended at
        ``size_before``, as added now: one record, one ``write``.

        One Python call for the Runner's one-item add (``item_times.stamp`` written out here):
        in a busy process each call costs about 1 µs, a few per cent of an append without fsync.
        ``untouched``: nobody changed the session since this process's last append or pop
        (``FileHandle.try_append``), so nobody replaced the sidecar either.
        """
        ms = _time_ns() // 1_000_000
        if lines is None:
            crc = _crc32(payload[:-1])
            records = b"%013d %08x\n" % (ms, crc)
        else:
            crc = -1
            records = stamp(payload, lines, ms)
        try:
            # The descriptor is checked (an fstat) unless the session is untouched since this
            # process's last change, and then at least once a second: a sidecar replaced (a
            # rewrite elsewhere renamed a new one over it, which replaces the session too) or
            # deleted is reopened. An ``rm`` of the sidecar alone costs at most a second of records.
            fd = self._fd
            if not untouched or ms >= self._recheck or fd < 0:
                fd, size = self._current(create=True)
                self._recheck = ms + _RECHECK_MS
                blank, self._blank = self._blank, -1
                if (
                    blank >= 0
                    and size == blank + RECORD_BYTES
                    and size_before == self._end  # and nobody changed the session since that pop
                    and len(records) == RECORD_BYTES
                ):
                    # this object's pop blanked the sidecar's last record: this one goes over it,
                    # and ends where the blanked one did (the descriptor's offset)
                    self._write_at(records, blank)
                    self._last_crc, self._last_end, self._end = crc, size, size_before + len(payload)
                    return
                # Appended at ``size``, the end: every writer of the sidecar holds the session's lock.
                self._last_end = size + len(records)
            else:
                self._last_end = -1
            self._blank = -1
            if _RWF_APPEND:  # _append, written out
                written = _pwritev(fd, (records,), -1, _RWF_APPEND)  # type: ignore[misc]
            else:
                written = _write(fd, records)
            # A record cut short (a full disk) is no record of ours: a pop must not take the 23
            # bytes before the offset for it.
            self._last_crc = crc if written == len(records) else -1
            self._end = size_before + len(payload)
        except OSError:
            self.close()  # try again with a fresh descriptor next time

    def sync_and_stamp(self, fd: int, size_before: int, payload: bytes, lines: list[bytes] | None) -> None:
        """``fdatasync`` an append (undone if it fails, see ``storage.sync_or_undo``), then :meth:`stamp`
        it: a failed append leaves no record. The durable ``add_items`` runs this in its worker."""
        storage.sync_or_undo(fd, size_before)
        self.stamp(payload, lines, size_before)

    def forget_popped(
        self, line: bytes, size_after: int, session_fd: int = -1, *, durable: bool = True
    ) -> None:
        """Drop the record of the item a pop just removed: its ``line`` (without the newline),
        which began at ``size_after``, the session's size now.

        :meth:`drop_own_record` if it can; else the sidecar's end is read and the records of that
        line cut off, as :meth:`forget_newest` does (``session_fd``: the session, read if a
        batch record keeps its older lines).
        """
        if not self.drop_own_record(line, size_after, durable=durable):
            self._cut_records([fingerprint(line)], size_after, session_fd)

    def drop_own_record(self, line: bytes, size_after: int, *, durable: bool = True) -> bool:
        """If the popped item (as :meth:`forget_popped`) is the one this object added last and its
        record is still the sidecar's last, drop that record without reading it back: cut it off,
        or for a ``durable`` session (which fsyncs its writes) blank it in place, and the next
        append writes over the blank (an ext4 truncate cost a durable pop ~40 µs: its
        ``fdatasync`` commits the truncate too). False: nothing was done.
        """
        if fingerprint(line) != self._last_crc or size_after + len(line) + 1 != self._end:
            return False
        try:
            if not self._drop_own_last_record(durable):
                return False
        except OSError:
            self.close()  # times are advisory: the record stays, and the descriptor is fresh next time
            return True
        self._end, self._last_crc = size_after, -1
        return True

    def forget_newest(self, removed: Sequence[Any], size_after: int = -1) -> None:
        """Drop the records of items just removed from the end (a rewind), newest last.

        The records at the end of the sidecar that match the removed items (their lines as
        ``add_items`` wrote them, so hand-written ones have none) are cut off; anything else is
        left alone. A batch record that loses only its newest lines is replaced by one for the
        lines it keeps (the session's newest line is read for its fingerprint).
        ``size_after`` is the session's size now (-1: unknown).
        """
        import orjson  # here: `ls` imports this module and never rewinds

        crcs = []
        for item in removed:
            try:
                crcs.append(_crc32(orjson.dumps(item)))  # its line, as add_items wrote it
            except TypeError:
                crcs.append(-1)  # cannot be written back (a huge integer), so not one of ours
        self._cut_records(crcs, size_after, -1)

    def _cut_records(self, crcs: list[int], size_after: int, session_fd: int) -> None:
        """Cut off the sidecar's trailing records of the lines with fingerprints ``crcs``, newest
        last (``session_fd``: the session, read for a kept batch part's newest line, else opened)."""
        self._last_crc = self._blank = -1
        try:
            fd, size = self._current()
            if not size:
                if fd >= 0:
                    self._end = size_after
                return
            # Only the records that may be theirs: a trailing record that is not one of theirs
            # stops the cut anyway (plus one, for a record cut by the start of the read).
            start = max(0, size - (len(crcs) + 1) * LONGEST_RECORD)
            # A record cut by ``start`` is shorter than a record, so it never parses as one.
            records = parse_records(reads.read_range(fd, start, size))
            cut, kept = size, b""
            for offset, ms, crc, first, count in reversed(records):
                while crcs and crcs[-1] != crc:
                    crcs.pop()  # a removed item without a record (written by hand)
                if not crcs:
                    break
                crcs.pop()
                taken = 1
                while crcs and taken < count:  # a batch's lines before its last, removed too
                    crcs.pop()
                    taken += 1
                cut = start + offset
                if taken < count:  # the batch keeps its oldest lines: a record of its own for them
                    kept = self._kept_part(ms, first, count - taken, session_fd, size_after)
                    break
            if cut < size:
                os.ftruncate(fd, cut)
                if kept:
                    _append(fd, kept)  # at the end, where it was cut
            self._end = size_after
        except OSError:
            self.close()

    def _drop_own_last_record(self, durable: bool) -> bool:
        """Cut off (or, ``durable``, blank) this object's last record if it is still the sidecar's
        end; False if it is not.

        That record ends where :meth:`stamp` computed, or else at the descriptor's offset
        (:func:`_append` leaves it there, a write over a blank ends there too; nothing else here
        moves it): one system call fewer for a durable session, whose appends look at the size.
        The ``fstat`` stays: a sidecar replaced since (another writer's rewrite of the session,
        an editor's save) has no link left, and the record to drop is in the new one.
        """
        fd = self._fd
        end = self._last_end if self._last_end >= 0 else os.lseek(fd, 0, os.SEEK_CUR)
        info = os.fstat(fd)
        if not info.st_nlink or info.st_size != end or end < RECORD_BYTES:
            return False
        start = end - RECORD_BYTES
        if durable:
            self._write_at(_BLANK, start)
            self._blank = start  # the next append writes over it, if it is still the end
        else:
            os.ftruncate(fd, start)  # the offset stays past the end: the next pop reads the end again
        return True

    def _write_at(self, data: bytes, offset: int) -> None:
        """A write at ``offset``, not at the end (where every other write here goes)."""
        fd = self._fd
        if _RWF_APPEND:
            _pwrite(fd, data, offset)
            return
        import fcntl  # here: `ls` imports this module and never pops

        try:
            fcntl.fcntl(fd, fcntl.F_SETFL, _APPEND_FLAGS & ~os.O_APPEND)
            _pwrite(fd, data, offset)
            fcntl.fcntl(fd, fcntl.F_SETFL, _APPEND_FLAGS)
        except BaseException:
            self.close()  # O_APPEND may be off: never append through this descriptor again
            raise

    def _kept_part(self, ms: int, first: int, count: int, session_fd: int, size: int) -> bytes:
        """The record of a batch's oldest ``count`` lines, now the session's newest (b"": unknown)."""
        if count == 1:
            return b"%013d %08x\n" % (ms, first)
        fd = session_fd
        if fd < 0:
            fd = os.open(self.path[: -len(TIMES)], _READ_FLAGS)
        try:
            if size < 0 or fd != session_fd:
                size = os.fstat(fd).st_size
            lines, _, _ = reads.newest_lines(fd, size, 1)
        finally:
            if fd != session_fd:
                os.close(fd)
        if not lines:
            return b""
        return b"%013d %08x %08x %d\n" % (ms, fingerprint(lines[-1][1]), first, count)

    def clear(self) -> None:
        """Empty the sidecar (``clear_session``), if there is one."""
        self._last_crc = self._blank = -1
        try:
            fd, size = self._current()
            if size:
                os.ftruncate(fd, 0)
        except OSError:
            self.close()

    def rewrite(self, before: bytes, after: bytes, *, stamp: bool = True) -> None:
        """The session's bytes went from ``before`` to ``after`` (a rewrite): write the sidecar anew.

        Kept lines keep their times (or their lack of one), and so do lines changed in place
        (:func:`_origins`: ``redact``, an edit of one item); new lines are stamped now (unless
        ``stamp`` is false). Written through the one atomic replace, without a folder fsync:
        a crash that undoes the rename leaves the old sidecar, whose records still match.
        """
        try:
            old_lines = [line.data for line in scanner.scan_lines(before).lines]
            old_times = line_times(self.path[: -len(TIMES)], old_lines) if old_lines else []
            new_lines = after.split(b"\n")
            new_lines.pop()
            new_crcs = [_crc32(line) for line in new_lines]
            origins = _origins(new_crcs, [fingerprint(line) for line in old_lines])
            # -1 marks a kept line that had no time, so that it stays without one.
            kept = [None if at is None else -1 if old_times[at] is None else old_times[at] for at in origins]
            now = time.time_ns() // 1_000_000
            records = []
            for crc, ms in zip(new_crcs, kept):
                if ms is None and stamp:
                    ms = now
                if ms is not None and ms >= 0:
                    records.append(b"%013d %08x\n" % (ms, crc))
            if records or os.path.lexists(self.path):
                storage.replace_file(as_path(self.path), b"".join(records), durable=False)
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
                storage.replace_file(as_path(self.path), b"".join(records), durable=False)
        except OSError:
            pass
        self.close()

    def close(self) -> None:
        """Close the descriptor (it is reopened when needed)."""
        self._end = self._last_crc = self._blank = -1
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

    def _current(self, *, create: bool = False) -> tuple[int, int]:
        """The open sidecar (reopened if it was replaced or deleted) and its size; (-1, 0) if there
        is none and not ``create``: removals never create a sidecar, appends do."""
        fd = self._fd
        if fd >= 0:
            info = os.fstat(fd)
            if info.st_nlink:
                return fd, info.st_size
        if not create and not os.path.lexists(self.path):
            self.close()
            return -1, 0
        fd = self._open()
        return fd, os.fstat(fd).st_size

    def _open(self) -> int:
        self.close()
        fd = os.open(self.path, _WRITE_FLAGS, 0o600)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                _append(fd, b"\n")  # a torn record from a killed writer: end it first
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return fd
