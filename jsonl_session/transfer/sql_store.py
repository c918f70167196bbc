"""Many sessions per transaction into the SDK's ``SQLAlchemySession`` tables, with their companion rows.

The SDK's ``add_items`` costs about eight round trips per session (row lock, session row,
insert, update, commit), so a folder went to PostgreSQL at ~8,900 items/s. Here a batch of
sessions is one transaction on the SDK engine's connection, in the SDK's own tables and column
formats, so ``SQLAlchemySession`` (or any reader of its schema) reads exactly the same rows:

1. the batch's session rows are locked (PostgreSQL: ``SELECT ... ORDER BY session_id FOR
   UPDATE``, in id order; SQLite: an ``UPDATE`` that changes nothing reserves the writer, as
   the SDK does); missing ones are inserted with ``ON CONFLICT DO NOTHING`` and locked too, so
   no writer through the SDK can add to them until the commit;
2. their messages are read, in the SDK's order (``created_at``, then ``id``), and compared
   with the source's items (``copy_outcome.decide``): only what the destination lacks is inserted,
   for the whole batch at once (PostgreSQL: one ``COPY``; SQLite: a multi-row ``INSERT``),
   serialized as the SDK serializes (``json.dumps(item, ensure_ascii=True, separators=(",",
   ":"))``); a session that differs is not written (unless ``replace``: its messages deleted
   first);
3. ``updated_at`` is touched as the SDK does, and the companion rows are replaced, in the same
   transaction: a crash leaves each session of the batch as it was, or fully copied.

Only PostgreSQL and SQLite engines take this path (``supported``); others go session by
session through the SDK.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

from .companion import TABLE, Entry, Metadata
from .copy_outcome import Outcome, decide
from .sdk_schema import MESSAGES_TABLE, stored_text
from .sdk_schema import tables as sdk_tables

__all__ = ["Job", "export_batch", "read_companion", "supported", "write_companion"]

BATCH_SESSIONS = 100
"""Sessions per transaction: enough to amortise the round trips, few enough to keep locks short."""


@dataclass(frozen=True)
class Job:
    """One session to export: its items and companion entries."""

    session_id: str
    items: list[Any]
    metadata: Metadata


def supported(engine: Any) -> bool:
    """Whether ``engine``'s database takes the batched path (PostgreSQL, SQLite)."""
    return engine.dialect.name in ("postgresql", "sqlite")


def _companion_table() -> Any:
    from sqlalchemy import TIMESTAMP, BigInteger, Column, Integer, LargeBinary, MetaData, String, Table, text

    return Table(
        TABLE,
        MetaData(),
        Column("session_id", String, primary_key=True),
        Column("kind", String, primary_key=True),
        Column("content", LargeBinary, nullable=False),
        Column("mode", Integer, nullable=False),
        Column("mtime_ns", BigInteger, nullable=False),
        Column(
            "updated_at", TIMESTAMP(timezone=False), server_default=text("CURRENT_TIMESTAMP"), nullable=False
        ),
    )


@functools.cache
def tables() -> tuple[Any, Any, Any]:
    """The SDK's two tables (as its ``SQLAlchemySession`` declares them) and the companion table."""
    return (*sdk_tables(), _companion_table())


async def ensure_companion(engine: Any) -> None:
    """Create the companion table if it is missing (the SDK's tables are created by the SDK)."""
    companion = tables()[2]
    async with engine.begin() as connection:
        await connection.run_sync(lambda sync: companion.create(sync, checkfirst=True))


