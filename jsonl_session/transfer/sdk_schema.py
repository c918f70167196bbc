"""The Agents SDK's storage schema, written down once: what both the copies and the mirror write.

The SDK's ``SQLAlchemySession`` and ``RedisSession`` store a session in a layout they do not
export; every module of ``transfer`` that reads or writes it takes it from here, so a second
reading of the SDK cannot drift from the first:

* **SQL**: ``agent_sessions`` (one row per session: ``session_id``, ``created_at``,
  ``updated_at``) and ``agent_messages`` (``id``, ``session_id``, ``message_data``,
  ``created_at``; read in order of ``created_at, id``), the SDK's default table names;
* **Redis**: the hash ``agents:session:<id>`` (``session_id``, ``created_at``,
  ``updated_at``), the list ``agents:session:<id>:messages`` (one text per item) and the
  counter ``agents:session:<id>:counter``, under the SDK's default ``key_prefix``;
* **an item's stored text**: ``json.dumps(item, separators=(",", ":"))`` (ASCII-escaped),
  the same in both stores (:func:`stored_text`).

It also says which ids a backend can hold exactly (:func:`refusal`): a Redis id ending in
``:messages`` or ``:counter`` names another session's keys (``a:messages``'s hash *is*
``a``'s message list), and PostgreSQL text cannot hold a NUL. Such a session is refused
before anything is written; nothing else about it is the database's business.
"""

from __future__ import annotations

import functools
import importlib
import json
from typing import Any

from ..core.errors import BackendUnavailable, InvalidBackendURL, JSONLSessionError

__all__ = [
    "MESSAGES_TABLE",
    "REDIS_PREFIX",
    "SESSIONS_TABLE",
    "Blob",
    "NotStorable",
    "check_storable",
    "create_sdk_tables",
    "id_problem",
    "kind_of",
    "messages_key",
    "redis_client",
    "redis_ids",
    "refusal",
    "session_key",
    "sql_engine",
    "sql_ids",
    "stored_text",
    "tables",
]

SESSIONS_TABLE = "agent_sessions"
MESSAGES_TABLE = "agent_messages"
REDIS_PREFIX = "agents:session:"
"""``RedisSession``'s default ``key_prefix`` and the ``:`` it joins the id with."""
REDIS_SUFFIXES = (":messages", ":counter")
"""What ``RedisSession`` appends to a session's hash key for its other two keys."""
REDIS_SCHEMES = ("redis", "rediss", "unix")


def stored_text(item: Any) -> str:
    """The text the SDK's ``SQLAlchemySession`` and ``RedisSession`` store for ``item``.

    Example:
        >>> stored_text({"role": "user", "content": "café"})
        '{"role":"user","content":"caf\\\\u00e9"}'
    """
    return json.dumps(item, ensure_ascii=True, separators=(",", ":"))


def session_key(session_id: str) -> str:
    """The Redis hash of ``session_id`` (``session_id``, ``created_at``, ``updated_at``)."""
    return REDIS_PREFIX + session_id


def messages_key(session_id: str) -> str:
    """The Redis list of ``session_id``'s items, in order."""
    return REDIS_PREFIX + session_id + ":messages"


def counter_key(session_id: str) -> str:
    """The Redis counter ``RedisSession`` keeps beside a session (deleted with it)."""
    return REDIS_PREFIX + session_id + ":counter"


def kind_of(url: str) -> str:
    """``redis``, ``postgresql``, ``sqlite`` (``sqlite:///``: the SDK's ``SQLiteSession``),
    ``sql`` (any other SQLAlchemy URL) or ``""`` (not a URL)."""
    scheme = url.split(":", 1)[0].lower() if "://" in url else ""
    if scheme in REDIS_SCHEMES:
        return "redis"
    if scheme in ("postgresql", "postgres") or scheme.startswith("postgresql+"):
        return "postgresql"
    if scheme == "sqlite":
        return "sqlite"
    return "sql" if scheme else ""


