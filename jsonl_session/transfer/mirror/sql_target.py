"""The mirror's SQL side: compare and apply in one transaction, in the SDK's own tables.

The rows are those ``SQLAlchemySession`` reads: ``agent_sessions`` (one row per session, made
with the SDK's ``create_tables``) and ``agent_messages`` (``message_data`` in order of
``created_at, id``). Each :meth:`SqlTarget.sync` is one transaction that

1. locks the session's ``agent_sessions`` row (``SELECT ... FOR UPDATE``, as the SDK's own
   writers do, so an SDK writer and a second mirror wait for it), creating it if missing;
2. reads the stored rows: only the tail from the row before ``start`` when the caller knows
   the rows before it are unchanged, all of them when that row does not match or is missing;
3. removes the rows after the longest common prefix and inserts the file's items after it.

So a transaction either makes the stored session equal to the file as the caller read it, or
(killed, the connection dropped, the server stopped) changes nothing; run again, it finds what
is there and does the rest. New rows get the transaction's ``CURRENT_TIMESTAMP`` (the column's
default, as the SDK's) and larger ids, so they sort after the rows kept.
"""

from __future__ import annotations

from typing import Any

from ..sdk_schema import check_storable, sql_ids
from ..sdk_schema import tables as sdk_tables
from .plan import Applied, Plan, plan, same

_CHUNK = 1000  # ids per DELETE ... IN (...): well under every driver's bound-parameter limit


class SqlTarget:
    """A database of the SDK's ``SQLAlchemySession`` (PostgreSQL, SQLite, MySQL...), by engine."""

    def __init__(self, url: str, engine: Any, *, tables: bool = True) -> None:
        self.url = url
        self.engine = engine
        self.tables = tables
        """Whether the SDK's tables exist (a dry run does not make them: then nothing is stored)."""
        self.sessions, self.messages = sdk_tables()
        name = engine.dialect.name
        self.kind = name if name in ("postgresql", "sqlite") else "sql"
        """What :func:`~jsonl_session.transfer.sdk_schema.refusal` checks ids against."""

    async def check(self) -> None:
        """Nothing to check between changes: a restarted server keeps what it committed."""

    async def listing(self) -> list[object]:
        """Every ``session_id`` stored (sessions rows, and messages without one), raw."""
        return await sql_ids(self.engine) if self.tables else []

    async def sync(
        self, session_id: str, texts: list[str], start: int = 0, *, dry_run: bool = False
    ) -> Applied:
        """Make the stored session equal to ``texts`` in one transaction (see the module's docstring)."""
        check_storable(self.kind, session_id)
        if not self.tables:  # a dry run on a database without the SDK's tables: nothing stored
            return Applied(False, 0, plan([], texts))
        async with self.engine.begin() as connection:
            row_there = await self._lock(connection, session_id, create=not dry_run)
            count = await self._count(connection, session_id)
            rows, first = await self._rows_from(connection, session_id, texts, start, count)
            change = plan([data for _, data in rows], texts, first)
            if not dry_run and change.changes:
                await self._apply(connection, session_id, rows, first, change)
            return Applied(row_there or count > 0, count, change)

    async def remove(self, session_id: str, *, dry_run: bool = False) -> int | None:
        """Delete the session (its messages and its sessions row); rows it held, None if absent."""
        check_storable(self.kind, session_id)
        if not self.tables:
            return None
        from sqlalchemy import delete

        async with self.engine.begin() as connection:
            row_there = await self._lock(connection, session_id, create=False)
            count = await self._count(connection, session_id)
            if not row_there and not count:
                return None
            if not dry_run:
                where = self.messages.c.session_id == session_id
                await connection.execute(delete(self.messages).where(where))
                await connection.execute(
                    delete(self.sessions).where(self.sessions.c.session_id == session_id)
                )
            return count

    async def _lock(self, connection: Any, session_id: str, *, create: bool) -> bool:
        """Lock the session's row; with ``create``, insert it first if missing. Whether it was there."""
        from sqlalchemy import insert, select, update
        from sqlalchemy.exc import IntegrityError

        if self.kind == "sqlite":
            # SQLite has no row locks and its driver begins a transaction only at the first write:
            # a write that changes nothing takes the database's writer lock first, as the SDK's
            # own writers do, so nobody writes between this count and this transaction's write.
            sessions = self.sessions
            touch = update(sessions).where(sessions.c.session_id == session_id)
            await connection.execute(touch.values(updated_at=sessions.c.updated_at))
        parent = select(self.sessions.c.session_id).where(self.sessions.c.session_id == session_id)
        if (await connection.execute(parent.with_for_update())).first() is not None:
            return True
        if not create:
            return False
        try:
            async with connection.begin_nested():  # a savepoint: another writer may insert it first
                await connection.execute(insert(self.sessions).values(session_id=session_id))
        except IntegrityError:
            await connection.execute(parent.with_for_update())  # theirs: wait for it, then lock it
            return True
        return False

    async def _count(self, connection: Any, session_id: str) -> int:
        from sqlalchemy import func, select

        query = (
            select(func.count()).select_from(self.messages).where(self.messages.c.session_id == session_id)
        )
        return int((await connection.execute(query)).scalar_one())

    async def _rows_from(
        self, connection: Any, session_id: str, texts: list[str], start: int, count: int
    ) -> tuple[list[tuple[int, str]], int]:
        """``(rows, first)``: the stored rows from index ``first`` on, as ``(id, message_data)``.

        ``first`` is ``start`` when the row just before it holds the file's item there (so the
        rows before are taken as equal, as the caller knows them to be), else 0: every row.
        """
        first = min(start, count, len(texts))
        if first > 0:
            tail = await self._tail(connection, session_id, count - first + 1)
            if same(tail[0][1], texts[first - 1]):
                return tail[1:], first
        return (await self._tail(connection, session_id, count) if count else []), 0

    async def _tail(self, connection: Any, session_id: str, size: int) -> list[tuple[int, str]]:
        """The newest ``size`` rows, oldest first (the SDK's order: ``created_at, id``)."""
        from sqlalchemy import select

        messages = self.messages
        query = (
            select(messages.c.id, messages.c.message_data)
            .where(messages.c.session_id == session_id)
            .order_by(messages.c.created_at.desc(), messages.c.id.desc())
            .limit(size)
        )
        rows = [(row[0], row[1]) for row in await connection.execute(query)]
        rows.reverse()
        return rows

    async def _apply(
        self, connection: Any, session_id: str, rows: list[tuple[int, str]], first: int, change: Plan
    ) -> None:
        from sqlalchemy import delete, func, insert, update

        gone = [row_id for row_id, _ in rows[change.keep - first :]]
        for at in range(0, len(gone), _CHUNK):
            await connection.execute(
                delete(self.messages).where(self.messages.c.id.in_(gone[at : at + _CHUNK]))
            )
        if change.add:
            await connection.execute(
                insert(self.messages),
                [{"session_id": session_id, "message_data": text} for text in change.add],
            )
        await connection.execute(
            update(self.sessions)
            .where(self.sessions.c.session_id == session_id)
            .values(updated_at=func.current_timestamp())
        )
