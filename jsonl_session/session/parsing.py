"""Items from JSON Lines a person wrote (``jsonl-session add -``, an edited copy), all or none.

The lines are split by the core line scanner, the one every reader uses (a BOM, CRLF, blank
lines, a last line without its newline), and each must be an item that
``add_items`` stores exactly; the first one that is not stops the parse, naming its line, so
a caller writes all the items or none.

Example:
    >>> parse_items(b'{"role": "user", "content": "hi"}\\n\\n{"role": "assistant", "content": "yo"}')
    [{'role': 'user', 'content': 'hi'}, {'role': 'assistant', 'content': 'yo'}]
"""

from __future__ import annotations

import os

from ..core import codec, scanner
from ..core.errors import MalformedLineError

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from typing import Any


def parse_items(data: bytes, source: str | os.PathLike[str] = "<bytes>") -> list[Any]:
    """Every non-blank line of ``data`` as an item, in order.

    Raises:
        MalformedLineError: a line is not valid JSON, not a JSON object, or an item that would
            not read back exactly (NaN, a number too deep to store...); its ``path`` is
            ``source``, its ``line`` the line's number (blank lines count) and its ``message``
            the reason. Nothing is returned when one line is bad.
    """
    scan = scanner.scan_lines(data)
    lines = [(line.number, line.data) for line in scan.lines]
    if scan.pending and not codec.is_blank(scan.pending):  # a last line without its newline, not an item
        lines.append((scan.newlines + 1, scan.pending))
    items = []
    for number, line in lines:
        reason = scanner.describe_bad_line(line)
        if reason is None:
            item = codec.decode_line(line)
            try:
                codec.encode_items([item])
            except ValueError as exc:
                reason = str(getattr(exc, "reason", exc))
            else:
                items.append(item)
                continue
        raise MalformedLineError(source, reason, line=number)
    return items