def refusal(kind: str, session_id: str) -> str | None:
    """Why a backend of ``kind`` (:func:`kind_of`) cannot hold ``session_id`` exactly; None if it can.

    Example:
        >>> refusal("redis", "a:messages")
        "the id ends in ':messages': in Redis its keys are session 'a''s keys; not stored"
        >>> refusal("postgresql", "nul\\x00id")
        'the id holds a NUL character, which PostgreSQL text cannot store; not stored'
        >>> refusal("redis", "a:messages:b") is None
        True
    """
    if kind == "redis":
        for suffix in REDIS_SUFFIXES:
            if session_id.endswith(suffix):
                other = session_id[: -len(suffix)]
                return (
                    f"the id ends in {suffix!r}: in Redis its keys are session {other!r}'s keys; not stored"
                )
    elif kind == "postgresql" and "\x00" in session_id:
        return "the id holds a NUL character, which PostgreSQL text cannot store; not stored"
    elif kind in ("sql", "sqlite") and "\x00" in session_id:
        return "the id holds a NUL character, which SQL text does not store exactly; not stored"
    try:
        session_id.encode()
    except UnicodeEncodeError:
        return "the id is not valid Unicode (a lone surrogate); not stored"
    return None


class NotStorable(JSONLSessionError, ValueError):
    """A session id the backend cannot hold exactly (:func:`refusal` says why): that session
    fails, before anything is written, and the run goes on."""


def check_storable(kind: str, session_id: str) -> None:
    """Raise :class:`NotStorable` if a backend of ``kind`` cannot hold ``session_id`` exactly."""
    why = refusal(kind, session_id)
    if why is not None:
        raise NotStorable(why)


class Blob:
    """An SQL ``session_id`` stored as bytes: not an id the SDK (or we) would write."""

    def __init__(self, value: bytes) -> None:
        self.value = value


def id_problem(raw: object) -> tuple[str, str | None]:
    """A stored id as it may be shown, and why it cannot be a session here (None: it can).

    A foreign id is one this package cannot copy to a file: not UTF-8 text, empty, not a
    usable file name. Whatever wrote it, it is reported or left alone, never copied.
    """
    from ..core.names import filename_for

    if isinstance(raw, Blob):
        return repr(raw.value)[:80], "the id is a BLOB, not text; not copied"
    if isinstance(raw, bytes | bytearray | memoryview):
        data = bytes(raw)
        try:
            raw = data.decode()
        except UnicodeDecodeError:
            return repr(data)[:80], "the id is not UTF-8 text; not copied"
    if not isinstance(raw, str):
        return repr(raw)[:80], f"the id is not text (a {type(raw).__name__}); not copied"
    if not raw:
        return "''", "the id is empty; not copied"
    try:
        filename_for(raw)
    except ValueError as exc:
        return (raw if len(raw) <= 80 else raw[:77] + "..."), f"{exc}; not copied"
    return raw, None


@functools.cache
def tables() -> tuple[Any, Any]:
    """The SDK's two tables as its ``SQLAlchemySession`` declares them: ``(sessions, messages)``."""
    from sqlalchemy import TIMESTAMP, Column, Integer, MetaData, String, Table

    schema = MetaData()
    sessions = Table(
        SESSIONS_TABLE,
        schema,
        Column("session_id", String, primary_key=True),
        Column("created_at", TIMESTAMP(timezone=False)),
        Column("updated_at", TIMESTAMP(timezone=False)),
    )
    messages = Table(
        MESSAGES_TABLE,
        schema,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("session_id", String, nullable=False),
        Column("message_data", String, nullable=False),
        Column("created_at", TIMESTAMP(timezone=False)),
    )
    return sessions, messages


def sql_engine(url: str) -> Any:
    """An SQLAlchemy async engine for ``url``: ``postgresql://`` through asyncpg (SQLAlchemy's
    default driver is synchronous; the SDK needs an async one), ``sqlite:///`` through aiosqlite
    (the SDK's ``SQLiteSession`` is the copies' own way there), any other async URL as given.

    Raises ``BackendUnavailable`` (a driver or SQLAlchemy missing), ``InvalidBackendURL``.
    """
    scheme, rest = url.split(":", 1)
    driver = {"postgresql": "asyncpg", "postgres": "asyncpg", "sqlite": "aiosqlite"}.get(scheme.lower())
    if driver is not None:
        try:
            importlib.import_module(driver)
        except ImportError:
            extra = "postgresql" if driver == "asyncpg" else "sqlalchemy"
            raise BackendUnavailable(
                f"{scheme}:// needs the {driver} driver: pip install 'jsonl-session[{extra}]'"
            ) from None
        url = f"{'postgresql' if driver == 'asyncpg' else 'sqlite'}+{driver}:{rest}"
    try:
        from sqlalchemy.ext.asyncio import create_async_engine
    except ImportError:
        raise BackendUnavailable(
            "SQL URLs need SQLAlchemy: pip install 'jsonl-session[sqlalchemy]' (or the URL's own driver)"
        ) from None
    try:
        return create_async_engine(url)
    except ImportError as exc:  # the driver named in the URL (aiosqlite, asyncpg...)
        raise BackendUnavailable(f"{url.split(':', 1)[0]}: driver not installed ({exc})") from None
    except Exception as exc:  # noqa: BLE001  (sqlalchemy's ArgumentError and friends: a malformed URL)
        raise InvalidBackendURL(f"{url!r}: not a usable SQLAlchemy URL ({exc})") from None