async def export_batch(engine: Any, jobs: list[Job], *, replace: bool = False) -> list[Outcome]:
    """Bring every job's session in the database up to its source, in one transaction (see above).

    Returns one outcome per job, in order. Raises what the database raises (the whole batch
    is then rolled back: nothing of it written).
    """
    from sqlalchemy import delete, insert, select, text, update

    sessions, messages, companion = tables()
    ids = sorted({job.session_id for job in jobs})
    postgresql = engine.dialect.name == "postgresql"
    async with engine.begin() as connection:
        rows_of_ids = select(sessions.c.session_id).where(sessions.c.session_id.in_(ids))
        if postgresql:  # row locks taken in id order, so two runs at once cannot deadlock on them
            found = await connection.execute(rows_of_ids.order_by(sessions.c.session_id).with_for_update())
        else:  # SQLite: a write first reserves the writer, as the SDK does
            touch = update(sessions).where(sessions.c.session_id.in_(ids))
            await connection.execute(touch.values(updated_at=sessions.c.updated_at))
            found = await connection.execute(rows_of_ids)
        stored = {row[0] for row in found}
        missing = [session_id for session_id in ids if session_id not in stored]
        if missing:
            await connection.execute(_insert_ignoring(engine, sessions, [{"session_id": i} for i in missing]))
        if postgresql and missing:  # the rows just inserted by another writer are locked too
            await connection.execute(rows_of_ids.order_by(sessions.c.session_id).with_for_update())
        held: dict[str, list[Any]] = {session_id: [] for session_id in ids}
        rows = await connection.execute(
            select(messages.c.session_id, messages.c.message_data)
            .where(messages.c.session_id.in_(ids))
            .order_by(messages.c.session_id, messages.c.created_at, messages.c.id)
        )
        for session_id, data in rows:
            try:
                held[session_id].append(json.loads(data))
            except (json.JSONDecodeError, TypeError):
                continue  # the SDK skips a corrupted row too
        outcomes, inserts, written, cleared = [], [], [], []
        for job in jobs:
            decided = decide(job.session_id, job.items, held[job.session_id], replace=replace)
            outcome = decided.outcome
            if outcome.status == "skipped" and not job.items and job.session_id in missing:
                outcome = Outcome(job.session_id, "copied", 0)  # an empty session, stored now
            outcomes.append(outcome)
            if not decided.write:
                continue
            written.append(job.session_id)
            if decided.clear:
                cleared.append(job.session_id)
            inserts += [
                {"session_id": job.session_id, "message_data": stored_text(item)}
                for item in job.items[decided.start :]
            ]
        if cleared:
            await connection.execute(delete(messages).where(messages.c.session_id.in_(cleared)))
        if inserts and postgresql:
            await _copy_in(connection, inserts)
        elif inserts:
            await connection.execute(insert(messages), inserts)
            changed = sorted({row["session_id"] for row in inserts})
            await connection.execute(
                update(sessions)
                .where(sessions.c.session_id.in_(changed))
                .values(updated_at=text("CURRENT_TIMESTAMP"))
            )
        rows_of = [
            _companion_row(job.session_id, kind, entry)
            for job in jobs
            if job.session_id in written
            for kind, entry in job.metadata.items()
        ]
        if written:
            await connection.execute(delete(companion).where(companion.c.session_id.in_(written)))
        if rows_of:
            await connection.execute(insert(companion), rows_of)
    return outcomes


async def write_companion(engine: Any, session_id: str, metadata: Metadata) -> None:
    """Replace one session's companion rows (the path through the SDK, for other databases)."""
    from sqlalchemy import delete, insert

    companion = tables()[2]
    async with engine.begin() as connection:
        await connection.execute(delete(companion).where(companion.c.session_id == session_id))
        if metadata:
            rows = [_companion_row(session_id, kind, entry) for kind, entry in metadata.items()]
            await connection.execute(insert(companion), rows)


async def read_companion(engine: Any, ids: list[str] | None = None) -> dict[str, Metadata]:
    """The companion entries by session id (of ``ids``, or all); none if the table is missing."""
    from sqlalchemy import inspect, select

    companion = tables()[2]
    found: dict[str, Metadata] = {}
    async with engine.connect() as connection:
        if not await connection.run_sync(lambda sync: inspect(sync).has_table(TABLE)):
            return found
        query = select(
            companion.c.session_id,
            companion.c.kind,
            companion.c.content,
            companion.c.mode,
            companion.c.mtime_ns,
        )
        if ids is not None:
            query = query.where(companion.c.session_id.in_(ids))
        for session_id, kind, content, mode, mtime_ns in await connection.execute(query):
            found.setdefault(session_id, {})[kind] = Entry(bytes(content), int(mode), int(mtime_ns))
    return found


def _companion_row(session_id: str, kind: str, entry: Entry) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "kind": kind,
        "content": entry.content,
        "mode": entry.mode,
        "mtime_ns": entry.mtime_ns,
    }


async def _copy_in(connection: Any, rows: list[dict[str, Any]]) -> None:
    """The rows into ``agent_messages`` with PostgreSQL's ``COPY``, on this transaction's own
    connection (asyncpg's ``copy_records_to_table``): ids and ``created_at`` come from the
    table's defaults, in the order given, as a multi-row ``INSERT`` would give them, at a
    fraction of its cost."""
    raw = await connection.get_raw_connection()
    records = [(row["session_id"], row["message_data"]) for row in rows]
    await raw.driver_connection.copy_records_to_table(
        MESSAGES_TABLE, records=records, columns=("session_id", "message_data")
    )


def _insert_ignoring(engine: Any, table: Any, rows: list[dict[str, Any]]) -> Any:
    if engine.dialect.name == "postgresql":
        from sqlalchemy.dialects import postgresql as dialect
    else:
        from sqlalchemy.dialects import sqlite as dialect  # type: ignore[no-redef]
    return dialect.insert(table).values(rows).on_conflict_do_nothing()
