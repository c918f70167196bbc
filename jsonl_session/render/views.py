"""What a transcript shows of each item, worked out once for every renderer (HTML, Markdown, diff text).

The renderers only lay out :class:`ItemView` objects, so they agree on what a tool call, a
handoff or a reasoning summary is, and the rules live in one place. The text comes from
:mod:`jsonl_session.render.item_text` (``label``, ``text_of``), as for ``show`` and ``grep``.

Session content is untrusted, and a file may hold anything. Reading for a view is lenient: a
line that is not a valid item is shown as an ``invalid`` item with its raw text (``show``
would refuse the whole file; a viewer's job is to show what is there, and ``git diff`` must
work on a broken file too). Text is made safe to encode: lone surrogates become U+FFFD, and
:func:`visible_controls` makes control characters visible for the text renderers.

Example:
    >>> [view] = views_of_lines(b'{"role": "user", "content": "Hi"}\\n')
    >>> view.number, view.kind, view.text
    (1, 'user', 'Hi')
"""

from __future__ import annotations

import os
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..core import codec, reads, scanner
from ..core.transaction import Transaction
from .item_text import label, text_of

HANDOFF_PREFIX = "transfer_to_"
"""The Agents SDK names a handoff's tool ``transfer_to_<agent>`` (``Handoff.default_tool_name``)."""
_HANDOFF_BYTES = HANDOFF_PREFIX.encode()

TONES = ("user", "assistant", "system", "tool", "output", "reasoning", "handoff", "other", "invalid")
"""The fixed set of looks a renderer knows; ``kind`` is free text from the session, ``tone`` is not."""

_ROLE_TONES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@dataclass(slots=True)
class Block:
    """A piece of machine text shown in monospace: tool arguments, a tool output, a raw item.

    Attributes:
        caption: What it is (``arguments``, ``output``, ``item``, ``line``).
        text: The text, pretty-printed when it is JSON.
        lang: ``json`` when ``text`` is JSON (for a Markdown fence), else empty.
    """

    caption: str
    text: str
    lang: str = ""


@dataclass(slots=True)
class ItemView:
    """One item as a transcript shows it. orjson serialises it as it is (the HTML page's data).

    Attributes:
        number: The item's line number in the file (1-based), as ``check`` and ``grep`` report it.
        kind: What a filter selects on: the role of a message (``user``...), ``handoff``, else the
            item's ``type`` (``function_call``, ``reasoning``...), or ``invalid`` for a bad line.
        tone: One of :data:`TONES`, for colours and icons (never session text).
        title: A short heading: ``user``, ``tool call get_weather``, ``handoff to billing``.
        text: The prose: message text, reasoning summary (may be empty).
        blocks: Monospace parts, in order.
        ref: The ``call_id`` that ties a tool call to its output, or empty.

    Example:
        >>> ViewBuilder().view({"type": "reasoning", "summary": [{"text": "Think"}]}, 3).title
        'reasoning'
    """

    number: int
    kind: str
    tone: str
    title: str
    text: str = ""
    blocks: list[Block] = field(default_factory=list)
    ref: str = ""


