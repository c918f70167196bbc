"""Keep a PostgreSQL or Redis database equal to a folder of sessions, live (``jsonl-session mirror``).

Agents keep writing files; the mirror follows the folder (a folder watch: every change, exact
under any interleaving of writes) and writes each change to the database through the Agents
SDK's own schema, so ``SQLAlchemySession`` and ``RedisSession`` in other processes and on other
machines read the same items ``get_items()`` reads from the files:

* appends become appends; ``removed``, ``cleared`` and ``replaced`` become the exact
  difference (rows after the common prefix removed, the file's items after it appended),
  each in one transaction on SQL and one ``MULTI``/``EXEC`` on Redis;
* a new session is created there (an empty one as the SDK stores a session before its first
  item); a deleted one is deleted there only with ``delete=True``, else kept. With
  ``delete``, a folder that does not exist or cannot be read is refused
  (:class:`FolderUnavailable`: it is far more likely unmounted or mistyped than emptied), and
  so is one pass that would delete more than half of the sessions stored, and more than
  :data:`FEW_DELETIONS` (:class:`MassDeletionRefused`), unless ``mass_delete=True``;
* an id the database cannot hold exactly (``transfer.sdk_schema.refusal``: a Redis id ending in
  ``:messages`` or ``:counter``, a NUL for PostgreSQL) fails that session before any write;
* on start, and after any outage (the database unreachable or restarted: the mirror retries
  on its own), every session is compared with the database and the difference applied, so
  once the folder is quiet the database equals it. What the database holds is read inside the
  transaction that writes it and nothing about it is recorded elsewhere, so a mirror killed at
  any point (``kill -9``) and started again neither duplicates nor loses an item.

:func:`catch_up_mirror` is that comparison alone, once (``--once``; with ``dry_run`` it changes nothing:
``--dry-run``, ``--verify``). Two mirrors of one folder into one database converge to it (each
transaction compares under the session's lock), though one may briefly write back a state the
other has passed: one is enough.

Example:
    >>> await mirror_folder("sessions", "postgresql://me@db/chats", delete=True)      # doctest: +SKIP
    >>> [o.status for o in catch_up_mirror_sync("sessions", "redis://localhost/0")]   # doctest: +SKIP
    ['same', 'appended', 'created']
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from collections.abc import Callable, Sequence

from ...core.errors import JSONLSessionError
from ...session.folder import SessionDirectory
from ...watch import StopFlag, watch_directory
from ..concurrently import each
from ..sdk_schema import id_problem
from ..urls import error_line, shown_urls
from .follow import Replica
from .outcomes import MirrorOutcome, outcome_of
from .plan import texts_of
from .redis_target import RedisClusterRefused
from .targets import Target, is_data_error, is_outage, open_target

__all__ = [
    "FEW_DELETIONS",
    "FolderUnavailable",
    "MassDeletionRefused",
    "MirrorOutcome",
    "RedisClusterRefused",
    "catch_up_mirror",
    "catch_up_mirror_sync",
    "mirror_folder",
    "mirror_folder_sync",
]

CONCURRENCY = 8
"""Sessions written at once: enough to hide the round trips, few enough for a small pool."""
CHECK_SECONDS = 0.5
"""How often the mirror asks the database whether it restarted, and looks for new empty files."""
RETRY_SECONDS = (0.1, 0.2, 0.5, 1.0, 2.0)
"""Waits between attempts to reach the database after an outage (the last one repeats)."""

FEW_DELETIONS = 3
"""Deletions one pass makes without ``mass_delete`` even when they are most of the database."""


class FolderUnavailable(JSONLSessionError, ValueError):
    """``delete`` was asked for a folder that does not exist or cannot be read: nothing deleted."""


class MassDeletionRefused(JSONLSessionError, ValueError):
    """One pass would delete more than half of the sessions stored (and more than
    :data:`FEW_DELETIONS`) and ``mass_delete`` was not given: nothing deleted."""


Report = Callable[[MirrorOutcome], None]
Notice = Callable[[str], None]
Progress = Callable[[int, int], None]
"""``progress(sessions_compared, sessions_total)`` during a catch-up."""
Folder = str | os.PathLike[str] | SessionDirectory
URLs = str | Sequence[str]
"""One database URL, or several: each session then goes to the one ``transfer.shards.shard_of`` names."""


async def mirror_folder(
    directory: Folder,
    url: URLs,
    *,
    delete: bool = False,
    stop_event: StopFlag | None = None,
    report: Report | None = None,
    notice: Notice | None = None,
    progress: Progress | None = None,
    concurrency: int = CONCURRENCY,
    mass_delete: bool = True,
) -> None:
    """Follow ``directory`` and keep the database at ``url`` equal to it, until ``stop_event``.

    Args:
        directory: A folder of sessions (path or :class:`SessionDirectory`).
        url: ``postgresql://...``, ``redis://...``, ``sqlite:///...`` or an SQLAlchemy async URL.
        delete: Whether a session deleted here (or stored there without a file) is deleted
            there too. Off by default: a database shared with others keeps what it has.
        stop_event: Anything with ``is_set()``; once set, what the files hold is mirrored
            and the call returns. Without one it runs until cancelled (Ctrl-C).
        report: Called with a :class:`MirrorOutcome` for every session compared or written.
        notice: Called with one line for a person: caught up, database unavailable, back.
        progress: ``progress(done, total)`` as sessions are compared during each catch-up.
        concurrency: Sessions written at once.
        mass_delete: With ``delete``, whether a catch-up may delete more than half of the
            sessions stored (and more than :data:`FEW_DELETIONS`); else
            :class:`MassDeletionRefused` is raised before anything is deleted.

    The first connection must succeed (else its error is raised); after that an outage is
    retried (:data:`RETRY_SECONDS`) and followed by a catch-up. Raises ``InvalidBackendURL``,
    ``BackendUnavailable``, ``RedisClusterRefused`` (the SDK cannot write to a Redis Cluster),
    ``FolderUnavailable`` and ``MassDeletionRefused`` (with ``delete``).

    Example:
        >>> stop = threading.Event()                                  # doctest: +SKIP
        >>> await mirror_folder("sessions", "redis://localhost:6379/0", stop_event=stop)  # doctest: +SKIP
    """
    folder = _folder(directory)
    if delete:
        await asyncio.to_thread(_readable, folder)
    say = notice or _quiet
    attempt = 0
    connected = False
    while True:
        try:
            async with open_target(url) as target:
                if connected:
                    say(f"{shown_urls(url)}: reachable again; catching up")
                connected, attempt = True, 0
                policy = _Deletions(delete, mass_delete)
                await _follow(
                    folder,
                    target,
                    shown_urls(url),
                    policy,
                    stop_event,
                    report or _quiet,
                    say,
                    progress,
                    concurrency,
                )
                return
        except Exception as exc:
            if not connected or not is_outage(exc):
                raise
            delay = RETRY_SECONDS[min(attempt, len(RETRY_SECONDS) - 1)]
            attempt += 1
            say(f"{shown_urls(url)}: unavailable ({error_line(exc, url)}); retrying in {delay:g} s")
            if await _stopped_within(stop_event, delay):
                return


def mirror_folder_sync(directory: Folder, url: URLs, **options: object) -> None:
    """Blocking twin of :func:`mirror_folder` (same arguments); Ctrl-C stops it (``KeyboardInterrupt``).

    Example:
        >>> mirror_folder_sync("sessions", "postgresql://me@db/chats", stop_event=stop)  # doctest: +SKIP
    """
    asyncio.run(mirror_folder(directory, url, **options))  # type: ignore[arg-type]


async def catch_up_mirror(
    directory: Folder,
    url: URLs,
    *,
    delete: bool = False,
    dry_run: bool = False,
    progress: Progress | None = None,
    concurrency: int = CONCURRENCY,
    mass_delete: bool = True,
) -> list[MirrorOutcome]:
    """Compare every session with the database once and apply the differences; one outcome each.

    The sessions of the folder come first, in id order, then those stored only in the
    database (``deleted`` with ``delete=True``, else ``kept``). With ``dry_run`` nothing is
    written: the outcomes say what would be done (``--dry-run``), and any outcome whose
    :attr:`~MirrorOutcome.differs` is a difference (``--verify``). With ``delete``, a folder that
    cannot be read raises :class:`FolderUnavailable` and, unless ``mass_delete`` (or
    ``dry_run``), deleting most of the database :class:`MassDeletionRefused`, before any write.

    Example:
        >>> outcomes = await catch_up_mirror("sessions", "redis://db/0", dry_run=True)  # doctest: +SKIP
        >>> [o.describe(dry_run=True) for o in outcomes if o.differs]                  # doctest: +SKIP
        ['support-42: would append 3 items']
    """
    folder = _folder(directory)
    if delete:
        await asyncio.to_thread(_readable, folder)
    async with open_target(url, create=not dry_run) as target:
        ids = await asyncio.to_thread(folder.ids)
        stored = await stored_ids(target)
        if delete and not (mass_delete or dry_run):
            here_now = set(ids)
            doomed = [session_id for session_id in stored if session_id not in here_now]
            _Deletions(delete, mass_delete).check(shown_urls(url), doomed, len(stored))

        async def one(session_id: str) -> MirrorOutcome:
            local = folder.open(session_id)
            try:
                items = await local.get_items()
            except (JSONLSessionError, OSError, ValueError) as exc:
                return MirrorOutcome(session_id, "failed", detail=f"{exc}; not mirrored")
            finally:
                local.close()
            texts = texts_of(items)
            try:
                return outcome_of(
                    session_id, await target.sync(session_id, texts, dry_run=dry_run), len(texts)
                )
            except Exception as exc:
                if not is_data_error(exc):
                    raise
                return MirrorOutcome(session_id, "failed", len(texts), detail=f"{type(exc).__name__}: {exc}")

        outcomes = await each(ids, one, progress, concurrency)
        here = set(ids) | set(await asyncio.to_thread(folder.ids))
        for session_id in stored:
            if session_id in here:
                continue
            if not delete:
                outcomes.append(MirrorOutcome(session_id, "kept"))
                continue
            removed = await target.remove(session_id, dry_run=dry_run)
            if removed is not None:
                outcomes.append(MirrorOutcome(session_id, "deleted", removed=removed))
        return outcomes


def catch_up_mirror_sync(directory: Folder, url: URLs, **options: object) -> list[MirrorOutcome]:
    """Blocking twin of :func:`catch_up_mirror` (same arguments).

    Example:
        >>> any(o.differs for o in catch_up_mirror_sync("sessions", url, dry_run=True))  # doctest: +SKIP
        False
    """
    return asyncio.run(catch_up_mirror(directory, url, **options))  # type: ignore[arg-type]


async def _follow(
    folder: SessionDirectory,
    target: Target,
    where: str,
    policy: _Deletions,
    stop_event: StopFlag | None,
    report: Report,
    say: Notice,
    progress: Progress | None,
    concurrency: int,
) -> None:
    """One run against a connected database: a fresh watch, a full comparison, then changes."""
    counts: Counter[str] = Counter()

    def counted(outcome: MirrorOutcome) -> None:
        counts[outcome.status] += 1
        report(outcome)

    replica = Replica(
        target,
        delete=policy.delete,
        report=counted,
        concurrency=concurrency,
        folder_there=folder_readable(folder),
    )
    initial = set(await asyncio.to_thread(folder.ids))
    stored = await stored_ids(target)
    if policy.delete and not policy.mass:
        policy.check(where, [i for i in stored if i not in initial], len(stored))
    watch = watch_directory(
        folder.directory, start="all", stop_event=stop_event, lock_timeout=folder.lock_timeout
    )
    consumer: asyncio.Task[None] | None = None
    try:
        async with watch as changes:  # the replay (every session, in full) is queued now

            async def consume() -> None:
                async for change in changes:
                    replica.take(change)

            consumer = asyncio.create_task(consume())
            await replica.adopt_empty_files(folder)
            await replica.adopt_stored_only(folder, stored)
            await _watch_over(folder, target, where, replica, consumer, initial, counts, say, progress)
    finally:
        if consumer is not None:
            consumer.cancel()
            await asyncio.gather(consumer, return_exceptions=True)
        await replica.close()


async def _watch_over(
    folder: SessionDirectory,
    target: Target,
    where: str,
    replica: Replica,
    consumer: asyncio.Task[None],
    initial: set[str],
    counts: Counter[str],
    say: Notice,
    progress: Progress | None,
) -> None:
    """Until the watch ends: report the catch-up, ask the database whether it restarted, adopt
    new empty files, and raise the replica's outage (or error) as soon as it has one."""
    caught_up = False
    waker = asyncio.create_task(replica.wake.wait())
    try:
        while True:
            if not caught_up:
                done = len(initial & replica.compared)
                if progress is not None:
                    progress(done, len(initial))
                if not replica.busy and (done == len(initial) or not _still_there(folder, initial, replica)):
                    caught_up = True
                    say(_caught_up(where, counts))
            await asyncio.wait({consumer, waker}, timeout=0.1 if not caught_up else CHECK_SECONDS)
            if replica.outage is not None:
                raise replica.outage
            if consumer.done():  # stopped: what the files hold is delivered
                consumer.result()  # a watch error is raised here
                await replica.adopt_empty_files(folder)
                await replica.settle()
                if replica.outage is not None:
                    raise replica.outage
                return
            await target.check()
            await replica.adopt_empty_files(folder)
    finally:
        waker.cancel()


