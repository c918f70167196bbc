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

import importlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from .errors import JSONLSessionError

BATCH = 500

Progress = Callable[[int, int], None]
"""Called as ``progress(items_copied, items_total)`` after each batch."""


class BackendUnavailable(JSONLSessionError):
    """The backend named by a URL needs a package that is not installed (the message says which)."""


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
        ValueError: the URL's scheme is not one this function knows.
        BackendUnavailable: the backend's package is not installed.

    Example:
        >>> async with open_url("sqlite:///chats.db", "c1") as remote:   # doctest: +SKIP
        ...     print(len(await remote.get_items()))
    """
    scheme = url.split(":", 1)[0].lower() if "://" in url else ""
    if scheme == "sqlite":
        session = _sqlite_session(url, session_id)
        try:
            yield session
        finally:
            session.close()
    elif scheme in ("redis", "rediss", "unix"):
        session = _redis_session(url, session_id)
        try:
            yield session
        finally:
            await session.close()
    elif scheme:
        session = _sqlalchemy_session(url, session_id)
        try:
            yield session
        finally:
            await session.engine.dispose()
    else:
        raise ValueError(
            f"{url!r} is not a backend URL; use sqlite:///path.db, sqlite+aiosqlite:///path.db "
            "(or another SQLAlchemy URL) or redis://host:port/db"
        )


def _sqlite_session(url: str, session_id: str) -> Any:
    path = url[len("sqlite:///") :] if url.lower().startswith("sqlite:///") else ""
    if not path or path == ":memory:":
        raise ValueError(f"{url!r}: give a database file, e.g. sqlite:///chats.db")
    try:
        from agents.memory import SQLiteSession
    except ImportError:
        raise BackendUnavailable(_missing("sqlite:///", "pip install 'jsonl-session[agents]'")) from None
    return SQLiteSession(session_id, path)


def _redis_session(url: str, session_id: str) -> Any:
    try:
        from agents.extensions.memory.redis_session import RedisSession
    except ImportError:
        raise BackendUnavailable(_missing("redis://", "pip install 'jsonl-session[redis]'")) from None
    return RedisSession.from_url(session_id, url=url)


def _sqlalchemy_session(url: str, session_id: str) -> Any:
    scheme, rest = url.split(":", 1)
    if scheme.lower() in ("postgresql", "postgres"):
        # SQLAlchemy's default PostgreSQL driver (psycopg2) is synchronous; the SDK needs an async one.
        try:
            importlib.import_module("asyncpg")
        except ImportError:
            raise BackendUnavailable(
                f"{scheme}:// needs the asyncpg driver: pip install 'jsonl-session[postgresql]'"
            ) from None
        url = "postgresql+asyncpg:" + rest
    try:
        from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
    except ImportError:
        raise BackendUnavailable(
            _missing("SQLAlchemy URLs", "pip install 'jsonl-session[sqlalchemy]' (or the URL's own driver)")
        ) from None
    try:
        return SQLAlchemySession.from_url(session_id, url=url, create_tables=True)
    except ImportError as exc:  # the driver named in the URL (aiosqlite, asyncpg...)
        raise BackendUnavailable(f"{url.split(':', 1)[0]}: driver not installed ({exc})") from None
    except Exception as exc:  # noqa: BLE001  (sqlalchemy's ArgumentError and friends: a malformed URL)
        raise ValueError(f"{url!r}: not a usable SQLAlchemy URL ({exc})") from None


def _missing(what: str, how: str) -> str:
    return f"{what} needs the Agents SDK backend that is not installed: {how}"
