"""How a copy's destination stands against its source, by content: up to date, behind, or different.

An incremental copy (``export``/``import``, single or ``--all``) appends only what the
destination lacks, and only when what it holds is exactly the start of the source, item for
item: the same JSON, type for type and key for key (``1`` is not ``1.0``, see
``core.codec.identical``). Counting items is not enough: a destination with as many items as the
source, or fewer, may hold other ones (another writer, an edit, a rewound turn).

Example:
    >>> compare([{"n": 1}, {"n": 2}], [{"n": 1}])
    Comparison(state='behind', at=1)
    >>> compare([{"n": 1}], [{"n": 1.0}]).describe(), compare([{"n": 1}], [{"n": 1}]).describe()
    ('differs at item 1', 'up to date')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from ..core.codec import identical

__all__ = ["Comparison", "compare"]

State = Literal["up to date", "behind", "differs"]


@dataclass(frozen=True)
class Comparison:
    """The destination against the source.

    ``state`` is ``up to date`` (the same items), ``behind`` (a strict prefix: ``at`` is how many
    items it holds, so ``source[at:]`` is the missing tail) or ``differs`` (``at`` is the
    0-based index of the first item that is not the source's; ``describe()`` counts from 1).
    A destination that holds all the source's items and more ``differs`` at ``len(source)``.
    """

    state: State
    at: int

    def describe(self) -> str:
        """``up to date``, ``N items behind`` is not said here (the copy says ``appended N``),
        ``differs at item K`` (K from 1, as ``show`` numbers items)."""
        if self.state == "differs":
            return f"differs at item {self.at + 1}"
        return "up to date" if self.state == "up to date" else f"holds the first {self.at}"


def compare(source: Sequence[Any], destination: Sequence[Any]) -> Comparison:
    """Compare ``destination``'s items with ``source``'s, item by item from the first.

    Example:
        >>> compare([{"n": 1}], [])
        Comparison(state='behind', at=0)
        >>> compare([{"n": 1}], [{"n": 1}, {"n": 2}])
        Comparison(state='differs', at=1)
    """
    for index, (mine, theirs) in enumerate(zip(source, destination)):
        if not _same(mine, theirs):
            return Comparison("differs", index)
    if len(destination) > len(source):
        return Comparison("differs", len(source))
    if len(destination) == len(source):
        return Comparison("up to date", len(source))
    return Comparison("behind", len(destination))


def _same(mine: Any, theirs: Any) -> bool:
    """``core.codec.identical``, in C for what orjson writes: its bytes keep key order and tell ``1``
    from ``1.0`` and ``true``; what it cannot write (huge integers, deep nesting) is walked."""
    try:
        return bool(orjson.dumps(mine) == orjson.dumps(theirs))
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return identical(mine, theirs)
