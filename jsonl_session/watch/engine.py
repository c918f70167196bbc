"""The change engine: what a follower delivered + what the file holds now -> the changes. No I/O.

A follower remembers, for one file: its identity (device, inode), its mark (see ``core.change_mark``),
for every line it delivered where the line starts and ends and a hash of its bytes, how far
it has read (``consumed``) and a digest of every byte before that point.

At each wake-up the file is looked at under the shared lock (``follower`` does that) and the
engine decides how much it must see:

* **only appends can have happened** (same inode, same mark, not shorter): the bytes from the
  start of the last delivered line are enough. That line must still be there, byte for byte,
  and what follows is new. Cost: proportional to the new bytes;
* **anything else** (no mark, another mark, another inode, a shorter file, or the last line
  changed): the whole file. If the bytes before ``consumed`` are unchanged (digest), what
  follows is appended; otherwise the old and new lines are compared from the start and the
  exact difference is delivered: ``removed`` + ``appended`` after the common prefix,
  ``cleared``, or ``replaced`` (nothing in common, or another file).

The engine never assumes: whatever happened between two wake-ups (pops, clears, re-adds of
identical bytes, a rename whose file got the old inode number back), the follower's list
equals the file's items after the wake-up. Only an edit in place by another tool that keeps
the size, the mark and the last line, or that changes bytes before the last line without
changing the mark, goes unseen (see docs/live-tail.md, "Edits by other tools").
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..core import codec
from ..core.errors import MalformedLineError
from ..core.scanner import Line, Scan, describe_bad_line, parse_item, scan_lines
from .changes import Change


@dataclass(frozen=True)
class Seen:
    """What a wake-up found about the file, read under the shared lock."""

    identity: tuple[int, int]
    size: int
    mark: bytes | None


class LineIndex:
    """The index a follower keeps of a file's first bytes, built by a caller that reads them anyway.

    ``serve`` streams a page from a session's bytes in one pass and adds each piece's scan
    here; its follower then starts from that (:class:`Known`) instead of reading the file
    again. The scans must be those of one pass from the file's start
    (``jsonl_session.core.reads.scan_file``).
    """

    def __init__(self) -> None:
        self.starts = array("q")
        self.ends = array("q")
        self.hashes = array("q")
        self.consumed = 0
        self.newlines = 0

    def add(self, scan: Scan) -> None:
        for line in scan.lines:
            self.starts.append(line.start)
            self.ends.append(line.end)
            self.hashes.append(hash(line.data))
        self.newlines += scan.newlines
        self.consumed = scan.consumed


@dataclass(frozen=True, eq=False)
class Known:
    """A first look's head start: the caller holds the items of the file up to the size in ``seen``.

    ``seen`` is the file as the caller saw it under the shared lock (``follower.seen_of``).
    With the ``index`` of the bytes it read, the follower reads nothing it already has: its
    first look reads from there on, and whatever else happened is found as at any wake-up.
    Without one, the first look reads the whole file and delivers what follows that size
    as appended if only appends can have happened since (same inode, same mark, not shorter,
    a line's end there); otherwise every item, as ``replaced``.
    """

    seen: Seen
    index: LineIndex | None = None


Start = Literal["all", "now"] | int | Known


class FileState:
    """What a follower has delivered of one file, and how to bring it up to date.

    The index holds three numbers per line (start, end, hash), not the items, so following a
    long session costs 24 bytes per item.

    Example:
        >>> state = FileState(Path("s.jsonl"), "s")
        >>> seen = Seen((1, 2), 8, None)
        >>> state.update(seen, b'{"n":1}\\n', state.wanted(seen), "all")
        [Change(kind='appended', session_id='s', items=[{'n': 1}], count=1)]
    """

    def __init__(self, path: Path, session_id: str) -> None:
        self.path = path
        self.session_id = session_id
        self.exists = False
        self._identity: tuple[int, int] | None = None
        self._mark: bytes | None = None
        self._starts = array("q")
        self._ends = array("q")
        self._hashes = array("q")
        self._consumed = 0
        self._newlines = 0
        self._digest: hashlib.blake2b | None = hashlib.blake2b(digest_size=16)  # None: not known

    @property
    def count(self) -> int:
        """How many items the follower holds (as delivered)."""
        return len(self._starts)

    def wanted(self, seen: Seen) -> int:
        """From which offset the file's bytes are needed: 0 (all) unless only appends can have happened."""
        if not self._appends_only(seen):
            return 0
        return self._starts[-1] if self._starts else self._consumed

    def update(self, seen: Seen, data: bytes, offset: int, start: Start | None) -> list[Change] | None:
        """The changes, given the file's bytes from ``offset`` (from :meth:`wanted`) to its end.

        Returns None when those bytes show that more happened than appends (the last line
        changed): call again with the whole file (``offset`` 0). ``start`` is for the first
        look only (which items already there to deliver); None afterwards.
        """
        if offset:
            return self._after_prefix(data, offset, seen)
        first = not self.exists
        if first or start is not None:
            return self._first(seen, data, start)
        prefix = data[: self._consumed]
        same_file = seen.identity == self._identity and not _other_file(self._mark, seen.mark)
        if same_file and len(prefix) == self._consumed and self._same_prefix(prefix):
            changes = self._after_prefix(data, 0, seen)
            if changes is not None:
                return changes
        return self._compare(seen, data)

    def adopt(self, known: Known, index: LineIndex) -> None:
        """Hold the lines a caller read (``index``) as delivered, the file being as ``known`` saw it.

        The digest of those bytes is not known: a look that reads the whole file compares lines.
        """
        self._starts, self._ends, self._hashes = index.starts, index.ends, index.hashes
        self._consumed, self._newlines, self._digest = index.consumed, index.newlines, None
        self._identity, self._mark, self.exists = known.seen.identity, known.seen.mark, True

    def gone(self) -> list[Change]:
        """The file no longer exists."""
        if not self.exists:
            return []
        count = self.count
        self._reset()
        return [Change("deleted", self.session_id, [], count)]

    # -- the three ways to catch up ---------------------------------------------------------

    def _appends_only(self, seen: Seen) -> bool:
        return (
            self.exists
            and seen.identity == self._identity
            and seen.mark is not None
            and seen.mark == self._mark
            and seen.size >= self._consumed
        )

    def _same_prefix(self, prefix: bytes) -> bool:
        if self._digest is None:
            return False
        return hashlib.blake2b(prefix, digest_size=16).digest() == self._digest.digest()

    def _after_prefix(self, data: bytes, offset: int, seen: Seen) -> list[Change] | None:
        """What follows ``consumed`` is appended, if the last delivered line is still intact; else None."""
        consumed = self._consumed
        if self._starts:
            start, end = self._starts[-1], self._ends[-1]
            line = data[start - offset : end - offset]
            if len(line) != end - start or hash(line) != self._hashes[-1]:
                return None
            if end == consumed and data[end - offset : end - offset + 1] not in (b"", b"\n"):
                return None  # bytes glued to a last line that had no newline: it is another line now
        scan = scan_lines(data[consumed - offset :], offset=consumed, first_number=self._newlines + 1)
        items = self._decode(scan.lines)
        if self._digest is not None:
            self._digest.update(data[consumed - offset : scan.consumed - offset])
        self._commit(scan, keep=self.count, seen=seen)
        return [Change("appended", self.session_id, items, len(items))] if items else []

    def _first(self, seen: Seen, data: bytes, start: Start | None) -> list[Change]:
        scan = scan_lines(data)
        if isinstance(start, Known):
            return self._since(start.seen, seen, data, scan)
        items = self._decode(_selected(scan.lines, start))
        self._rebuild(data, scan, seen)
        return [Change("appended", self.session_id, items, len(items))] if items else []

    def _since(self, before: Seen, seen: Seen, data: bytes, scan: Scan) -> list[Change]:
        """A first look from where a caller left off (``Known`` without an index): see :class:`Known`."""
        size = before.size
        appended = (
            seen.identity == before.identity
            and before.mark is not None
            and seen.mark == before.mark
            and seen.size >= size
            and (size == 0 or data[size - 1 : size] == b"\n")
        )
        items = self._decode([line for line in scan.lines if line.start >= size] if appended else scan.lines)
        self._rebuild(data, scan, seen)
        if appended:
            return [Change("appended", self.session_id, items, len(items))] if items else []
        return [Change("replaced", self.session_id, items, len(items))]

    def _compare(self, seen: Seen, data: bytes) -> list[Change]:
        scan = scan_lines(data)
        known = self.count
        new_file = seen.identity != self._identity or _other_file(self._mark, seen.mark)
        common = 0 if new_file else _common_prefix(self._hashes, self._ends, self._starts, scan.lines)
        items = self._decode(scan.lines[common:])
        self._rebuild(data, scan, seen)
        removed = known - common
        if common == 0 and (removed or new_file):
            if not items:
                return [Change("cleared", self.session_id, [], known)] if known else []
            return [Change("replaced", self.session_id, items, len(items))]
        changes = []
        if removed:
            changes.append(Change("removed", self.session_id, [], removed))
        if items:
            changes.append(Change("appended", self.session_id, items, len(items)))
        return changes

    # -- bookkeeping ------------------------------------------------------------------------------

    def _decode(self, lines: Sequence[Line]) -> list[Any]:
        items = []
        with codec.gc_paused():
            for line in lines:
                item = parse_item(line.data)
                if item is None:
                    problem = describe_bad_line(line.data) or "not a valid item"
                    raise MalformedLineError(self.path, problem, line.number)
                items.append(item)
        return items

    def _rebuild(self, data: bytes, scan: Scan, seen: Seen) -> None:
        self._digest = hashlib.blake2b(data[: scan.consumed], digest_size=16)
        self._newlines = 0
        self._commit(scan, keep=0, seen=seen)

    def _commit(self, scan: Scan, *, keep: int, seen: Seen) -> None:
        del self._starts[keep:], self._ends[keep:], self._hashes[keep:]
        for line in scan.lines:
            self._starts.append(line.start)
            self._ends.append(line.end)
            self._hashes.append(hash(line.data))
        self._newlines += scan.newlines
        self._consumed = scan.consumed
        self._identity, self._mark, self.exists = seen.identity, seen.mark, True

    def _reset(self) -> None:
        self.exists = False
        self._identity = self._mark = None
        del self._starts[:], self._ends[:], self._hashes[:]
        self._consumed = self._newlines = 0
        self._digest = hashlib.blake2b(digest_size=16)


def _other_file(before: bytes | None, now: bytes | None) -> bool:
    """Do both marks exist and name different files (a new file, even with the old inode number)?"""
    return before is not None and now is not None and before[:8] != now[:8]


def _common_prefix(hashes: array[int], ends: array[int], starts: array[int], lines: list[Line]) -> int:
    """How many leading lines are the same, byte for byte (length and hash), in both lists."""
    common = 0
    for index in range(min(len(hashes), len(lines))):
        line = lines[index]
        if ends[index] - starts[index] != len(line.data) or hashes[index] != hash(line.data):
            break
        common += 1
    return common


def _selected(lines: list[Line], start: Start | None) -> list[Line]:
    """The lines of a first look that ``start`` asks to deliver (the rest are only indexed)."""
    if start is None or start == "all":
        return lines
    if start == "now" or start == 0:
        return []
    assert isinstance(start, int)
    return lines[max(0, len(lines) - start) :]
