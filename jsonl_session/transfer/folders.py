"""Copy every session of a folder to a shared backend, or every session of a backend to a folder.

Moving a team to PostgreSQL or Redis means copying thousands of sessions, and a copy that long
gets interrupted. So each session is copied all or nothing, and a second run picks up where the
first stopped:

* **export**: each session goes in one ``add_items`` call (one transaction in SQL, one
  ``MULTI``/``EXEC`` pipeline in Redis), so an interrupted run leaves whole sessions or none;
* **import**: each session is written in one rename under the file's lock (``rewrite``);
* a target that already holds exactly the same items (byte-equal as JSON Lines) is skipped;
  a target that holds anything else is reported as ``differs`` and never overwritten;
* whatever is wrong with one session (a malformed file, an id in the backend that is not ours:
  not UTF-8, empty, too long for a file name, a key of another type) is that session's
  ``failed`` outcome with its reason, and the others go on; only an error of the backend
  itself (the connection dropped) stops the run, which a re-run then finishes;
* an empty session is copied too: see docs/backends.md ("Empty sessions") for how a backend
  holds one.

Example:
    >>> outcomes = await export_all(SessionDirectory("sessions"), "redis://localhost/0")  # doctest: +SKIP
    >>> Counter(outcome.status for outcome in outcomes)                                   # doctest: +SKIP
    Counter({'copied': 998, 'skipped': 2})
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

from ..core import worker_threads
from ..core.codec import encode_items
from ..core.errors import JSONLSessionError
from ..session.folder import SessionDirectory
from ..session.store import JSONLSession
from .backends import Backend, open_backend

CONCURRENCY = 8
"""Sessions copied at once: enough to hide a network round trip, few enough for a small pool."""
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
    left_behind: tuple[str, ...] = ()
    """Export only: the session's metadata a backend cannot hold (``metadata_left_behind``)."""


async def export_all(
    directory: SessionDirectory, url: str, *, progress: Progress | None = None, concurrency: int = CONCURRENCY
) -> list[Outcome]:
    """Copy every session in ``directory`` to the backend at ``url`` under the same id.

    ``concurrency`` sessions are in flight at once, to hide the backend's round trips.

    Example:
        >>> await export_all(SessionDirectory("sessions"), "postgresql://me@db/chats")  # doctest: +SKIP
        [Outcome(session_id='convo_123', status='copied', items=42, detail=''), ...]
    """
    from .single import metadata_left_behind

    ids = directory.ids()
    async with open_backend(url) as backend:
        stored = set(await backend.session_ids())  # to tell an empty session there from none

        async def one(session_id: str) -> Outcome:
            try:
                local = directory.open(session_id)
                try:
                    items = await local.get_items()  # waits for a lock held elsewhere on the loop
                    left = tuple(metadata_left_behind(local))
                finally:
                    local.close()
            except (JSONLSessionError, OSError, ValueError) as exc:
                return Outcome(session_id, "failed", 0, f"{exc}; not exported")
            outcome = await _per_session(session_id, _export_one(backend, session_id, items, stored))
            return replace(outcome, left_behind=left) if outcome.status in ("copied", "skipped") else outcome

        return await _each(ids, one, progress, concurrency)


async def _export_one(backend: Backend, session_id: str, items: list[Any], stored: set[str]) -> Outcome:
    remote = backend.session(session_id)
    try:
        try:
            payload = encode_items(items)
        except ValueError as exc:
            return Outcome(session_id, "failed", len(items), str(exc))
        existing = await remote.get_items()
        if existing:
            return compare_items(
                session_id,
                existing,
                payload,
                f"the backend has {{}} items that differ from the {len(items)} here",
            )
        if items:
            await remote.add_items(items)  # one call: one transaction, all or nothing
        elif session_id in stored:
            return Outcome(session_id, "skipped", 0)  # stored empty already
        else:
            await backend.add_empty(session_id)
        return Outcome(session_id, "copied", len(items))
    finally:
        backend.done(remote)


async def _per_session(session_id: str, work: Awaitable[Outcome]) -> Outcome:
    """``work``'s outcome, or ``failed`` if it raised an error about this session's data.

    A backend's complaint about one key or row (Redis ``WRONGTYPE``, an item that is not JSON)
    fails that session; anything else (the connection, the credentials) stops the run.
    """
    try:
        return await work
    except (JSONLSessionError, ValueError, TypeError, LookupError) as exc:
        return Outcome(session_id, "failed", 0, _reason(exc))
    except Exception as exc:
        if type(exc).__name__ in _DATA_ERRORS:
            return Outcome(session_id, "failed", 0, _reason(exc))
        raise


