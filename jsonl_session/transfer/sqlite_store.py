"""One session into an ``SQLiteSession`` file (``sqlite:///``) and its companion rows, in one transaction.

The SDK's ``SQLiteSession`` tables (``agent_sessions``, ``agent_messages``, items stored as
``json.dumps(item)``, read back ``ORDER BY id``) are created by the SDK itself (one
``SQLiteSession`` opened and closed, see ``all_sessions.prepare``); this module then writes with the
standard library's ``sqlite3``: ``BEGIN IMMEDIATE`` (the writer's lock, so nobody appends between the compare
and the write), read and compare (``copy_outcome.decide``), insert the missing tail, touch
``updated_at``, replace the companion rows (``companion``), commit.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from typing import Any

from .companion import TABLE, Entry, Metadata
from .copy_outcome import Outcome, decide

__all__ = ["ensure_companion", "export_one", "read_companion"]

_CREATE = f"""CREATE TABLE IF NOT EXISTS {TABLE} (
    session_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    content BLOB NOT NULL,
    mode INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    updated_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    PRIMARY KEY (session_id, kind))"""


def ensure_companion(path: str) -> None:
    """Create the companion table if it is missing (the SDK's tables are made by its ``SQLiteSession``)."""
    with contextlib.closing(sqlite3.connect(path, timeout=30)) as db, db:
        db.execute(_CREATE)


def export_one(
    path: str, session_id: str, items: list[Any], metadata: Metadata, *, replace: bool = False
) -> Outcome:
    """Bring one session up to ``items`` and its companion rows to ``metadata`` (see above)."""
    with contextlib.closing(sqlite3.connect(path, timeout=30, isolation_level=None)) as db:
        db.execute("BEGIN IMMEDIATE")
        try:
            held = []
            for (data,) in db.execute(
                "SELECT message_data FROM agent_messages WHERE session_id = ? ORDER BY id", (session_id,)
            ):
                try:
                    held.append(json.loads(data))
                except (json.JSONDecodeError, TypeError):
                    continue  # the SDK skips a corrupted row too
            existed = db.execute(
                "SELECT 1 FROM agent_sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
            decided = decide(session_id, items, held, replace=replace)
            if not decided.write:
                db.execute("ROLLBACK")
                return decided.outcome
            if decided.clear:
                db.execute("DELETE FROM agent_messages WHERE session_id = ?", (session_id,))
            db.execute("INSERT OR IGNORE INTO agent_sessions (session_id) VALUES (?)", (session_id,))
            tail = items[decided.start :]
            if tail:
                db.executemany(
                    "INSERT INTO agent_messages (session_id, message_data) VALUES (?, ?)",
                    [(session_id, json.dumps(item)) for item in tail],
                )
                db.execute(
                    "UPDATE agent_sessions SET updated_at = CURRENT_TIMESTAMP WHERE session_id = ?",
                    (session_id,),
                )
            db.execute(f"DELETE FROM {TABLE} WHERE session_id = ?", (session_id,))
            db.executemany(
                f"INSERT INTO {TABLE} (session_id, kind, content, mode, mtime_ns) VALUES (?, ?, ?, ?, ?)",
                [(session_id, kind, e.content, e.mode, e.mtime_ns) for kind, e in metadata.items()],
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    if decided.outcome.status == "skipped" and not items and existed is None:
        return Outcome(session_id, "copied", 0)  # an empty session, stored now
    return decided.outcome


def read_companion(path: str, ids: list[str] | None = None) -> dict[str, Metadata]:
    """The companion entries by session id (of ``ids``, or all); none if there is no table."""
    import os

    found: dict[str, Metadata] = {}
    if not os.path.exists(path):
        return found
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        try:
            rows = db.execute(f"SELECT session_id, kind, content, mode, mtime_ns FROM {TABLE}").fetchall()
        except sqlite3.OperationalError:  # no such table: never exported by jsonl-session
            return found
    wanted = None if ids is None else set(ids)
    for session_id, kind, content, mode, mtime_ns in rows:
        if wanted is None or session_id in wanted:
            found.setdefault(session_id, {})[kind] = Entry(bytes(content), int(mode), int(mtime_ns))
    return found
