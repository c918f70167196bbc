"""The rows of the ``serve`` index (and ``/api/sessions``): one session's cells as JSON values.

Kept apart from ``server`` so that the server module stays about requests.
"""

from __future__ import annotations

from datetime import datetime, timezone

from ..session.listing import SessionInfo, held_note


def index_row(info: SessionInfo) -> dict[str, object]:
    """An index row: id, title (or the first user message, ``default_title`` true), owner, tags,
    items, size, modified (the file), last activity (its newest item), notes (a paused run and
    the items it holds back, a fork's source) and ``held``, that count. What ``ls`` lists."""
    notes = []
    if info.paused:
        notes.append(", ".join(filter(None, ["paused run", held_note(info.held)])))
    if info.forked_from:
        notes.append(f"forked from {info.forked_from}")
    title, default = info.title, False
    if title is None:
        title = info.default_title
        default = title is not None
    return {
        "id": info.session_id,
        "title": title,
        "default_title": default,
        "owner": info.owner,
        "tags": list(info.tags),
        "items": info.items,
        "size": info.size,
        "modified": info.modified.isoformat(timespec="seconds"),
        # What the index shows and orders by, as ``ls`` does: when the newest item was added.
        "last_activity": datetime.fromtimestamp(info.last_activity, timezone.utc).isoformat(
            timespec="seconds"
        ),
        "notes": notes,
        "held": info.held,  # items a paused run holds back from the history (SDK 0.24's guardrails)
    }
