"""A session's title, tags, owner and extra mapping: ``MetadataMethods``, one of ``JSONLSession``'s mixins.

The sidecar and its rules are :mod:`jsonl_session.history.metadata`; here the session takes its
lock around them: ``set_metadata`` reads, changes and replaces ``<file>.jsonl.meta`` under the
session's exclusive lock (so concurrent changes from other processes are never lost), and
``get_metadata`` reads it with the first user message (the default title) under the shared one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..core.locking import MISSING
from ..history import metadata, titles
from ..history.metadata import KEEP, Keep, SessionMetadata
from .locked_operations import LockedOperations


class MetadataMethods(LockedOperations):
    """``get_metadata`` / ``set_metadata`` and their blocking twins."""

    def get_metadata_sync(self) -> SessionMetadata:
        """The session's title, tags, owner and extra mapping, with its default title.

        A session without a ``.meta`` file (or without a file at all) has empty metadata;
        ``default_title`` is its first user message, shortened (None if it has none).

        Raises:
            SessionFileError: the ``.meta`` file was broken by hand (it names the file).

        Example:
            >>> session.get_metadata_sync().shown_title          # doctest: +SKIP
            "What's the weather in Paris?"
        """
        with self.locked(write=False, create=False) as fd:
            return self._get_metadata_locked(fd)

    async def get_metadata(self) -> SessionMetadata:
        """The asynchronous equivalent of :meth:`get_metadata_sync`."""
        return await self.locked_in_thread(self._get_metadata_locked, write=False)

    def _get_metadata_locked(self, fd: int) -> SessionMetadata:
        stored = metadata.read_metadata(self.path)
        if fd == MISSING:
            return stored
        first = titles.first_user_message(fd, self._handle.size)
        return _with_default(stored, titles.default_title(first))

    def set_metadata_sync(
        self,
        *,
        title: str | None | Keep = KEEP,
        tags: Iterable[str] | Keep = KEEP,
        add_tags: Iterable[str] = (),
        remove_tags: Iterable[str] = (),
        owner: str | None | Keep = KEEP,
        extra: Mapping[str, Any] | Keep = KEEP,
    ) -> SessionMetadata:
        """Change the session's metadata, atomically under its lock; return the new metadata.

        Only what is given changes. ``title`` and ``owner``: a string sets, None clears.
        ``tags`` replaces the tags; ``add_tags`` / ``remove_tags`` add and remove some (tags are
        kept sorted, once each). ``extra`` is merged into the free-form mapping, a None value
        removing its key. A session without a file is created empty first, so an owner can be
        set before the first run. When nothing is left set, the ``.meta`` file is removed.

        Raises:
            ValueError: an empty or multi-line title, owner or tag, one too long, an ``extra``
                value JSON cannot store exactly, or more than 64 KiB in all (nothing written).

        Example:
            >>> session.set_metadata_sync(
            ...     title="Refund A-1042", add_tags=["billing"], owner="user-42"
            ... )  # doctest: +SKIP
            SessionMetadata(title='Refund A-1042', tags=('billing',), owner='user-42', ...)
        """
        changes = _changes(title, tags, add_tags, remove_tags, owner, extra)
        with self.locked(write=True, create=True) as fd:
            return self._set_metadata_locked(fd, changes)

    async def set_metadata(
        self,
        *,
        title: str | None | Keep = KEEP,
        tags: Iterable[str] | Keep = KEEP,
        add_tags: Iterable[str] = (),
        remove_tags: Iterable[str] = (),
        owner: str | None | Keep = KEEP,
        extra: Mapping[str, Any] | Keep = KEEP,
    ) -> SessionMetadata:
        """The asynchronous equivalent of :meth:`set_metadata_sync`."""
        changes = _changes(title, tags, add_tags, remove_tags, owner, extra)
        return await self.locked_in_thread(self._set_metadata_locked, changes, write=True, create=True)

    def _set_metadata_locked(self, fd: int, changes: dict[str, Any]) -> SessionMetadata:
        first = titles.first_user_message(fd, self._handle.size)
        current = _with_default(metadata.read_metadata(self.path), titles.default_title(first))
        new = metadata.changed(current, **changes)
        metadata.write_metadata(self.path, new, durable=self.durable)
        return new


def _changes(
    title: Any, tags: Any, add_tags: Iterable[str], remove_tags: Iterable[str], owner: Any, extra: Any
) -> dict[str, Any]:
    """The changes, checked before the lock is taken (a bad value writes nothing)."""
    changes = {
        "title": title,
        "tags": tags if tags is KEEP else list(metadata.string_list("tags", tags)),
        "add_tags": list(metadata.string_list("add_tags", add_tags)),
        "remove_tags": list(metadata.string_list("remove_tags", remove_tags)),
        "owner": owner,
        "extra": extra,
    }
    metadata.changed(SessionMetadata(), **changes)  # raises now, not under the lock
    return changes


def _with_default(stored: SessionMetadata, default: str | None) -> SessionMetadata:
    return SessionMetadata(stored.title, stored.tags, stored.owner, stored.extra, stored.updated_at, default)
