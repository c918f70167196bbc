"""When each item was added: ``TimestampMethods``, one of ``JSONLSession``'s mixins.

The sidecar and its rules are :mod:`jsonl_session.core.item_times`: ``add_items`` stamps the
items it appends (``timestamps=True``, the default), pops, rewinds, clears and rewrites keep
the sidecar in step, and readers match times to items by each line's fingerprint, so hand
edits and rewrites keep the times of the items they keep. Here the session reads them under
its lock, beside the items they belong to. (``ls`` asks ``SessionInfo.last_activity``.)
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..core import item_times, reads
from ..core.locking import MISSING
from ..core.times_log import TimesLog
from .locked_operations import LockedOperations

if TYPE_CHECKING:
    from datetime import datetime

__all__ = ["TimestampMethods", "newest_lines", "utc_datetime"]


class TimestampMethods(LockedOperations):
    """``get_items_with_times`` and its blocking twin; the ``timestamps`` switch."""

    @property
    def timestamps(self) -> bool:
        """Whether this object records when the items it adds were added (``<file>.jsonl.times``).

        Off, it writes no sidecar and leaves one that exists alone; other writers (another
        object, the CLI) may still record theirs.
        """
        return self._times is not None

    @timestamps.setter
    def timestamps(self, value: bool) -> None:
        if bool(value) == (self._times is not None):
            return
        if self._times is not None:
            self._times.close()
        self._times = TimesLog(self.path) if value else None

    def get_items_with_times_sync(self, limit: int | None = None) -> list[tuple[Any, datetime | None]]:
        """The items ``get_items_sync(limit)`` returns, each with when it was added (UTC), read together.

        The time is None for an item added without one (``timestamps=False``, written by hand
        or by another tool, or before timestamps existed).

        Example:
            >>> for item, added in session.get_items_with_times_sync(limit=2):   # doctest: +SKIP
            ...     print(added and added.isoformat(timespec="seconds"), item["role"])
            2026-12-03T19:38:30+00:00 user
            2026-12-03T19:38:31+00:00 assistant
        """
        limit = self._resolve_limit(limit)
        if limit == 0:
            return []
        with self.locked(write=False, create=False) as fd:
            return self._items_with_times_locked(fd, limit)

    async def get_items_with_times(self, limit: int | None = None) -> list[tuple[Any, datetime | None]]:
        """The asynchronous equivalent of :meth:`get_items_with_times_sync`."""
        limit = self._resolve_limit(limit)
        if limit == 0:
            return []
        return await self.locked_in_thread(self._items_with_times_locked, limit, write=False)

    def _items_with_times_locked(self, fd: int, limit: int | None) -> list[tuple[Any, datetime | None]]:
        if fd == MISSING:
            return []
        items = self.read_locked(fd, limit)
        times = item_times.line_times(self.path, newest_lines(fd, self._handle.size, len(items)))
        return [(item, None if ms is None else utc_datetime(ms)) for item, ms in zip(items, times)]

    def all_items_with_times(self) -> tuple[list[Any], list[int | None]]:
        """Every item (whatever limit ``get_items`` applies) and its time in ms, read together.

        Internal: for ``SessionDirectory.fork``, whose copy keeps the source's times.
        """
        with self.locked(write=False, create=False) as fd:
            if fd == MISSING:
                return [], []
            size = self._handle.size
            items = reads.read_items(fd, self.path, size=size)
            return items, item_times.line_times(self.path, newest_lines(fd, size, len(items)))


def newest_lines(fd: int, size: int, count: int) -> list[bytes]:
    """The bytes of the newest ``count`` item lines (an unterminated last one included), oldest first."""
    if not count:
        return []
    lines, tail_item, tail_offset = reads.newest_lines(fd, size, count)
    found = [line for _, line in lines]
    if tail_item is not None:
        found.append(os.pread(fd, size - tail_offset, tail_offset))
    return found[-count:]


def utc_datetime(ms: int) -> datetime:
    """Milliseconds since 1970 as an aware UTC ``datetime``."""
    from datetime import datetime, timedelta, timezone

    return datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=ms)
