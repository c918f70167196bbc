"""Run-context routing: one ``JSONLSession`` object serving many users, each kept apart.

The Agents SDK (0.24 and newer) hands a session its run's ``RunContextWrapper`` when all four
history methods accept a keyword ``wrapper``; ``JSONLSession``'s do. Given a ``route`` at
construction, each call the Runner makes goes to the session the route picks from the run
context: the same id, in the route's folder, owned by the route's owner. Without a route, or
without a wrapper (your own calls, the blocking twins, an older SDK), the session's own file is
used: nothing changes.

The owner is the guard that keeps users apart even in one folder: a routed call reads or writes
a session only if its ``.meta`` names the route's owner, or if the session is new or empty, in
which case the first write records the owner (under the session's lock, so two processes
routing two owners to one id cannot both claim it). Anything else is :class:`OwnerMismatchError`
before an item is read or written.

Routed sessions are kept open in a small cache (a descriptor each, so the folder is fsynced
once per file, not once per call); the least recently used one that no call is using is
closed when the cache is full.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import OwnerMismatchError
from ..core.locking import MISSING
from ..history import metadata

if TYPE_CHECKING:
    from .store import JSONLSession

__all__ = ["Route", "Router"]

CACHED_SESSIONS = 128
"""Routed sessions kept open at once (one descriptor each)."""


@dataclass(frozen=True)
class Route:
    """Where a run's session lives: its folder and its owner (both optional).

    Args:
        directory: The folder of this run's sessions (None: the session's own folder). Build
            it from values you trust: a user id typed by a user is not a safe folder name.
        owner: Recorded as the session's owner on its first write (``ls --owner``,
            ``get_metadata``); a session owned by someone else is refused.

    Example:
        >>> def by_user(wrapper):                                   # doctest: +SKIP
        ...     user = wrapper.context.user_id
        ...     return Route(directory=f"sessions/{user}", owner=user)
        >>> session = JSONLSession("support", route=by_user)         # doctest: +SKIP
    """

    directory: str | os.PathLike[str] | None = None
    owner: str | None = None

    def __post_init__(self) -> None:
        if self.owner is not None:
            metadata.changed(metadata.SessionMetadata(), owner=self.owner)  # same rules as set_metadata


RouteFunction = Callable[[Any], "Route | None"]


class _Entry:
    __slots__ = ("session", "users")

    def __init__(self, session: JSONLSession) -> None:
        self.session = session
        self.users = 0


class Router:
    """The routed twins of one session, and the four history calls made through them."""

    def __init__(self, route: RouteFunction, make: Callable[[Path], JSONLSession], home: Path) -> None:
        if not callable(route):
            raise TypeError(f"route must be a callable taking the run context, not {type(route).__name__}")
        self._route = route
        self._make = make
        self._home = home
        self._entries: OrderedDict[Path, _Entry] = OrderedDict()
        self._lock = threading.Lock()  # held for microseconds: one object may serve many threads

    async def get_items(self, wrapper: Any, limit: int | None) -> list[Any]:
        with self._twin(wrapper) as (session, owner):
            await _check_owner(session, owner, write=False)
            return await session.get_items(limit)

    async def add_items(self, wrapper: Any, items: Any) -> None:
        with self._twin(wrapper) as (session, owner):
            await _check_owner(session, owner, write=True)
            await session.add_items(items)

    async def pop_item(self, wrapper: Any) -> Any:
        with self._twin(wrapper) as (session, owner):
            await _check_owner(session, owner, write=False)
            return await session.pop_item()

    async def clear_session(self, wrapper: Any) -> None:
        with self._twin(wrapper) as (session, owner):
            await _check_owner(session, owner, write=False)
            await session.clear_session()

    @contextmanager
    def _twin(self, wrapper: Any) -> Iterator[tuple[JSONLSession, str | None]]:
        route = self._route(wrapper)
        if route is None:
            route = Route()
        elif not isinstance(route, Route):
            raise TypeError(f"route(wrapper) must return a Route or None, not {type(route).__name__}")
        folder = self._home if route.directory is None else Path(route.directory)
        with self._lock:
            entry = self._entries.get(folder)
            if entry is None:
                entry = self._entries[folder] = _Entry(self._make(folder))
                self._close_idle()
            self._entries.move_to_end(folder)
            entry.users += 1
        try:
            yield entry.session, route.owner
        finally:
            with self._lock:
                entry.users -= 1

    def _close_idle(self) -> None:
        """Close the least recently used sessions no call is using, down to the cache's size."""
        excess = len(self._entries) - CACHED_SESSIONS
        for folder in [folder for folder, entry in self._entries.items() if not entry.users][:excess]:
            self._entries.pop(folder).session.close()

    def close(self) -> None:
        with self._lock:
            for entry in self._entries.values():
                entry.session.close()
            self._entries.clear()


async def _check_owner(session: JSONLSession, owner: str | None, *, write: bool) -> None:
    """Refuse another owner's session; claim a new or empty one for ``owner`` on a write.

    The common case (the owner already recorded) reads one small sidecar on the loop; a claim
    takes the session's lock and writes in a worker thread.
    """
    if owner is None:
        return
    if metadata.read_metadata(session.path).owner == owner:
        return
    if write:
        await session.locked_in_thread(_claim_locked, session, owner, write=True, create=True)
    else:
        await session.locked_in_thread(_refuse_locked, session, owner, write=False)


def _claim_locked(fd: int, session: JSONLSession, owner: str) -> None:
    stored = metadata.read_metadata(session.path)
    if stored.owner == owner:
        return
    if stored.owner is not None or os.fstat(fd).st_size:
        raise OwnerMismatchError(session.path, _refusal(stored.owner))
    metadata.write_metadata(session.path, metadata.changed(stored, owner=owner), durable=session.durable)


def _refuse_locked(fd: int, session: JSONLSession, owner: str) -> None:
    """A read or removal: a missing or empty session holds nothing to protect; anything else is refused."""
    stored = metadata.read_metadata(session.path)
    if stored.owner == owner or fd == MISSING:
        return
    if stored.owner is not None or os.fstat(fd).st_size:
        raise OwnerMismatchError(session.path, _refusal(stored.owner))


def _refusal(stored: str | None) -> str:
    if stored is None:
        return (
            "has items but no owner, so a routed run may not use it; "
            "give it one with set_metadata(owner=...) or `jsonl-session meta --owner`"
        )
    return "belongs to another owner; a routed run uses only its own owner's sessions"
