"""A session's default title: its first user message, shortened.

What ``ls``, ``SessionDirectory.list()``, ``get_metadata`` and the viewer show for a session
that has no title set. Cheap to import, as ``jsonl-session ls`` shows it
(``tests/project/test_startup.py``): the item text helpers, and nothing of turns or metadata.
"""

from __future__ import annotations

from ..core import reads, scanner
from ..render.item_text import shorten, text_of

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

TEXT_WIDTH = 60
"""How many characters of a user message a title or a turn's text keeps."""


def is_user_message(item: Any) -> bool:
    """True for the message that opens a turn: ``role`` ``user``, no type or type ``message``.

    Example:
        >>> is_user_message({"role": "user", "content": "hi"})
        True
        >>> is_user_message({"type": "function_call_output", "call_id": "c1", "output": "ok"})
        False
    """
    return isinstance(item, dict) and item.get("role") == "user" and item.get("type", "message") == "message"


def default_title(item: Any) -> str | None:
    """A title from a user message: its text, whitespace collapsed, cut to 60 characters.

    Example:
        >>> default_title({"role": "user", "content": "What's the\\n weather in Paris?"})
        "What's the weather in Paris?"
    """
    if not isinstance(item, dict):
        return None
    return shorten(text_of(item), TEXT_WIDTH) or None


def first_user_message(fd: int, size: int, *, parse: Callable[[bytes], Any] = scanner.parse_item) -> Any:
    """The first user message of an open session file (read up to it, a piece at a time), or None.

    Only lines that contain ``"user"`` are decoded, by ``parse`` (a line's item, or None): a
    listing passes the standard ``json`` module's, which loads ~13 ms sooner than orjson.
    """

    def user_message(line: bytes) -> Any:
        item = parse(line)
        return item if is_user_message(item) else None

    return reads.first_line_where(fd, size, b'"user"', user_message)


def listed_default_title(fd: int, size: int) -> str | None:
    """:func:`default_title` of the file's first user message, decoded by the standard ``json``
    module: a listing (``ls``) finds the title without loading orjson, ~13 ms of its start-up."""
    return default_title(first_user_message(fd, size, parse=_json_item))


def _json_item(line: bytes) -> Any:
    import json

    try:
        item = json.loads(line)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested too deep
        return None
    return item if type(item) is dict else None
