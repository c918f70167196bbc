"""Copy a conversation between any two Agents SDK sessions, and open the SDK's backends by URL.

This is how a conversation moves to a shared backend when one machine is no longer enough
(``jsonl-session export``), or comes back to a file for reading and fixing
(``jsonl-session import``). Any two objects with the ``Session`` methods work, so the copy
itself knows nothing about files, SQL or Redis.

URLs understood by :func:`open_url`:

* ``sqlite:///path.db``: the SDK's ``SQLiteSession`` (relative path; ``sqlite:////abs.db``
  for an absolute one, as in SQLAlchemy);
* ``postgresql://user:password@host:5432/db`` (or ``postgres://``): ``SQLAlchemySession`` with
  the asyncpg driver (needs ``jsonl-session[postgresql]``); same as ``postgresql+asyncpg://``;
* any other SQLAlchemy async URL (``sqlite+aiosqlite:///x.db``, ``mysql+aiomysql://...``):
  ``SQLAlchemySession`` (needs ``jsonl-session[sqlalchemy]``, or the URL's own driver);
* ``redis://``, ``rediss://``, ``unix://``: ``RedisSession`` (needs ``jsonl-session[redis]``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from ..core.errors import BackendUnavailable, InvalidBackendURL
from .sdk_schema import (
    MESSAGES_TABLE,
    SESSIONS_TABLE,
    id_problem,
    kind_of,
    redis_client,
    redis_ids,
    session_key,
    sql_engine,
    sql_ids,
    unique,
)
from .urls import quotes_password, shown_url

__all__ = [
    "Backend",
    "BackendUnavailable",
    "Progress",
    "copy_session",
    "open_backend",
    "open_url",
    "quotes_password",
    "shown_url",
]

BATCH = 500

Progress = Callable[[int, int], None]
"""Called as ``progress(done, total)``: items for one session's copy (after each batch),
sessions for a whole folder's (``all_sessions``)."""


async def copy_session(source: Any, target: Any, *, progress: Progress | None = None) -> int:
    """Append every item of ``source`` to ``target``, in order, in batches; return how many.

    Items are passed through unchanged, so copying there and back gives equal items. The
    target is not cleared first: copy into an empty session for an exact copy.

    Example:
        >>> from agents import SQLiteSession                          # doctest: +SKIP
        >>> await copy_session(JSONLSession("c1"), SQLiteSession("c1", "chats.db"))  # doctest: +SKIP
        42
    """
    items = await source.get_items()
    total = len(items)
    if progress is not None:
        progress(0, total)
    for start in range(0, total, BATCH):
        await target.add_items(items[start : start + BATCH])
        if progress is not None:
            progress(min(start + BATCH, total), total)
    return total


@asynccontextmanager
async def open_url(url: str, session_id: str) -> AsyncIterator[Any]:
    """Open the SDK session stored under ``session_id`` at ``url``; close it on exit.

    Raises:
        InvalidBackendURL: not a URL, or a scheme this function does not know (a ValueError).
        BackendUnavailable: the backend's package is not installed.

    Example:
        >>> async with open_url("sqlite:///chats.db", "c1") as remote:   # doctest: +SKIP
        ...     print(len(await remote.get_items()))
    """
    async with open_backend(url) as backend:
        yield backend.session(session_id)


class Backend:
    """One connection to a backend, handing out its sessions (see :func:`open_backend`)."""

    def __init__(
        self,
        url: str,
        make: Callable[[str], Any],
        list_ids: Callable[[], Any],
        close: Callable[[Any], None],
        add_empty: Callable[[str], Any] | None = None,
        *,
        flavour: str = "sdk",
        handle: Any = None,
    ) -> None:
        self.url = url
        self.flavour = flavour
        """How copies write here: ``sqlite`` (an ``SQLiteSession`` file; ``handle`` is its path),
        ``redis`` (``handle``: the client), ``sqlalchemy`` (``handle``: the engine)."""
        self.handle = handle
        self.kind = kind_of(url)
        """What ``sdk_schema.refusal`` checks ids against: ``sqlite``, ``redis``, ``postgresql``, ``sql``."""
        self._make = make
        self._list_ids = list_ids
        self._close = close
        self._add_empty = add_empty

    def session(self, session_id: str) -> Any:
        """The SDK session stored under ``session_id`` (sharing this backend's connection)."""
        return self._make(session_id)

    def done(self, session: Any) -> None:
        """Free what ``session`` holds on its own (SQLite: its connection); the backend stays open."""
        self._close(session)

    async def session_ids(self) -> list[str]:
        """Ids of the sessions stored there (empty ones included), sorted; foreign ids left out."""
        return (await self.listing())[0]

    async def listing(self) -> tuple[list[str], list[tuple[str, str]]]:
        """The ids stored there, sorted, and the foreign ones: ``(shown id, why it is not one)``.

        A foreign id is one this package cannot copy to a file (not UTF-8 text, empty, not a
        usable file name): whatever wrote it, it is reported, not copied, and the rest goes on.
        """
        ids, foreign = set(), []
        for raw in await self._list_ids():
            shown, problem = id_problem(raw)
            if problem is None:
                ids.add(shown)
            else:
                foreign.append((shown, problem))
        return sorted(ids), sorted(foreign)

    async def add_empty(self, session_id: str) -> None:
        """Store ``session_id`` as a session with no items (see docs/backends.md, "Empty sessions")."""
        if self._add_empty is not None:
            await self._add_empty(session_id)


