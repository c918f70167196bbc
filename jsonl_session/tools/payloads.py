"""Big payloads: which items of a session take the most bytes on disk, and what they are.

Base64 images and file contents grow session files to hundreds of megabytes, and one such item
is most of its session: ``stats`` says which (``input_image, 2.0 MB, line 1``) and ``check``
warns about any item over a size (``check --max-item-bytes``). Nothing here changes an item or
what the model receives. A session is read a piece at a time, and only a line big enough to be
among the largest is parsed.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import codec, reads, scanner
from ..core.transaction import Transaction

LARGE_ITEM_BYTES = 1024 * 1024
"""Where ``check`` starts to warn: an item of 1 MiB is already ~250,000 tokens of base64."""
LARGEST = 5
"""How many of the largest items ``stats`` names."""
NOTABLE_BYTES = 64 * 1024
"""The smallest item ``stats`` names among the largest: below it, size is not the story."""


@dataclass(frozen=True, order=True)
class LargeItem:
    """One item's line: its size in bytes, its line number, what it is (``input_image``...)."""

    size: int
    line: int
    kind: str


def kind_of(item: Any) -> str:
    """What takes the room in ``item``: the type of its biggest content part, else its own type.

    Example:
        >>> kind_of({"role": "user", "content": [
        ...     {"type": "input_text", "text": "what is this?"},
        ...     {"type": "input_image", "image_url": "data:image/png;base64," + "A" * 1000}]})
        'input_image'
        >>> kind_of({"type": "function_call_output", "call_id": "c", "output": "x" * 99})
        'function_call_output'
    """
    if not isinstance(item, dict):
        return "not an object"
    content = item.get("content")
    if isinstance(content, list) and content:
        parts = [part for part in content if isinstance(part, dict)]
        if parts:
            biggest = max(parts, key=lambda part: len(codec.dumps_any(part)))
            return str(biggest.get("type", "content part"))
    return str(item.get("type") or item.get("role") or "item")


def largest_items(fd: int, size: int, *, count: int = LARGEST, over: int = 0) -> list[LargeItem]:
    """The ``count`` biggest lines over ``over`` bytes of an open session file, biggest first."""
    kept: list[tuple[int, int, bytes]] = []  # (size, -line, its line while it may be kept): a heap
    for scan in reads.scan_file(fd, size):
        for line in scan.lines:
            length = len(line.data)
            if length <= over or (len(kept) == count and length <= kept[0][0]):
                continue
            entry = (length, -line.number, line.data)
            if len(kept) < count:
                heapq.heappush(kept, entry)
            else:
                heapq.heapreplace(kept, entry)
    found = []
    for length, negative_line, data in kept:
        item = scanner.parse_item(data)
        kind = "malformed line" if item is None else kind_of(item)
        found.append(LargeItem(length, -negative_line, kind))
    return sorted(found, key=lambda large: (-large.size, large.line))


def session_largest(
    path: str | Path, *, count: int = LARGEST, over: int = 0, lock_timeout: float
) -> list[LargeItem]:
    """:func:`largest_items` of the session at ``path``, read under its shared lock ([] without a file)."""
    with Transaction(Path(path), write=False, timeout=lock_timeout) as file:
        if not file.exists:
            return []
        return largest_items(file.fd, file.size, count=count, over=over)