class ViewBuilder:
    """Turns items into views, one after the other, remembering which tool calls were handoffs.

    A handoff's output says ``{"assistant": "Billing agent"}``; it is only recognisable through
    its call, so the builder keeps the handoff ``call_id`` values it has seen.

    Example:
        >>> builder = ViewBuilder()
        >>> builder.view({"type": "function_call", "name": "transfer_to_billing", "call_id": "c1"}, 1).kind
        'handoff'
        >>> builder.view({"type": "function_call_output", "call_id": "c1", "output": "{}"}, 2).kind
        'handoff'
    """

    def __init__(self) -> None:
        self._handoffs: set[str] = set()

    def reset(self) -> None:
        """Forget what was seen (the session was cleared or rewritten)."""
        self._handoffs.clear()

    def note(self, item: Any) -> None:
        """Remember what ``item`` means for the views after it, without making its view (cheap)."""
        if type(item) is dict and item.get("type") == "function_call":
            name, call_id = _string(item.get("name")), _string(item.get("call_id"))
            if name.startswith(HANDOFF_PREFIX) and call_id:
                self._handoffs.add(call_id)

    def view(self, item: Any, number: int) -> ItemView:
        """The view of ``item``, the ``number``-th line of its file."""
        if not isinstance(item, dict):
            return _invalid(number, "not a JSON object", orjson.dumps(item, default=repr).decode())
        try:
            return self._view(item, number)
        except (TypeError, ValueError, AttributeError):  # a shape nobody planned for: show it raw
            return ItemView(number, label(item), "other", label(item), "", [_raw(item)])

    def _view(self, item: dict[str, Any], number: int) -> ItemView:
        kind = item.get("type")
        call_id = _string(item.get("call_id"))
        if kind == "function_call":
            name = _string(item.get("name")) or "?"
            arguments = Block("arguments", *_pretty(item.get("arguments", "")))
            if name.startswith(HANDOFF_PREFIX):
                if call_id:
                    self._handoffs.add(call_id)
                target = name[len(HANDOFF_PREFIX) :] or "?"
                return ItemView(
                    number, "handoff", "handoff", f"handoff to {target}", "", [arguments], call_id
                )
            return ItemView(number, "function_call", "tool", f"tool call {name}", "", [arguments], call_id)
        if kind == "function_call_output":
            output = Block("output", *_pretty(text_of(item)))
            if call_id in self._handoffs:
                return ItemView(number, "handoff", "handoff", "handoff accepted", "", [output], call_id)
            return ItemView(number, "function_call_output", "output", "tool output", "", [output], call_id)
        if kind == "reasoning":
            return ItemView(number, "reasoning", "reasoning", "reasoning", text_of(item) or "(no summary)")
        role = label(item)
        if "role" in item and kind in (None, "message"):
            return ItemView(number, role, _ROLE_TONES.get(role, "other"), role, text_of(item))
        # Hosted tools, MCP, computer use, item references...: what text there is, and the item.
        tone = "output" if kind is not None and str(kind).endswith("_output") else "tool"
        return ItemView(number, role, tone, role, text_of(item), [_raw(item)], call_id)


def views_of_lines(data: bytes) -> list[ItemView]:
    """Views of every line in ``data`` (a whole file's bytes), numbered as the file's lines.

    Blank lines are skipped (their numbers too); a bad line or a torn last line becomes an
    ``invalid`` view.
    """
    builder = ViewBuilder()
    views = []
    scan = scanner.scan_lines(data)
    last = scan.newlines + 1  # the line after the last newline: a torn tail if not an item
    with codec.gc_paused():  # 100,000 items make ~10 objects each: no collection passes meanwhile
        for number, item, line in _lines_of(scan, codec.decoder_for(data)):
            views.append(_line_view(builder, number, item, line, torn=number == last))
    return views


def scan_lines(data: bytes) -> Iterator[tuple[int, dict[str, Any] | None, bytes]]:
    """``(line number, item or None, line bytes)`` for every non-blank line of a file's bytes.

    The lines are split by :func:`jsonl_session.core.scanner.scan_lines`, the one scanner every reader
    uses (BOM, CRLF, blank lines, a valid last line without its newline). The bytes after the
    last newline that are not an item (a torn tail) come last, as None.
    """
    return _lines_of(scanner.scan_lines(data), codec.decoder_for(data))


