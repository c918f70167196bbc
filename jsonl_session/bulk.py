"""Copy every session of a folder to a shared backend, or every session of a backend to a folder.

Moving a team to PostgreSQL or Redis means copying thousands of sessions, and a copy that long
gets interrupted. So each session is copied all or nothing, and a second run picks up where the
first stopped:

* **export**: each session goes in one ``add_items`` call (one transaction in SQL, one
  ``MULTI``/``EXEC`` pipeline in Redis), so an interrupted run leaves whole sessions or none;
* **import**: each session is written in one rename under the file's lock (``rewrite``);
* a target that already holds exactly the same items (byte-equal as JSON Lines) is skipped;
  a target that holds anything else is reported as ``differs`` and never overwritten.

Example:
    >>> outcomes = await export_all(SessionDirectory("sessions"), "redis://localhost/0")  # doctest: +SKIP
    >>> Counter(outcome.status for outcome in outcomes)                                   # doctest: +SKIP
    Counter({'copied': 998, 'skipped': 2})
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from .codec import encode_items
from .directory import SessionDirectory
from .session import JSONLSession
from .transfer import Backend, open_backend

Status = Literal["copied", "skipped", "differs", "failed"]
Progress = Callable[[int, int], None]
"""Called as ``progress(sessions_done, sessions_total)``."""


@dataclass(frozen=True)
class Outcome:
    """What happened to one session: ``copied``, ``skipped`` (already there, identical),
    ``differs`` (the target holds other items: left alone) or ``failed`` (``detail`` says why)."""

    session_id: str
    status: Status
    items: int = 0
    detail: str = ""


async def export_all(
    directory: SessionDirectory, url: str, *, progress: Progress | None = None
) -> list[Outcome]:
    """Copy every session in ``directory`` to the backend at ``url`` under the same id.

    Example:
        >>> await export_all(SessionDirectory("sessions"), "postgresql://me@db/chats")  # doctest: +SKIP
        [Outcome(session_id='convo_123', status='copied', items=42, detail=''), ...]
    """
    ids = directory.ids()
    outcomes: list[Outcome] = []
    async with open_backend(url) as backend:
        _report(progress, 0, len(ids))
        for done, session_id in enumerate(ids, 1):
            local = directory.open(session_id)
            try:
                items = await asyncio.to_thread(local.get_items_sync)
            finally:
                local.close()
            outcomes.append(await _export_one(backend, session_id, items))
            _report(progress, done, len(ids))
    return outcomes


async def _export_one(backend: Backend, session_id: str, items: list[Any]) -> Outcome:
    remote = backend.session(session_id)
    try:
        try:
            payload = encode_items(items)
        except ValueError as exc:
            return Outcome(session_id, "failed", len(items), str(exc))
        existing = await remote.get_items()
        if existing:
            return _compare(session_id, existing, payload)
        if items:
            await remote.add_items(items)  # one call: one transaction, all or nothing
        return Outcome(session_id, "copied", len(items))
    finally:
        backend.done(remote)


async def import_all(
    url: str, directory: SessionDirectory, *, progress: Progress | None = None
) -> list[Outcome]:
    """Copy every session stored at ``url`` into ``directory`` (one file per session id).

    Example:
        >>> await import_all("redis://localhost:6379/0", SessionDirectory("sessions"))  # doctest: +SKIP
        [Outcome(session_id='convo_123', status='skipped', items=42, detail=''), ...]
    """
    outcomes: list[Outcome] = []
    async with open_backend(url) as backend:
        ids = await backend.session_ids()
        _report(progress, 0, len(ids))
        for done, session_id in enumerate(ids, 1):
            remote = backend.session(session_id)
            try:
                items = await remote.get_items()
            finally:
                backend.done(remote)
            local = directory.open(session_id)
            try:
                outcomes.append(await asyncio.to_thread(_import_one, local, items))
            finally:
                local.close()
            _report(progress, done, len(ids))
    return outcomes


def _import_one(local: JSONLSession, items: list[Any]) -> Outcome:
    """Under the file's lock: write all items in one rename if the session is empty, else compare."""
    try:
        payload = encode_items(items)
    except ValueError as exc:
        return Outcome(local.session_id, "failed", len(items), f"{exc}; nothing imported")
    with local.rewrite() as draft:
        if draft.items:
            return _compare(local.session_id, draft.items, payload)
        draft.items = items
    return Outcome(local.session_id, "copied", len(items))


def _compare(session_id: str, existing: list[Any], payload: bytes) -> Outcome:
    try:
        same = encode_items(existing) == payload
    except ValueError:
        same = False
    if same:
        return Outcome(session_id, "skipped", len(existing))
    return Outcome(
        session_id, "differs", len(existing), f"already holds {len(existing)} other items; not overwritten"
    )


def _report(progress: Progress | None, done: int, total: int) -> None:
    if progress is not None:
        progress(done, total)
