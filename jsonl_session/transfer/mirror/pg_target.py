"""The mirror's PostgreSQL fast path: the same transaction as ``sql_target``, in asyncpg's own calls.

A live mirror writes one transaction per change, a hundred a second for 20 busy conversations;
through SQLAlchemy's statement layer each of its six statements cost a few hundred microseconds
of Python, enough to queue changes on a busy 2-core machine (``benchmarks/mirror_lag.py``). Here
the statements go straight to the asyncpg connection under SQLAlchemy's pool (its
``driver_connection``). The count is a statement of its own *after* the row lock is granted:
in one statement with the lock it would be read from the snapshot taken before the wait, and
rows another writer committed meanwhile would be counted out (and then written again). The rows, the order and
the locks are exactly those of :class:`~jsonl_session.transfer.mirror.sql_target.SqlTarget` (read its
docstring): the session's ``agent_sessions`` row locked ``FOR UPDATE``, the stored rows read
inside the transaction, the smallest difference applied, ``updated_at`` touched.
"""

from __future__ import annotations

from typing import Any

from ..sdk_schema import check_storable
from .plan import Applied, Plan, plan, same
from .sql_target import SqlTarget

# Lock the session's row (no row: not stored yet); the count is read after the lock is granted.
_LOCK = "SELECT 1 FROM agent_sessions WHERE session_id = $1 FOR UPDATE"
_CREATE = "INSERT INTO agent_sessions (session_id) VALUES ($1) ON CONFLICT (session_id) DO NOTHING"
_COUNT = "SELECT count(*) FROM agent_messages WHERE session_id = $1"
_TAIL = (
    "SELECT id, message_data FROM agent_messages WHERE session_id = $1 "
    "ORDER BY created_at DESC, id DESC LIMIT $2"
)
_DELETE = "DELETE FROM agent_messages WHERE id = ANY($1::integer[])"
# In the file's order: ids (and so the SDK's order among rows of one transaction) follow ORDINALITY.
_INSERT = (
    "INSERT INTO agent_messages (session_id, message_data) "
    "SELECT $1, item FROM unnest($2::text[]) WITH ORDINALITY AS added(item, n) ORDER BY n"
)
_TOUCH = "UPDATE agent_sessions SET updated_at = CURRENT_TIMESTAMP WHERE session_id = $1"


class PgTarget(SqlTarget):
    """:class:`SqlTarget` for PostgreSQL, its ``sync`` in asyncpg calls (see the module's docstring)."""

    async def sync(
        self, session_id: str, texts: list[str], start: int = 0, *, dry_run: bool = False
    ) -> Applied:
        check_storable(self.kind, session_id)
        if not self.tables:
            return Applied(False, 0, plan([], texts))
        async with self.engine.connect() as connection:
            raw = await connection.get_raw_connection()
            pg: Any = raw.driver_connection  # asyncpg.Connection
            async with pg.transaction():
                there = await pg.fetchval(_LOCK, session_id) is not None
                if not there and not dry_run:
                    await pg.execute(_CREATE, session_id)
                    await pg.execute(_LOCK, session_id)  # ours, or another writer's: wait for it
                count = int(await pg.fetchval(_COUNT, session_id))  # after the lock is granted
                rows, first = await _rows_from(pg, session_id, texts, start, int(count))
                change = plan([data for _, data in rows], texts, first)
                if not dry_run and change.changes:
                    await _apply(pg, session_id, rows, first, change)
                return Applied(there or count > 0, int(count), change)


async def _rows_from(
    pg: Any, session_id: str, texts: list[str], start: int, count: int
) -> tuple[list[Any], int]:
    """As ``SqlTarget._rows_from``: the rows from ``first`` on (the tail, if the row before matches)."""
    first = min(start, count, len(texts))
    if first > 0:
        tail = list(reversed(await pg.fetch(_TAIL, session_id, count - first + 1)))
        if same(tail[0][1], texts[first - 1]):
            return tail[1:], first
    return (list(reversed(await pg.fetch(_TAIL, session_id, count))) if count else []), 0


async def _apply(pg: Any, session_id: str, rows: list[Any], first: int, change: Plan) -> None:
    gone = [row[0] for row in rows[change.keep - first :]]
    if gone:
        await pg.execute(_DELETE, gone)
    if change.add:
        await pg.execute(_INSERT, session_id, change.add)
    await pg.execute(_TOUCH, session_id)
