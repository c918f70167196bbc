"""The database a mirror keeps equal to a folder: opened by URL, and what it can do.

A target (``sql_target.SqlTarget``, ``redis_target.RedisTarget``) has four operations, each
one transaction: ``sync`` (compare one session with the file's items and apply the smallest
difference), ``remove`` (delete one session), ``listing`` (the ids stored) and ``check`` (did
the server lose what it held?). It records nothing outside the database: what the mirror
knows of a session it reads there, inside the transaction that writes it.

Which errors are an *outage* (the database is unreachable, restarted, or dropped the
connection: catch up on everything once it is back) and which are about *one session's data*
(an id the database cannot hold, a Redis key of another type, a row the database refuses:
that session fails, the others go on) is decided here, by :func:`is_outage`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Protocol

from ...core.errors import InvalidBackendURL
from ..sdk_schema import create_sdk_tables, kind_of, redis_client, sql_engine
from .plan import Applied, DatabaseReset

__all__ = ["Applied", "DatabaseReset", "Target", "is_outage", "open_target"]


class Target(Protocol):
    """What the mirror needs of a database (see the module's docstring)."""

    url: str
    kind: str
    """What ``transfer.sdk_schema.refusal`` checks ids against: ``redis``, ``postgresql``,
    ``sqlite``, ``sql``."""

    async def check(self) -> None: ...
    async def listing(self) -> list[object]: ...
    async def sync(
        self, session_id: str, texts: list[str], start: int = 0, *, dry_run: bool = False
    ) -> Applied: ...
    async def remove(self, session_id: str, *, dry_run: bool = False) -> int | None: ...


@asynccontextmanager
async def open_target(url: str | Sequence[str], *, create: bool = True) -> AsyncIterator[Target]:
    """Connect to the database at ``url`` (PostgreSQL, Redis, SQLite or any SQLAlchemy async URL).

    The SDK's tables are created if missing (unless ``create`` is false: a dry run, which then
    sees an empty database), by the SDK's own ``SQLAlchemySession``. The SDK
    itself is imported only then: loading it takes seconds, and a mirror started again after
    ``kill -9`` should be back at work in well under one. Raises ``InvalidBackendURL``,
    ``BackendUnavailable`` (a driver missing), ``RedisClusterRefused``, or the driver's error
    if the server cannot be reached.
    """
    if not isinstance(url, str):
        if len(url) == 1:
            url = url[0]
        else:
            async with _sharded(url, create=create) as sharded:
                yield sharded
            return
    kind = kind_of(url)
    if kind == "redis":
        from .redis_target import RedisTarget

        client = redis_client(url)
        try:
            target = RedisTarget(url, client)
            await target.connect()
            yield target
        finally:
            await client.aclose()
    elif kind:
        from .sql_target import SqlTarget

        engine = sql_engine(url)
        try:
            there = await create_sdk_tables(engine, create=create)
            if engine.dialect.name == "postgresql" and engine.dialect.driver == "asyncpg":
                from .pg_target import PgTarget

                yield PgTarget(url, engine, tables=there)
            else:
                yield SqlTarget(url, engine, tables=there)
        finally:
            await engine.dispose()
    else:
        raise InvalidBackendURL(
            f"{url!r} is not a database URL; use postgresql://user@host/db, redis://host:port/db, "
            "sqlite:///path.db or another SQLAlchemy async URL"
        )


@asynccontextmanager
async def _sharded(urls: Sequence[str], *, create: bool) -> AsyncIterator[Target]:
    """Every URL opened, as one target that puts each session in its ``shard_of`` database."""
    from .sharded import ShardedTarget

    if len(set(urls)) != len(urls) or not urls:
        raise InvalidBackendURL("give each database URL once (sessions are spread over them by their id)")
    async with AsyncExitStack() as stack:
        targets = [await stack.enter_async_context(open_target(url, create=create)) for url in urls]
        yield ShardedTarget(targets)


# A database's complaint about one key or row, by name (their packages are optional imports).
_DATA_ERRORS = {"ResponseError", "DataError", "IntegrityError", "NotStorable"}
_DRIVERS = ("redis", "sqlalchemy", "asyncpg", "aiosqlite", "sqlite3")


def is_outage(exc: BaseException) -> bool:
    """Whether ``exc`` says the database is out of reach (retry, then catch up), not that a
    session's data is refused (:data:`_DATA_ERRORS`: that session fails) or a bug (raised)."""
    if isinstance(exc, OSError | TimeoutError):  # ConnectionError, DatabaseReset included
        return True
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & _DATA_ERRORS and "ConnectionError" not in names:
        return False
    return type(exc).__module__.split(".", 1)[0] in _DRIVERS


def is_data_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a database's refusal of one session's data (a key of another type...)."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & _DATA_ERRORS) and not is_outage(exc)
