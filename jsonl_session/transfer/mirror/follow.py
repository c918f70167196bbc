"""The live half of a mirror: a folder watch's changes in, one transaction per session out.

:class:`Replica` keeps, for every session, the list of its items' SDK texts, rebuilt from the
watch's changes with the same rules as ``watch.apply`` (exact at every quiet point, see
docs/live-tail.md), and how far back the file may now differ from the database (``dirty``):

* ``appended``: from the old length (the rows before it are not touched);
* ``removed``: from the new length;
* ``cleared``, ``deleted``, a session not seen before: from 0 (compare everything);
* ``replaced``: from the common prefix of the old and new lists.

Each session has at most one task at a time, which hands the current list and ``dirty`` to
the target's ``sync``: in one transaction it checks that the stored row just before ``dirty``
holds the file's item there (else it compares everything), and applies the smallest
difference. Changes that arrive during a transaction are folded into the next one. Nothing
is remembered about the database between transactions: a transaction killed half-way,
repeated, or run against a database that lost rows compares again and writes what is missing.

The tasks run ``concurrency`` at a time. An error that is about one session's data fails
that session (reported, compared in full at its next change); an outage (``is_outage``)
stops the replica: :attr:`Replica.outage` holds it and :attr:`Replica.wake` is set, and the
mirror starts again from a fresh watch once the database is back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from ...core.errors import JSONLSessionError
from ...session.folder import SessionDirectory
from ...watch import Change
from .outcomes import MirrorOutcome, outcome_of
from .plan import texts_of
from .targets import Target, is_data_error

Report = Callable[[MirrorOutcome], None]


@dataclass
class _Session:
    texts: list[str] = field(default_factory=list)
    dirty: int | None = 0
    """From which item the database may differ from ``texts``; None: in step."""
    gone: bool = False
    """The file was deleted (``texts`` is empty)."""
    unsure: bool = False
    """The last transaction failed: compare everything next time."""
    changes: int = 0
    """How many of the watch's changes were taken: a look at the file meanwhile is stale."""