def views_of_scans(
    scans: Iterable[scanner.Scan],
    builder: ViewBuilder | None = None,
    *,
    torn_tail: bool = True,
    each: Callable[[scanner.Line, dict[str, Any] | None], object] | None = None,
) -> Iterator[ItemView]:
    """The views :func:`views_of_lines` gives, one at a time, from a file scanned in pieces.

    ``scans`` are :func:`jsonl_session.core.reads.scan_file`'s (the last one carries the torn
    tail, if any): memory holds one piece, whatever the file's size (``show --html``).
    ``builder`` (a new one by default) is left as the lines leave it, for items that follow.
    ``torn_tail`` False leaves out a torn tail (a live view: a write may be under way).
    ``each`` is given every line with its item (None: not an item), for a reader that needs
    more of them than their views (``serve``'s page: its turns), without parsing them twice.
    """
    builder = builder or ViewBuilder()
    next_number = 1  # of the line after the scans so far
    for scan in scans:
        with codec.gc_paused():
            if each is None:
                views = [
                    _line_view(builder, line.number, _item(line.data), line.data, torn=False)
                    for line in scan.lines
                ]
            else:
                views = []
                for line in scan.lines:
                    item = _item(line.data)
                    each(line, item)
                    views.append(_line_view(builder, line.number, item, line.data, torn=False))
        yield from views
        next_number += scan.newlines
        if torn_tail and scan.pending and not codec.is_blank(scan.pending):  # only in the last scan
            yield _line_view(builder, next_number, None, scan.pending, torn=True)


def prime(builder: ViewBuilder, scans: Iterable[scanner.Scan]) -> int | None:
    """Feed ``builder`` what the lines leave in it, and count the views they make, making none.

    None as soon as a line is not an item: the views would flag it. A torn tail is not
    counted, as a session follower does not count it.
    """
    count = 0
    for scan in scans:
        for line in scan.lines:
            item = _item(line.data)
            if item is None:
                return None
            builder.note(item)
            count += 1
    return count


def _lines_of(
    scan: scanner.Scan, loads: Callable[[bytes], Any]
) -> Iterator[tuple[int, dict[str, Any] | None, bytes]]:
    for line in scan.lines:
        yield line.number, _item(line.data, loads), line.data
    if scan.pending and not codec.is_blank(scan.pending):
        yield scan.newlines + 1, None, scan.pending


def newest_views(
    path: str | os.PathLike[str], count: int, *, lock_timeout: float
) -> tuple[list[ItemView], int, int]:
    """The views of the newest ``count`` lines, how many views the whole file has, and its size.

    One pass in pieces under the shared lock, keeping ``count`` lines: ``show --html -n 1`` of
    a 300 MB session held the file, its lines and their items at once (tests/project/test_memory.py).
    The views are the ones :func:`views_of_lines` gives for the same lines: handoff calls
    before the window are still recognised, and a torn tail is still named.
    """
    with Transaction(Path(path), write=False, timeout=lock_timeout) as file:
        if not file.exists:
            raise FileNotFoundError(2, "No such file or directory", str(path))
        size = os.fstat(file.fd).st_size
        window = _Window(count)
        for scan in reads.scan_file(file.fd, size):  # about 1 MB at a time
            window.take(scan)
    return window.views(), window.total, size


class _Window:
    """The newest lines seen so far, and what the lines before them left in a ViewBuilder."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.total = 0
        self.next_number = 1
        self._lines: deque[tuple[int, bytes, bool]] = deque()  # (number, bytes, torn)
        self._builder = ViewBuilder()

    def take(self, scan: scanner.Scan) -> None:
        lines = [(line.number, line.data, False) for line in scan.lines]
        self.next_number += scan.newlines
        if scan.pending and not codec.is_blank(scan.pending):  # only in the last scan
            lines.append((self.next_number, scan.pending, True))
        self.total += len(lines)
        for line in lines:
            self._lines.append(line)
            if len(self._lines) > self.count:
                self._before_window(*self._lines.popleft())

    def views(self) -> list[ItemView]:
        views = []
        with codec.gc_paused():
            for number, line, torn in self._lines:
                item = None if torn else _item(line)
                views.append(_line_view(self._builder, number, item, line, torn=torn))
        return views

    def _before_window(self, number: int, line: bytes, torn: bool) -> None:
        # Only a handoff call changes how later lines look; its name may be escaped (\u).
        if not torn and (_HANDOFF_BYTES in line or b"\\u" in line):
            item = _item(line)
            if item is not None:
                self._builder.view(item, number)


def _item(line: bytes, loads: Callable[[bytes], Any] = codec.decode_line) -> dict[str, Any] | None:
    """The item on ``line``, or None when it is not valid JSON or not an object."""
    try:
        item = loads(line)
    except ValueError:
        return None
    return item if type(item) is dict else None


def read_file(path: str | os.PathLike[str], *, lock_timeout: float) -> bytes:
    """A session file's bytes, read under its shared lock (so no half-written append is seen)."""
    with Transaction(Path(path), write=False, timeout=lock_timeout) as file:
        if not file.exists:
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return reads.read_range(file.fd, 0, os.fstat(file.fd).st_size)