def redis_client(url: str) -> Any:
    """A ``redis.asyncio`` client for ``url`` (not connected yet). Raises ``BackendUnavailable``."""
    try:
        from redis.asyncio import Redis
    except ImportError:
        scheme = url.split(":", 1)[0]
        raise BackendUnavailable(f"{scheme}:// needs redis: pip install 'jsonl-session[redis]'") from None
    return Redis.from_url(url)


async def create_sdk_tables(engine: Any, *, create: bool = True) -> bool:
    """Whether the SDK's two tables are there, made by the SDK's own ``SQLAlchemySession`` if
    either is missing and ``create`` (so their columns and indexes are exactly the SDK's)."""
    from sqlalchemy import inspect

    async with engine.connect() as connection:
        missing = await connection.run_sync(
            lambda sync: not all(inspect(sync).has_table(name) for name in (SESSIONS_TABLE, MESSAGES_TABLE))
        )
    if not missing:
        return True
    if not create:
        return False
    try:
        from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
    except ImportError:
        raise BackendUnavailable(
            "SQL URLs need the Agents SDK: pip install 'jsonl-session[sqlalchemy]'"
        ) from None
    await SQLAlchemySession("jsonl-session-setup", engine=engine, create_tables=True).get_items(limit=1)
    return True


async def sql_ids(engine: Any) -> list[object]:
    """Every ``session_id`` in the SDK's tables (sessions rows, and messages without one), raw;
    bytes (a BLOB) wrapped as :class:`Blob`. Only ever reads; none when the tables are missing."""
    from sqlalchemy import inspect, text

    found: list[object] = []
    async with engine.connect() as connection:
        for table in (MESSAGES_TABLE, SESSIONS_TABLE):
            if await connection.run_sync(lambda sync, table=table: inspect(sync).has_table(table)):
                rows = await connection.execute(text(f"SELECT DISTINCT session_id FROM {table}"))
                found += [row[0] for row in rows]
    return unique(found)


def unique(values: list[object]) -> list[object]:
    """``values`` without repeats; bytes (an SQL BLOB) wrapped as :class:`Blob`."""
    seen: dict[tuple[type, object], object] = {}
    for value in values:
        seen.setdefault((type(value), value), value)
    return [
        Blob(bytes(value)) if isinstance(value, bytes | bytearray | memoryview) else value
        for value in seen.values()
    ]


async def redis_ids(client: Any) -> list[object]:
    """Ids with a message list, and ids of empty sessions (a session hash without one); raw bytes.

    A key ending in ``:messages`` is read as a session's list, one ending in ``:counter`` as its
    counter; a hash is an empty session only if it names itself (``session_id``), so foreign
    keys under the prefix are left out.
    """
    prefix = REDIS_PREFIX.encode()
    with_items, others = set(), []
    async for key in client.scan_iter(match=REDIS_PREFIX + "*", count=1000):
        key = key if isinstance(key, bytes) else key.encode()
        if key.endswith(b":messages"):
            with_items.add(key[len(prefix) : -len(b":messages")])
        elif not key.endswith(b":counter"):
            others.append(key)
    empty = []
    for key in others:
        session_id = key[len(prefix) :]
        if session_id not in with_items and await _names_itself(client, key, session_id):
            empty.append(session_id)
    return [*with_items, *empty]


async def _names_itself(client: Any, key: bytes, session_id: bytes) -> bool:
    try:
        return bool(await client.hget(key, "session_id") == session_id)
    except Exception:  # noqa: BLE001  (WRONGTYPE: a key of someone else's)
        return False