# A backend's errors about one key or row, by name (their packages are optional imports).
_DATA_ERRORS = {"ResponseError", "DataError", "IntegrityError"}


def _reason(exc: BaseException) -> str:
    first_line = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first_line}" if not isinstance(exc, JSONLSessionError) else first_line


async def import_all(
    url: str, directory: SessionDirectory, *, progress: Progress | None = None, concurrency: int = CONCURRENCY
) -> list[Outcome]:
    """Copy every session stored at ``url`` into ``directory`` (one file per session id).

    Example:
        >>> await import_all("redis://localhost:6379/0", SessionDirectory("sessions"))  # doctest: +SKIP
        [Outcome(session_id='convo_123', status='skipped', items=42, detail=''), ...]
    """
    async with open_backend(url) as backend:
        ids, foreign = await backend.listing()

        async def read(session_id: str) -> list[Any]:
            remote = backend.session(session_id)
            try:
                return list(await remote.get_items())
            finally:
                backend.done(remote)

        async def write(session_id: str, items: list[Any]) -> Outcome:
            there = not items and directory.exists(session_id)  # an empty session, imported before?
            local = directory.open(session_id)
            try:
                outcome = await import_items(local, items)
            finally:
                local.close()
            return replace(outcome, status="skipped") if there and outcome.status == "copied" else outcome

        async def one(session_id: str) -> Outcome:
            try:
                items = await read(session_id)
            except Exception as exc:  # noqa: BLE001  (sorted by _per_session: ours, or re-raised)
                failed = await _per_session(session_id, _raised(exc))
                return replace(failed, detail=f"{failed.detail}; not imported")
            return await _per_session(session_id, write(session_id, items))

        outcomes = await _each(ids, one, progress, concurrency)
        return outcomes + [Outcome(shown, "failed", 0, why) for shown, why in foreign]


async def _raised(exc: BaseException) -> Outcome:
    raise exc


async def _each(
    ids: list[str], work: Callable[[str], Awaitable[Outcome]], progress: Progress | None, concurrency: int
) -> list[Outcome]:
    """``work`` on every id, ``concurrency`` at a time; outcomes in the order of ``ids``.

    If one fails with an error that is not about its session (the connection dropped), the
    others are cancelled: each is all or nothing, so a re-run finishes the job.
    """
    semaphore = asyncio.Semaphore(max(1, concurrency))
    done = 0
    _report(progress, 0, len(ids))

    async def one(session_id: str) -> Outcome:
        nonlocal done
        async with semaphore:
            outcome = await work(session_id)
        done += 1
        _report(progress, done, len(ids))
        return outcome

    tasks = [asyncio.ensure_future(one(session_id)) for session_id in ids]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def import_items(local: JSONLSession, items: list[Any]) -> Outcome:
    """Write all items in one rename if the session is empty, else compare (``import_session`` too).

    Encoding, and the read, compare and rename under the lock, run in worker threads; the
    lock is waited for on the loop. Items that cannot be written create no file.
    """
    try:
        payload = await worker_threads.run(encode_items, items)
    except ValueError as exc:
        return Outcome(local.session_id, "failed", len(items), f"{exc}; nothing imported")
    return await local.locked_in_thread(_import_locked, local, items, payload, write=True, create=True)


def _import_locked(fd: int, local: JSONLSession, items: list[Any], payload: bytes) -> Outcome:
    with local.rewriting(fd) as draft:
        if draft.items:
            return compare_items(
                local.session_id,
                draft.items,
                payload,
                f"the file has {{}} items that differ from the backend's {len(items)}",
            )
        draft.items = items
    return Outcome(local.session_id, "copied", len(items))


def compare_items(session_id: str, existing: list[Any], payload: bytes, differs: str) -> Outcome:
    """``skipped`` if ``existing`` is byte-equal to ``payload`` once written, else ``differs``
    (``differs`` is its detail, with ``{}`` for the number of items ``existing`` holds)."""
    try:
        same = encode_items(existing) == payload
    except ValueError:
        same = False
    if same:
        return Outcome(session_id, "skipped", len(existing))
    return Outcome(session_id, "differs", len(existing), differs.format(len(existing)) + "; not overwritten")


def _report(progress: Progress | None, done: int, total: int) -> None:
    if progress is not None:
        progress(done, total)