def safe(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD, so it can be encoded as UTF-8.

    Example:
        >>> safe("ok \\ud800")
        'ok �'
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def visible_controls(text: str) -> str:
    """Control characters (but newline and tab) as their Unicode pictures, e.g. ESC as ``␛``.

    For text that goes to a terminal or into Markdown: an escape sequence from a session must
    not recolour a terminal or hide a line in ``git diff``.

    Example:
        >>> visible_controls("a\\x1b[31mb\\x00")
        'a␛[31mb␀'
    """
    return _CONTROLS.sub(_picture, text)


def encode_views(views: Iterable[ItemView]) -> bytes:
    """Views as a JSON array. Text read from a file is valid Unicode; text that is not (lone
    surrogates, from items built in Python) is repaired with :func:`safe`, so this cannot fail.
    """
    views = list(views)
    try:
        return orjson.dumps(views)
    except TypeError:
        return orjson.dumps([_safe_view(view) for view in views])


def encode_view(view: ItemView) -> bytes:
    """One view as a JSON object (see :func:`encode_views`)."""
    try:
        return orjson.dumps(view)
    except TypeError:
        return orjson.dumps(_safe_view(view))


def _safe_view(view: ItemView) -> ItemView:
    blocks = [Block(safe(block.caption), safe(block.text), block.lang) for block in view.blocks]
    return ItemView(
        view.number, safe(view.kind), view.tone, safe(view.title), safe(view.text), blocks, safe(view.ref)
    )


def _picture(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)
    return "\u2421" if code == 0x7F else "\ufffd"


def _line_view(builder: ViewBuilder, number: int, item: Any, line: bytes, *, torn: bool) -> ItemView:
    """The view of one line: its item's, or an ``invalid`` one saying why (a torn tail, bad JSON)."""
    if item is None:
        reason = "incomplete last line (torn tail)" if torn else _reason(line)
        return _invalid(number, reason, line.decode("utf-8", "replace"))
    return builder.view(item, number)


def _invalid(number: int, reason: str, raw: str) -> ItemView:
    return ItemView(
        number, "invalid", "invalid", f"unreadable line: {safe(reason)}", "", [Block("line", safe(raw))]
    )


def _reason(line: bytes) -> str:
    """``not valid JSON`` or ``not a JSON object``: the reason without the parser's details and snippet."""
    return (scanner.describe_bad_line(line) or "not a valid item").split(" (", 1)[0].split(":", 1)[0]


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _pretty(value: Any) -> tuple[str, str]:
    """``(text, lang)``: JSON (a string holding JSON, or a value) indented; other text as it is."""
    if isinstance(value, str):
        stripped = value.lstrip()
        if not stripped.startswith(("{", "[")):
            return value, ""
        try:
            value = orjson.loads(value)
        except ValueError:
            return value, ""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode(), "json"
    except TypeError:  # lone surrogates, huge integers
        return safe(repr(value)), ""


def _raw(item: dict[str, Any]) -> Block:
    return Block("item", *_pretty(item))
