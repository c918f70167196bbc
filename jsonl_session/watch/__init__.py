"""Follow sessions live, the way ``tail -F`` follows a log, but item by item.

Several processes share one conversation: an agent writes it, a UI or a log viewer follows it.
A watch yields :class:`Change` objects, in order, that say what happened to the file: items
``appended``, items ``removed`` from the end (``pop_item``), ``cleared``, ``replaced`` (the file
was rewritten or swapped, e.g. by an editor or ``git checkout``) or ``deleted``. Applying them
with :func:`apply` to a list rebuilds the session's items, exactly: at every quiet point the
list equals ``get_items()`` (see docs/live-tail.md, "The guarantee", for the guarantee and its limits).

    async for change in session.watch(start="all"):      # or: for change in session.watch_sync()
        apply(change, items)

The package has one module per job: ``changes`` (what is yielded), ``engine`` (the pure
change engine: what was delivered + what the file holds -> changes), ``follower`` (reading the
files under the lock; one session or a folder), ``wakeups`` (``watchfiles`` events),
``delivery`` (the one state machine, and its blocking face), ``aio`` (its async face) and
``options`` (:class:`WatchOptions`). This module holds the four entry points.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from .aio import DirectoryWatch, SessionWatch
from .changes import Change, Kind, apply
from .delivery import Delivery, DirectoryWatchSync, SessionWatchSync
from .engine import Known, Start
from .follower import Follower
from .options import (
    DEFAULT_IDLE_STEP_MS,
    DEFAULT_POLL_DELAY_MS,
    DEFAULT_STEP_MS,
    HOT_SECONDS,
    TICK_SECONDS,
    StopFlag,
    WatchOptions,
)


class WatchedSession(Protocol):
    """What a session watch needs of a session (``JSONLSession`` has it): its file and lock wait.

    A protocol rather than the class, so that ``watch`` sits below ``session`` in the layers.
    """

    @property
    def directory(self) -> Path: ...
    @property
    def session_id(self) -> str: ...
    @property
    def lock_timeout(self) -> float: ...


__all__ = [
    "DEFAULT_IDLE_STEP_MS",
    "DEFAULT_POLL_DELAY_MS",
    "DEFAULT_STEP_MS",
    "HOT_SECONDS",
    "TICK_SECONDS",
    "Change",
    "DirectoryWatch",
    "DirectoryWatchSync",
    "Kind",
    "SessionWatch",
    "SessionWatchSync",
    "Start",
    "StopFlag",
    "WatchOptions",
    "WatchedSession",
    "apply",
    "watch_directory",
    "watch_directory_sync",
    "watch_session",
    "watch_session_sync",
]


def watch_session(
    session: WatchedSession, options: WatchOptions | None = None, **settings: Any
) -> SessionWatch:
    """Follow one session live: an async iterator (and async context manager) of :class:`Change`.

    Args:
        session: The session to follow; its file need not exist yet. Its ``lock_timeout`` applies.
        options: A :class:`WatchOptions`; or give its fields as keywords: ``start`` (``"all"``,
            default: replay the items there as one ``appended`` change, then follow; ``"now"``;
            or the newest ``n``), ``stop_event`` (once set, what the file holds is delivered
            and the watch ends, so a list kept with :func:`apply` then equals the file),
            ``force_polling``, ``poll_delay_ms``, ``step_ms``, ``idle_step_ms``.

    Leaving the ``async with`` block, ``aclose()``, or breaking out of the loop and dropping
    the object stops it at once; its thread ends within one step.

    Example:
        >>> async with session.watch(start="now") as changes:     # doctest: +SKIP
        ...     async for change in changes:
        ...         print(change.kind, change.items)
    """
    return SessionWatch(_session_delivery(session, options, settings))


def watch_session_sync(
    session: WatchedSession, options: WatchOptions | None = None, **settings: Any
) -> SessionWatchSync:
    """Blocking twin of :func:`watch_session`: an iterator (and context manager) of :class:`Change`.

    Runs in the calling thread (no thread of its own). ``raise_interrupt`` (an option): Ctrl-C
    while waiting closes the watch and re-raises ``KeyboardInterrupt`` (default), or, if
    False, just ends the iteration. ``catch_up()`` returns every change up to now without
    waiting for an event.

    Example:
        >>> items = []
        >>> with session.watch_sync() as changes:                 # doctest: +SKIP
        ...     for change in changes:
        ...         apply(change, items)
    """
    return SessionWatchSync(_session_delivery(session, options, settings))


def watch_directory(
    directory: str | os.PathLike[str], options: WatchOptions | None = None, **settings: Any
) -> DirectoryWatch:
    """Follow every session in a folder: sessions appearing, changing and being deleted.

    Yields the same :class:`Change` objects as :func:`watch_session`; ``session_id`` says
    which session. ``start`` applies to each session present at the start (replayed in id
    order); a session that appears later is always delivered in full. A deleted session
    yields ``deleted``; the folder need not exist yet. A session that cannot be read
    (malformed or conflicted, unreadable, locked for longer than ``lock_timeout``) yields
    ``failed`` with the error, once, and the others are still followed. Options as for
    :func:`watch_session`, plus ``lock_timeout``.

    Example:
        >>> sessions: dict[str, list] = {}
        >>> async for change in watch_directory("sessions"):        # doctest: +SKIP
        ...     if change.kind == "deleted":
        ...         sessions.pop(change.session_id, None)
        ...     else:
        ...         apply(change, sessions.setdefault(change.session_id, []))
    """
    return DirectoryWatch(_directory_delivery(directory, options, settings))


def watch_directory_sync(
    directory: str | os.PathLike[str], options: WatchOptions | None = None, **settings: Any
) -> DirectoryWatchSync:
    """Blocking twin of :func:`watch_directory` (see :func:`watch_session_sync` for ``raise_interrupt``).

    Example:
        >>> for change in watch_directory_sync("sessions", start="now"):   # doctest: +SKIP
        ...     print(change.session_id, change.kind, change.count)
    """
    return DirectoryWatchSync(_directory_delivery(directory, options, settings))


def _options(options: WatchOptions | None, settings: dict[str, Any]) -> WatchOptions:
    try:
        return replace(options or WatchOptions(), **settings)
    except TypeError:
        unknown = sorted(set(settings) - set(WatchOptions.__dataclass_fields__))
        raise TypeError(f"unknown watch option(s): {', '.join(unknown)}") from None


def _session_delivery(
    session: WatchedSession, options: WatchOptions | None, settings: dict[str, Any]
) -> Delivery:
    if "lock_timeout" in settings:
        raise TypeError("a session watch uses the session's lock_timeout; set session.lock_timeout instead")
    chosen = replace(_options(options, settings), lock_timeout=session.lock_timeout)
    return Delivery(Follower(session.directory, session.session_id, chosen.lock_timeout), chosen)


def _directory_delivery(
    directory: str | os.PathLike[str], options: WatchOptions | None, settings: dict[str, Any]
) -> Delivery:
    chosen = _options(options, settings)
    if isinstance(chosen.start, Known):
        raise TypeError("a folder watch cannot start from one file's Known position")
    return Delivery(Follower(Path(directory), None, chosen.lock_timeout), chosen)
