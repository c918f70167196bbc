"""The line scanner: how the bytes of a session file split into lines and items, in one place.

Pure functions over bytes, no I/O: the readers (``reads``), the writers (``storage``), the
watcher, ``check``, ``grep``, the secrets scanner and the editors all split lines here, so
they agree with ``get_items`` on what a line, a blank line, a BOM and a torn tail are.
"""

from __future__ import annotations

from . import codec

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

_SNIPPET = 60

CONFLICT_MARKERS = (b"<<<<<<< ", b"=======", b">>>>>>> ", b"||||||| ")
"""How a line left by a text merge starts (``<<<<<<<`` alone on its line too)."""


def is_conflict_marker(line: bytes) -> bool:
    """Whether ``line`` (without its newline) is a git merge conflict marker line.

    Defined here, with the other rules of what a line is: ``ls`` counts no marker line as an
    item (a session with one needs a merge), and ``check`` and ``show`` name them.

    Example:
        >>> is_conflict_marker(b"<<<<<<< HEAD"), is_conflict_marker(b"======="), is_conflict_marker(b"{}")
        (True, True, False)
    """
    line = line.rstrip(b"\r")
    return line == b"<<<<<<<" or line.startswith(CONFLICT_MARKERS)


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
    r"""Split bytes of a session file into lines, by the format's rules, in one place.

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


def settled_end(data: bytes) -> int:
    r"""Where the whole lines of a file's bytes end: after the last newline, or at the end if what
    follows it is an item. Bytes past this are a line still being written or a torn tail.

    Example:
        >>> settled_end(b'{"a": 1}\n{"b"'), settled_end(b'{"a": 1}\n{"b": 2}')
        (9, 17)
    """
    end = data.rfind(b"\n") + 1
    tail = data[end:]
    if codec.is_blank(tail):
        return end
    return len(data) if parse_item(tail.removeprefix(codec.BOM) if end == 0 else tail) is not None else end


def lines_containing(data: bytes, needle: bytes) -> Iterator[bytes]:
    r"""Each line of a file's bytes that contains ``needle``, once, BOM removed; blank lines never.

    Finds ``needle`` in the raw bytes and takes the line around it, so a scan for the few
    lines that may matter (every user message contains ``user``) costs a search of the bytes,
    not a split of every line.

    Example:
        >>> list(lines_containing(b'{"role":"user"}\n{"role":"tool"}\n', b"user"))
        [b'{"role":"user"}']
    """
    position = 0
    find, rfind = data.find, data.rfind
    while True:
        found = find(needle, position)
        if found < 0:
            return
        start = rfind(b"\n", 0, found) + 1
        end = find(b"\n", found)
        if end < 0:
            end = len(data)
        line = data[start:end]
        yield line.removeprefix(codec.BOM) if start == 0 else line
        position = end + 1


def describe_bad_line(line: bytes) -> str | None:
    """Why ``line`` is not a valid item, or None if it is one (used by readers and ``check``)."""
    try:
        value = codec.decode_line(line)
    except ValueError as exc:
        return f"not valid JSON ({exc}): {_snippet(line)}"
    if not isinstance(value, dict):
        return f"not a JSON object (a {type(value).__name__}): {_snippet(line)}"
    return None


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


def _snippet(line: bytes) -> str:
    text = line[:_SNIPPET].decode("utf-8", errors="replace")
    return repr(text + ("..." if len(line) > _SNIPPET else ""))