def _caught_up(where: str, counts: Counter[str]) -> str:
    """``caught up with URL: 3 up to date, 1 appended; following`` (the statuses seen so far)."""
    labels = {"same": "up to date", "kept": "kept (only there)"}
    seen = ", ".join(f"{count} {labels.get(status, status)}" for status, count in sorted(counts.items()))
    return f"caught up with {where}: {seen or 'no sessions'}; following the folder"


def _still_there(folder: SessionDirectory, initial: set[str], replica: Replica) -> bool:
    """Whether a session of the initial folder has still to be compared (it may have gone)."""
    return any(folder.exists(session_id) for session_id in initial - replica.compared)


async def stored_ids(target: Target) -> list[str]:
    """The session ids the database holds that could be files here (others are not ours)."""
    ids = []
    for raw in await target.listing():
        session_id, problem = id_problem(raw)
        if problem is None:
            ids.append(session_id)
    return sorted(set(ids))


class _Deletions:
    """Whether sessions without a file are deleted, and whether many at once may be."""

    def __init__(self, delete: bool, mass: bool) -> None:
        self.delete = delete
        self.mass = mass

    def check(self, where: str, doomed: list[str], stored: int) -> None:
        """Raise :class:`MassDeletionRefused` if deleting ``doomed`` of ``stored`` is a mass deletion."""
        if len(doomed) > FEW_DELETIONS and 2 * len(doomed) > stored:
            raise MassDeletionRefused(
                f"this would delete {len(doomed)} of the {stored} sessions stored at {where} "
                f"(more than half, and more than {FEW_DELETIONS}): nothing deleted; a folder emptied by "
                "mistake looks the same; pass --yes (mass_delete=True) if that is what you want"
            )


