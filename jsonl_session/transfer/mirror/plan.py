"""What a mirror writes: the smallest difference between a session's file and its database copy.

Pure functions, no I/O: the SQL and Redis targets (``sql_target``, ``redis_target``) read the
stored rows inside their transaction and ask :func:`plan` what to remove and what to append.

Items are compared *by content*, as the Agents SDK stores them: both of its stores write
``json.dumps(item, separators=(",", ":"))`` (ASCII-escaped), so a file item is turned into that
text once (:func:`stored_text`) and a stored row is equal to it when its text is the same, or when
it decodes to a value whose SDK text is the same (a row written by another encoder). A row that
does not decode (the SDK's readers skip it) is never equal to anything, so it is replaced.

The database copy is made equal to the file by keeping its longest common prefix, removing
the rows after it and appending the file's items after it. Nothing else can be equal and
cheaper, and applying it twice changes nothing the second time (the second plan keeps all).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..sdk_schema import stored_text

__all__ = ["Applied", "DatabaseReset", "Plan", "plan", "same", "stored_text", "texts_of"]


def texts_of(items: Sequence[Any]) -> list[str]:
    """:func:`stored_text` of every item."""
    return [stored_text(item) for item in items]


def same(stored: str | bytes, text: str) -> bool:
    """Whether a stored row holds the item whose SDK text is ``text`` (compared by content).

    Example:
        >>> same(b'{"a": 1}', '{"a":1}'), same('{"a":true}', '{"a":1}'), same("not json", "1")
        (True, False, False)
    """
    if isinstance(stored, bytes):
        try:
            stored = stored.decode()
        except UnicodeDecodeError:
            return False
    if stored == text:
        return True
    try:
        return stored_text(json.loads(stored)) == text
    except ValueError:  # not JSON (the SDK skips such a row): differs
        return False


@dataclass(frozen=True)
class Plan:
    """Make a stored session equal to a file: keep ``keep`` rows, remove ``remove``, append ``add``."""

    keep: int
    remove: int
    add: list[str]

    @property
    def changes(self) -> bool:
        return bool(self.remove or self.add)


def plan(stored: Sequence[str | bytes], texts: Sequence[str], first: int = 0) -> Plan:
    """The smallest difference that makes ``stored`` rows equal to the file's ``texts``.

    ``stored`` may be only the rows from index ``first`` on (the first ``first`` rows being
    known equal): the plan is the same as for the whole list.

    Example:
        >>> plan(["1", "2", "3"], ["1", "2", "4", "5"])
        Plan(keep=2, remove=1, add=['4', '5'])
        >>> plan(["3"], ["1", "2", "3", "4"], first=2)
        Plan(keep=3, remove=0, add=['4'])
    """
    keep = first
    for row in stored:
        if keep >= len(texts) or not same(row, texts[keep]):
            break
        keep += 1
    return Plan(keep, first + len(stored) - keep, list(texts[keep:]))


class DatabaseReset(ConnectionError):
    """The database restarted and may have lost or rolled back what it held: compare everything."""


@dataclass(frozen=True)
class Applied:
    """What one ``sync`` found and did (or, in a dry run, would do)."""

    existed: bool
    """Whether the database held the session (items, or an empty session's row or hash)."""
    before: int
    """How many items it held."""
    plan: Plan
    """What was (or would be) kept, removed and appended."""