@asynccontextmanager
async def open_backend(url: str) -> AsyncIterator[Backend]:
    """Connect to the backend at ``url`` once, for many sessions; disconnect on exit.

    Copying a whole folder opens one engine or client here, not one per session.

    Example:
        >>> async with open_backend("redis://localhost:6379/0") as backend:   # doctest: +SKIP
        ...     print(await backend.session_ids())
        ['convo_123', 'support-42']
    """
    scheme = url.split(":", 1)[0].lower() if "://" in url else ""
    if scheme == "sqlite":
        path = _sqlite_path(url)
        opened: set[Any] = set()

        def make_sqlite(session_id: str) -> Any:
            session = _sqlite_session(path, session_id)
            opened.add(session)
            return session

        def close_sqlite(session: Any) -> None:
            opened.discard(session)
            session.close()

        try:
            yield Backend(
                url,
                make_sqlite,
                lambda: asyncio.to_thread(_sqlite_ids, path),
                close_sqlite,
                lambda session_id: asyncio.to_thread(_sqlite_add_empty, path, session_id),
                flavour="sqlite",
                handle=path,
            )
        finally:
            for session in list(opened):
                close_sqlite(session)
    elif scheme in ("redis", "rediss", "unix"):
        redis_session = _redis_session_class()
        client = redis_client(url)
        try:
            yield Backend(
                url,
                lambda session_id: redis_session(session_id, redis_client=client),
                lambda: redis_ids(client),
                _keep,
                lambda session_id: _redis_add_empty(client, session_id),
                flavour="redis",
                handle=client,
            )
        finally:
            await client.aclose()
    elif scheme:
        sql_session = _sqlalchemy_session_class()
        engine = sql_engine(url)

        def make_sql(session_id: str) -> Any:
            return sql_session(session_id, engine=engine)

        try:
            # Tables are checked (and created) once, by a read through the SDK, rather than by
            # every session: that inspection costs more than copying one (benchmarks/transfer.py).
            # (and the SDK's session configures the engine: SQLite's busy timeout and WAL, which
            # the batched writes rely on as the SDK's own writers do).
            await sql_session("jsonl-session-setup", engine=engine, create_tables=True).get_items(limit=1)
            yield Backend(
                url,
                make_sql,
                lambda: sql_ids(engine),
                _keep,
                lambda session_id: _sqlalchemy_add_empty(engine, session_id),
                flavour="sqlalchemy",
                handle=engine,
            )
        finally:
            await engine.dispose()
    else:
        raise InvalidBackendURL(
            f"{url!r} is not a backend URL; use sqlite:///path.db, sqlite+aiosqlite:///path.db "
            "(or another SQLAlchemy URL), postgresql://user@host/db or redis://host:port/db"
        )


# An empty session is stored as the SDK stores a session before its first item: a row of the
# sessions table with no messages (SQL), the session's hash with no message list (Redis).


def _keep(session: Any) -> None:
    """Sessions sharing one engine or client hold nothing of their own."""


def _sqlite_path(url: str) -> str:
    path = url[len("sqlite:///") :] if url.lower().startswith("sqlite:///") else ""
    if not path or path == ":memory:":
        raise InvalidBackendURL(f"{url!r}: give a database file, e.g. sqlite:///chats.db")
    return path


def _sqlite_session(path: str, session_id: str) -> Any:
    try:
        from agents.memory import SQLiteSession
    except ImportError:
        raise BackendUnavailable(_missing("sqlite:///", "pip install 'jsonl-session[agents]'")) from None
    return SQLiteSession(session_id, path)


def _sqlite_ids(path: str) -> list[object]:
    import os
    import sqlite3

    if not os.path.exists(path):
        return []  # nothing stored yet (an export creates it)
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        found: list[object] = []
        for table in (MESSAGES_TABLE, SESSIONS_TABLE):
            try:
                found += [row[0] for row in db.execute(f"SELECT DISTINCT session_id FROM {table}")]
            except sqlite3.OperationalError:  # no such table: nothing was ever stored there
                pass
        return unique(found)


def _sqlite_add_empty(path: str, session_id: str) -> None:
    session = _sqlite_session(path, session_id)  # creates the SDK's tables if missing
    session.close()
    import sqlite3

    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute(f"INSERT OR IGNORE INTO {SESSIONS_TABLE} (session_id) VALUES (?)", (session_id,))


def _redis_session_class() -> Any:
    try:
        from agents.extensions.memory.redis_session import RedisSession
    except ImportError:
        raise BackendUnavailable(_missing("redis://", "pip install 'jsonl-session[redis]'")) from None
    return RedisSession


async def _redis_add_empty(client: Any, session_id: str) -> None:
    import time

    key = session_key(session_id)
    await client.hset(key, "session_id", session_id)
    await client.hsetnx(key, "created_at", str(int(time.time())))


def _sqlalchemy_session_class() -> Any:
    try:
        from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
    except ImportError:
        raise BackendUnavailable(
            _missing("SQLAlchemy URLs", "pip install 'jsonl-session[sqlalchemy]' (or the URL's own driver)")
        ) from None
    return SQLAlchemySession


async def _sqlalchemy_add_empty(engine: Any, session_id: str) -> None:
    from sqlalchemy import text

    async with engine.begin() as connection:
        exists = await connection.execute(
            text(f"SELECT 1 FROM {SESSIONS_TABLE} WHERE session_id = :id"), {"id": session_id}
        )
        if exists.first() is None:
            await connection.execute(
                text(f"INSERT INTO {SESSIONS_TABLE} (session_id) VALUES (:id)"), {"id": session_id}
            )


def _missing(what: str, how: str) -> str:
    return f"{what} needs the Agents SDK backend that is not installed: {how}"
