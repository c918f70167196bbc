"""What a watch yields: :class:`Change`, and :func:`apply` to mirror a session in a list."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["appended", "removed", "cleared", "replaced", "deleted", "failed"]


@dataclass(frozen=True)
class Change:
    """One thing that happened to a session file, as seen by a watch.

    Attributes:
        kind: ``"appended"``: ``items`` were added at the end.
            ``"removed"``: the last ``count`` items were removed (``pop_item``).
            ``"cleared"``: the file has no items any more (``clear_session``, or pops that emptied it).
            ``"replaced"``: the file was rewritten or swapped (rename, editor, ``git checkout``, or
            cleared and refilled between two wake-ups); ``items`` is the whole new list.
            ``"deleted"``: the file was removed; the session has no items.
            ``"failed"``: only from a folder watch: this session cannot be read now (a malformed
            or conflicted line, no permission, its lock held too long); ``error`` says why
            (file and line). The other sessions are still followed; once this one reads
            again it arrives as ``replaced``. :func:`apply` leaves the list as it was.
        session_id: Which session changed (useful with :func:`~jsonl_session.watch.watch_directory`).
        items: The appended items, or for ``replaced`` the complete new list; empty otherwise.
        count: How many items were appended or removed (for ``replaced``, ``len(items)``).
        error: For ``failed``: the exception (e.g. :class:`~jsonl_session.MalformedLineError`).

    Example:
        >>> Change("appended", "convo_123", [{"role": "user", "content": "Hi"}], 1)
        Change(kind='appended', session_id='convo_123', items=[{'role': 'user', 'content': 'Hi'}], count=1)
    """

    kind: Kind
    session_id: str
    items: list[Any] = field(default_factory=list)
    count: int = 0
    error: BaseException | None = field(default=None, repr=False, compare=False)


def apply(change: Change, items: list[Any]) -> list[Any]:
    """Apply ``change`` to ``items`` in place (and return it), to mirror the session in memory.

    With ``start="all"`` the list then equals the session's items as of the change (at every
    quiet point, see docs/live-tail.md, "The guarantee"). With ``start="now"`` or a number it
    holds the newest items seen (removing more items than the list holds empties it), until
    a ``replaced`` change hands over the full list.

    Example:
        >>> items = [{"n": 1}, {"n": 2}]
        >>> apply(Change("removed", "s", count=1), items)
        [{'n': 1}]
        >>> apply(Change("appended", "s", [{"n": 3}], 1), items)
        [{'n': 1}, {'n': 3}]
    """
    if change.kind == "appended":
        items.extend(change.items)
    elif change.kind == "removed":
        del items[max(0, len(items) - change.count) :]
    elif change.kind == "replaced":
        items[:] = change.items
    elif change.kind in ("cleared", "deleted"):
        items.clear()
    elif change.kind != "failed":
        raise ValueError(f"unknown change kind {change.kind!r}")
    return items