def _readable(folder: SessionDirectory) -> None:
    """Raise :class:`FolderUnavailable` unless ``folder`` is a directory that can be listed."""
    path = os.fspath(folder.directory)
    try:
        os.listdir(path)
    except OSError as exc:
        why = "does not exist" if isinstance(exc, FileNotFoundError) else f"cannot be read ({exc.strerror})"
        raise FolderUnavailable(
            f"{path}: the folder {why}; with --delete (delete=True) that would empty the database: "
            "nothing done"
        ) from None


def folder_readable(folder: SessionDirectory) -> Callable[[], bool]:
    """A check the live mirror makes before each deletion: the folder is still there and readable
    (an unmounted volume is not a folder whose sessions were deleted)."""

    def there() -> bool:
        try:
            os.listdir(os.fspath(folder.directory))
        except OSError:
            return False
        return True

    return there


async def _stopped_within(stop_event: StopFlag | None, seconds: float) -> bool:
    """Sleep ``seconds``, or less if ``stop_event`` is set meanwhile; whether it is set."""
    deadline = asyncio.get_running_loop().time() + seconds
    while asyncio.get_running_loop().time() < deadline:
        if stop_event is not None and stop_event.is_set():
            return True
        await asyncio.sleep(min(0.05, seconds))
    return stop_event is not None and stop_event.is_set()


def _folder(directory: Folder) -> SessionDirectory:
    return directory if isinstance(directory, SessionDirectory) else SessionDirectory(directory)


def _quiet(_: object) -> None:
    """Reports and notices nobody asked for."""