class Replica:
    """Follows a watch's changes and applies them to ``target`` (see the module's docstring)."""

    def __init__(
        self,
        target: Target,
        *,
        delete: bool,
        report: Report,
        concurrency: int = 8,
        folder_there: Callable[[], bool] | None = None,
    ) -> None:
        self.target = target
        self.delete = delete
        self.folder_there = folder_there
        """Asked before each deletion: a folder gone or unreadable deletes nothing."""
        self.report = report
        self.sessions: dict[str, _Session] = {}
        self.compared: set[str] = set()
        """Sessions compared with the database at least once since this replica began."""
        self.outage: BaseException | None = None
        self.wake = asyncio.Event()
        self._slots = asyncio.Semaphore(max(1, concurrency))
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def take(self, change: Change) -> None:
        """Fold one change into the session's list and schedule its transaction."""
        session_id = change.session_id
        if change.kind == "failed":
            detail = f"{type(change.error).__name__}: {change.error}" if change.error else "cannot be read"
            self.compared.add(session_id)
            self.report(MirrorOutcome(session_id, "failed", detail=f"{detail}; not mirrored until it reads"))
            return
        session = self.sessions.get(session_id)
        if session is None:
            session = self.sessions[session_id] = _Session()
        session.changes += 1
        texts = session.texts
        if change.kind == "appended":
            self._mark(session, len(texts))
            texts.extend(texts_of(change.items))
            session.gone = False
        elif change.kind == "removed":
            keep = max(0, len(texts) - change.count)
            self._mark(session, keep)
            del texts[keep:]
        elif change.kind == "replaced":
            new = texts_of(change.items)
            self._mark(session, _common_prefix(texts, new))
            session.texts = new
            session.gone = False
        elif change.kind == "cleared":
            self._mark(session, 0)
            texts.clear()
            session.gone = False
        elif change.kind == "deleted":
            self._mark(session, 0)
            texts.clear()
            session.gone = True
        else:
            raise ValueError(f"unknown change kind {change.kind!r}")
        self._schedule(session_id)

    def adopt(self, session_id: str, *, gone: bool) -> bool:
        """Take on a session the watch has not delivered: an empty file (``gone=False``; a watch
        delivers no change for a file without items) or one stored but without a file
        (``gone=True``). Starting from an empty list is what the watch's changes build on, so
        this never contradicts them. False if the session is known already."""
        if session_id in self.sessions:
            return False
        self.sessions[session_id] = _Session(gone=gone)
        self._schedule(session_id)
        return True

    async def adopt_empty_files(self, folder: SessionDirectory) -> None:
        """Adopt the folder's sessions that have no change yet (or were deleted since) and are
        empty: a watch delivers nothing for a file without items, yet the database must hold
        the session."""
        for session_id in await asyncio.to_thread(folder.ids):
            known = self.sessions.get(session_id)
            if known is not None and not known.gone:
                continue
            seen = None if known is None else known.changes
            local = folder.open(session_id)
            try:
                empty = not await local.get_items(limit=1)
            except (JSONLSessionError, OSError, ValueError):
                continue  # the watch reports it as failed
            finally:
                local.close()
            if not empty:
                continue  # the watch delivers it
            # A file deleted since the listing reads as empty too, and the watch may have said
            # so meanwhile: its word stands, and a file no longer there is not adopted (adopted,
            # a deleted session came back empty in the database, and nothing deleted it again).
            now = self.sessions.get(session_id)
            if now is not known or (known is not None and known.changes != seen):
                continue
            if not await asyncio.to_thread(folder.exists, session_id):
                continue
            if known is None:
                self.adopt(session_id, gone=False)
            elif known.gone:  # deleted, then made again without items (and no change meanwhile)
                known.gone = False
                self._mark(known, 0)
                self._schedule(session_id)

    async def adopt_stored_only(self, folder: SessionDirectory, stored: list[str]) -> None:
        """Adopt the sessions stored in the database without a file here now, as deleted (the
        policy decides). Called once the watch is on, so a file made later is delivered."""
        for session_id in stored:
            if session_id not in self.sessions and not await asyncio.to_thread(folder.exists, session_id):
                self.adopt(session_id, gone=True)

    @property
    def busy(self) -> bool:
        return bool(self._tasks)

    async def settle(self) -> None:
        """Wait until every scheduled transaction is done."""
        while self._tasks:
            await asyncio.gather(*self._tasks.values(), return_exceptions=True)

    async def close(self) -> None:
        """Cancel the transactions in flight (an outage, or the mirror stopping on an error)."""
        for task in self._tasks.values():
            task.cancel()
        await self.settle()

    def _mark(self, session: _Session, start: int) -> None:
        if session.unsure:
            start = 0
        session.dirty = start if session.dirty is None else min(session.dirty, start)

    def _schedule(self, session_id: str) -> None:
        if session_id not in self._tasks and self.outage is None:
            self._tasks[session_id] = asyncio.create_task(self._run(session_id))

    async def _run(self, session_id: str) -> None:
        session = self.sessions[session_id]
        try:
            while session.dirty is not None and self.outage is None:
                start, session.dirty, session.unsure = session.dirty, None, False
                texts, gone = list(session.texts), session.gone
                try:
                    async with self._slots:
                        outcome = await self._sync(session_id, texts, start, gone)
                except Exception as exc:
                    if not is_data_error(exc):
                        raise
                    session.unsure = True
                    outcome = MirrorOutcome(session_id, "failed", detail=f"{type(exc).__name__}: {exc}")
                self.compared.add(session_id)
                self.report(outcome)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001  (an outage, or a bug: the mirror decides)
            if self.outage is None:
                self.outage = exc
            self.wake.set()
        finally:
            self._tasks.pop(session_id, None)

    async def _sync(self, session_id: str, texts: list[str], start: int, gone: bool) -> MirrorOutcome:
        if not gone:
            return outcome_of(session_id, await self.target.sync(session_id, texts, start), len(texts))
        if not self.delete:
            return MirrorOutcome(session_id, "kept", detail="deleted here; kept in the database (no delete)")
        if self.folder_there is not None and not await asyncio.to_thread(self.folder_there):
            return MirrorOutcome(
                session_id, "kept", detail="the folder is gone or cannot be read; not deleted in the database"
            )
        removed = await self.target.remove(session_id)
        if removed is None:
            return MirrorOutcome(session_id, "same", detail="deleted here, absent there")
        return MirrorOutcome(session_id, "deleted", removed=removed)


def _common_prefix(old: list[str], new: list[str]) -> int:
    count = 0
    for before, after in zip(old, new):
        if before != after:
            break
        count += 1
    return count
