"""Turn stored items into readable text, for ``show``, ``tail``, ``grep`` and ``stats``.

Items are whatever the Agents SDK stored (Responses API input items): messages with a
``role`` and ``content`` (a string or a list of parts), ``function_call`` /
``function_call_output`` pairs, ``reasoning`` with a ``summary``, and other tool items.
Rendering never fails on an unexpected shape: unknown items are shown as compact JSON.
"""

from __future__ import annotations

from ..core.codec import dumps_any
from .terminal_text import printable

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from typing import Any, ClassVar

TOOL_TEXT_WIDTH = 200


def label(item: dict[str, Any]) -> str:
    """The role of a message (``user``, ``assistant``...), otherwise the item's ``type``.

    Example:
        >>> label({"role": "user", "content": "hi"}), label({"type": "function_call"})
        ('user', 'function_call')
    """
    role = item.get("role")
    if isinstance(role, str) and item.get("type", "message") == "message":
        return role
    kind = item.get("type")
    return kind if isinstance(kind, str) else "item"


def text_of(item: dict[str, Any]) -> str:
    """The searchable text of an item: message text, tool arguments and outputs, reasoning summaries.

    Example:
        >>> text_of({"role": "user", "content": [{"type": "input_text", "text": "hello"}]})
        'hello'
    """
    kind = item.get("type")
    if kind == "function_call":
        return f"{item.get('name', '?')}({_as_text(item.get('arguments', ''))})"
    if kind == "reasoning":
        return _parts_text(item.get("summary"))
    if "content" in item:
        return _parts_text(item["content"])
    if "output" in item:
        return _parts_text(item["output"])
    return ""


def render(item: dict[str, Any], *, number: int | None = None, style: Style | None = None) -> str:
    """One item as transcript text; tool arguments and outputs are shortened.

    Control characters from the item are shown escaped
    (:func:`~jsonl_session.render.terminal_text.printable`), so only ``style``'s own colour
    codes reach the terminal.

    Example:
        >>> render({"type": "function_call", "name": "add", "arguments": '{"a":1}', "call_id": "c1"})
        'tool call add {"a":1}  [c1]'
    """
    style = style or Style(False)
    prefix = f"{number:>4}  " if number is not None else ""
    kind = item.get("type")
    if kind == "function_call":
        arguments = printable(shorten(_as_text(item.get("arguments", ""))))
        head = style.tool(printable(f"{heading(item)} {item.get('name', '?')}"))
        return f"{prefix}{head} {arguments}  [{printable(str(item.get('call_id', '?')))}]"
    if kind == "function_call_output":
        head = style.tool(printable(f"{heading(item)} [{item.get('call_id', '?')}]"))
        return f"{prefix}{head}: {printable(shorten(_parts_text(item.get('output'))))}"
    if kind == "reasoning":
        summary = printable(_parts_text(item.get("summary"))) or "(no summary)"
        return f"{prefix}{style.dim('reasoning')}: {summary}"
    if "role" in item and kind in (None, "message"):
        return f"{prefix}{style.role(printable(label(item)))}: {printable(_parts_text(item.get('content')))}"
    return f"{prefix}{style.dim(printable(label(item)))}: {printable(shorten(_as_text(item)))}"


def heading(item: dict[str, Any]) -> str:
    """How ``show`` and ``grep`` both name an item: its role, ``tool call``, ``tool output``...

    Example:
        >>> heading({"type": "function_call", "name": "add"}), heading({"role": "user", "content": "hi"})
        ('tool call', 'user')
    """
    return _HEADINGS.get(str(item.get("type")), "") or label(item)


_HEADINGS = {"function_call": "tool call", "function_call_output": "tool output"}


def shorten(text: str, width: int = TOOL_TEXT_WIDTH) -> str:
    """Collapse whitespace and cut ``text`` to ``width`` characters, marking the cut.

    Example:
        >>> shorten("a  b\\n c" + "x" * 10, width=8)
        'a b cxx…'
    """
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


class Style:
    """ANSI colours, or none at all (pipes, files, ``NO_COLOR``)."""

    _ROLE_COLOURS: ClassVar[dict[str, str]] = {
        "user": "32",
        "assistant": "36",
        "system": "35",
        "developer": "35",
    }

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def _paint(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled else text

    def role(self, text: str) -> str:
        return self._paint("1;" + self._ROLE_COLOURS.get(text, "34"), text)

    def tool(self, text: str) -> str:
        return self._paint("33", text)

    def dim(self, text: str) -> str:
        return self._paint("2", text)

    def match(self, text: str) -> str:
        return self._paint("1;31", text)


def _parts_text(value: Any) -> str:
    """Text of a ``content``/``output``/``summary`` value: a string or a list of parts."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return " ".join(piece for piece in map(_part_text, value) if piece)
    return _as_text(value)


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return _as_text(part)
    for key in ("text", "refusal"):
        if isinstance(part.get(key), str):
            return str(part[key])
    kind = part.get("type", "part")
    if kind == "input_file":
        return f"[file {part.get('filename', '')}]".replace(" ]", "]")
    if kind == "input_image":
        return "[image]"
    return f"[{kind}]"


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    # Not repr(): it recurses, and a 1,000-deep line that reading accepted made show,
    # stats and grep fail with RecursionError (tests/render/test_hostile_content.py).
    return dumps_any(value).decode()
