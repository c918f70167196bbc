"""What a folder of sessions holds, counted: items by role, characters, tool calls, tokens,
bytes on disk and the largest items (``tools.payloads``: a 2 MB image is one item of 31 characters).

``jsonl-session stats`` prints this; a dashboard or a script can call it directly.

Example:
    >>> stats = folder_stats(SessionDirectory("sessions"))             # doctest: +SKIP
    >>> stats.sessions, stats.items, stats.tool_calls, stats.tools.most_common(1)  # doctest: +SKIP
    (12, 340, 41, [('get_weather', 17)])
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import JSONLSessionError
from ..history.turn_growth import Growth, read_growth
from ..history.usage import COUNTERS
from ..render.item_text import label, text_of
from ..session.folder import SessionDirectory
from .payloads import LARGEST, NOTABLE_BYTES, LargeItem, session_largest


@dataclass
class Stats:
    """Counts over the sessions that could be read.

    ``tokens`` holds the token totals (``JSONLSession.get_session_usage_sync``) of each
    session that has a usage log, by id; ``archived`` the same for sessions ``prune`` moved
    to the archive (``tools.retention.archived_usage``); :attr:`tokens_total` adds up both.
    """

    sessions: int = 0
    items: int = 0
    characters: int = 0
    """Characters of text as a transcript shows it (``render.item_text.text_of``)."""
    by_role: Counter[str] = field(default_factory=Counter)
    """Items by role or type: ``user``, ``assistant``, ``function_call``, ``reasoning``..."""
    tools: Counter[str] = field(default_factory=Counter)
    """Tool calls (``function_call`` items) by tool name."""
    tokens: dict[str, dict[str, int]] = field(default_factory=dict)
    archived: dict[str, dict[str, int]] = field(default_factory=dict)
    """Usage totals of archived sessions, by id (counted in no other field but :attr:`tokens_total`)."""
    bytes: int = 0
    """Bytes on disk of the session files (sidecars not counted)."""
    largest: list[tuple[str, LargeItem]] = field(default_factory=list)
    """The largest items of 64 KiB or more (``payloads.LARGEST`` of them), biggest first, with
    their session's id."""

    @property
    def tool_calls(self) -> int:
        """Tool calls in all: the sum of :attr:`tools`."""
        return sum(self.tools.values())

    @property
    def tokens_total(self) -> dict[str, int]:
        """Token counters and runs summed over every session with a usage log, archived ones
        included (all 0 if none)."""
        logs = [*self.tokens.values(), *self.archived.values()]
        return {name: sum(totals.get(name, 0) for totals in logs) for name in (*COUNTERS, "runs")}

    def as_dict(self) -> dict[str, Any]:
        """The counts as plain JSON values (``stats --json``): roles and tools most common first."""
        return {
            "sessions": self.sessions,
            "items": self.items,
            "characters": self.characters,
            "tool_calls": self.tool_calls,
            "bytes": self.bytes,
            "largest": [
                {"id": session_id, "line": large.line, "bytes": large.size, "kind": large.kind}
                for session_id, large in self.largest
            ],
            "by_role": dict(self.by_role.most_common()),
            "tools": dict(self.tools.most_common()),
            "tokens": {"total": self.tokens_total, "by_session": self.tokens, "archived": self.archived},
        }

    def add(
        self,
        session_id: str,
        items: list[Any],
        usage: dict[str, int] | None,
        size: int = 0,
        largest: Sequence[LargeItem] = (),
    ) -> None:
        """Count one session's items and its usage totals (None: it has no usage log), its file's
        ``size`` and its ``largest`` items."""
        self.sessions += 1
        self.bytes += size
        ranked = self.largest + [(session_id, large) for large in largest]
        self.largest = sorted(ranked, key=lambda pair: -pair[1].size)[:LARGEST]
        if usage is not None:
            self.tokens[session_id] = usage
        for item in items:
            self.items += 1
            self.by_role[label(item)] += 1
            self.characters += len(text_of(item))
            if item.get("type") == "function_call":
                self.tools[str(item.get("name", "?"))] += 1


def folder_stats(
    folder: SessionDirectory,
    ids: Sequence[str] | None = None,
    *,
    on_error: Callable[[str, Exception], None] | None = None,
) -> Stats:
    """Count the sessions ``ids`` of ``folder`` (all of them when None).

    Each session's items and usage log are read in one step. A session that cannot be read
    (no permission, a conflicted file, its lock held past the folder's ``lock_timeout``, a
    broken usage log) goes to ``on_error(session_id, error)`` and is left out of every count;
    without ``on_error`` its error is raised. Counting the whole folder, a session deleted
    since it was listed is left out without a word, and the usage of its archived sessions is
    added (:attr:`Stats.archived`); an unreadable archive goes to ``on_error`` under its file name.
    """
    stats = Stats()
    if ids is None:
        from .retention import archived_usage

        def archive_error(path: Path, exc: Exception) -> None:
            if on_error is None:
                raise exc
            on_error(path.name, exc)

        stats.archived = archived_usage(folder, on_error=archive_error)
    for session_id in folder.ids() if ids is None else ids:
        try:
            session = folder.open(session_id)
            try:
                items = session.get_items_sync()
                usage = session.get_session_usage_sync()
                largest = session_largest(session.path, over=NOTABLE_BYTES, lock_timeout=folder.lock_timeout)
                size = session.path.stat().st_size
            finally:
                session.close()
        except (OSError, JSONLSessionError) as exc:
            if ids is None and isinstance(exc, FileNotFoundError):
                continue  # deleted since the folder was listed
            if on_error is None:
                raise
            on_error(session_id, exc)
            continue
        stats.add(session_id, items, usage, size, largest)
    return stats


def folder_growth(
    folder: SessionDirectory,
    ids: Sequence[str] | None = None,
    *,
    on_error: Callable[[str, Exception], None] | None = None,
) -> dict[str, Growth]:
    """Context growth per turn (``history.turn_growth``) of the sessions ``ids`` (all when None).

    ``stats --turns`` prints it. A session that cannot be read goes to ``on_error``, and one
    deleted since the folder was listed is left out, as in :func:`folder_stats`.

    Example:
        >>> growth = folder_growth(SessionDirectory("sessions"), ["convo_123"])   # doctest: +SKIP
        >>> growth["convo_123"].first_over(128_000)                             # doctest: +SKIP
    """
    answer: dict[str, Growth] = {}
    for session_id in folder.ids() if ids is None else ids:
        try:
            path = folder.session_path(session_id)
            growth = read_growth(path, lock_timeout=folder.lock_timeout)
            if ids is None and not os.path.lexists(path):
                continue  # deleted since the folder was listed (a missing file reads as empty)
            answer[session_id] = growth
        except (OSError, JSONLSessionError) as exc:
            if on_error is None:
                raise
            on_error(session_id, exc)
    return answer
