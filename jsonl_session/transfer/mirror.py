"""Keep a PostgreSQL or Redis database equal to a folder of sessions, live (``jsonl-session mirror``).

Agents keep writing files; the mirror follows the folder (a folder watch: every change, exact
under any interleaving of writes) and writes each change to the database through the Agents
SDK's own schema, so ``SQLAlchemySession`` and ``RedisSession`` in other processes and on other
machines read the same items ``get_items()`` reads from the files:

* appends become appends; ``removed``, ``cleared`` and ``replaced`` become the exact
  difference (rows after the common prefix removed, the file's items after it appended),
  each in one transaction on SQL and one ``MULTI``/``EXEC`` on Redis;
* a new session is created there (an empty one as the SDK stores a session before its first
  item); a deleted one is deleted there only with ``delete=True``, else kept;
* on start, and after any outage (the database unreachable or restarted: the mirror retries
  on its own), every session is compared with the database and the difference applied, so
  once the folder is quiet the database equals it. What the database holds is read inside the
  transaction that writes it and nothing about it is recorded elsewhere, so a mirror killed at
  any point (``kill -9``) and started again neither duplicates nor loses an item.

:func:`catch_up_mirror` is that comparison alone, once (``--once``; with ``dry_run`` it changes nothing:
``--dry-run``, ``--verify``). One mirror per folder and database: two would each be exact but
could interleave their writes to one session.

Example:
    >>> await mirror_folder("sessions", "postgresql://me@db/chats", delete=True)      # doctest: +SKIP
    >>> [o.status for o in catch_up_mirror_sync("sessions", "redis://localhost/0")]   # doctest: +SKIP
    ['same', 'appended', 'created']
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence

from ..core.errors import JSONLSessionError
from ..core.names import filename_for
from ..session.folder import SessionDirectory
from ..watch import StopFlag, watch_directory
from .mirror_follow import Replica
from .mirror_outcomes import MirrorOutcome, outcome_of
from .mirror_plan import texts_of
from .mirror_redis import RedisClusterRefused
from .mirror_targets import Target, is_data_error, is_outage, open_target
from .urls import quotes_password, shown_url

__all__ = [
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

Report = Callable[[MirrorOutcome], None]
Notice = Callable[[str], None]
Progress = Callable[[int, int], None]
"""``progress(sessions_compared, sessions_total)`` during a catch-up."""
Folder = str | os.PathLike[str] | SessionDirectory


async def mirror_folder(
    directory: Folder,
    url: str,
    *,
    delete: bool = False,
    stop_event: StopFlag | None = None,
    report: Report | None = None,
    notice: Notice | None = None,
    progress: Progress | None = None,
    concurrency: int = CONCURRENCY,
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

    The first connection must succeed (else its error is raised); after that an outage is
    retried (:data:`RETRY_SECONDS`) and followed by a catch-up. Raises ``InvalidBackendURL``,
    ``BackendUnavailable``, ``RedisClusterRefused`` (the SDK cannot write to a Redis Cluster).

    Example:
        >>> stop = threading.Event()                                  # doctest: +SKIP
        >>> await mirror_folder("sessions", "redis://localhost:6379/0", stop_event=stop)  # doctest: +SKIP
    """
    folder = _folder(directory)
    say = notice or _quiet
    attempt = 0
    connected = False
    while True:
        try:
            async with open_target(url) as target:
                if connected:
                    say(f"{shown_url(url)}: reachable again; catching up")
                connected, attempt = True, 0
                await _follow(
                    folder, target, delete, stop_event, report or _quiet, say, progress, concurrency
                )
                return
        except Exception as exc:
            if not connected or not is_outage(exc):
                raise
            delay = RETRY_SECONDS[min(attempt, len(RETRY_SECONDS) - 1)]
            attempt += 1
            say(f"{shown_url(url)}: unavailable ({_first_line(exc, url)}); retrying in {delay:g} s")
            if await _stopped_within(stop_event, delay):
                return


def mirror_folder_sync(directory: Folder, url: str, **options: object) -> None:
    """Blocking twin of :func:`mirror_folder` (same arguments); Ctrl-C stops it (``KeyboardInterrupt``).

    Example:
        >>> mirror_folder_sync("sessions", "postgresql://me@db/chats", stop_event=stop)  # doctest: +SKIP
    """
    asyncio.run(mirror_folder(directory, url, **options))  # type: ignore[arg-type]


async def catch_up_mirror(
    directory: Folder,
    url: str,
    *,
    delete: bool = False,
    dry_run: bool = False,
    progress: Progress | None = None,
    concurrency: int = CONCURRENCY,
) -> list[MirrorOutcome]:
    """Compare every session with the database once and apply the differences; one outcome each.

    The sessions of the folder come first, in id order, then those stored only in the
    database (``deleted`` with ``delete=True``, else ``kept``). With ``dry_run`` nothing is
    written: the outcomes say what would be done (``--dry-run``), and any outcome whose
    :attr:`~MirrorOutcome.differs` is a difference (``--verify``).

    Example:
        >>> outcomes = await catch_up_mirror("sessions", "redis://db/0", dry_run=True)  # doctest: +SKIP
        >>> [o.describe(dry_run=True) for o in outcomes if o.differs]                  # doctest: +SKIP
        ['support-42: would append 3 items']
    """
    folder = _folder(directory)
    async with open_target(url, create=not dry_run) as target:
        ids = await asyncio.to_thread(folder.ids)

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

        outcomes = await _each(ids, one, progress, concurrency)
        here = set(ids) | set(await asyncio.to_thread(folder.ids))
        for session_id in await stored_ids(target):
            if session_id in here:
                continue
            if not delete:
                outcomes.append(MirrorOutcome(session_id, "kept"))
                continue
            removed = await target.remove(session_id, dry_run=dry_run)
            if removed is not None:
                outcomes.append(MirrorOutcome(session_id, "deleted", removed=removed))
        return outcomes


def catch_up_mirror_sync(directory: Folder, url: str, **options: object) -> list[MirrorOutcome]:
    """Blocking twin of :func:`catch_up_mirror` (same arguments).

    Example:
        >>> any(o.differs for o in catch_up_mirror_sync("sessions", url, dry_run=True))  # doctest: +SKIP
        False
    """
    return asyncio.run(catch_up_mirror(directory, url, **options))  # type: ignore[arg-type]


async def _follow(
    folder: SessionDirectory,
    target: Target,
    delete: bool,
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

    replica = Replica(target, delete=delete, report=counted, concurrency=concurrency)
    initial = set(await asyncio.to_thread(folder.ids))
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
            await replica.adopt_stored_only(folder, await stored_ids(target))
            await _watch_over(folder, target, replica, consumer, initial, counts, say, progress)
    finally:
        if consumer is not None:
            consumer.cancel()
            await asyncio.gather(consumer, return_exceptions=True)
        await replica.close()


async def _watch_over(
    folder: SessionDirectory,
    target: Target,
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
                    say(_caught_up(target.url, counts))
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


def _caught_up(url: str, counts: Counter[str]) -> str:
    """``caught up with URL: 3 up to date, 1 appended; following`` (the statuses seen so far)."""
    labels = {"same": "up to date", "kept": "kept (only there)"}
    seen = ", ".join(f"{count} {labels.get(status, status)}" for status, count in sorted(counts.items()))
    return f"caught up with {shown_url(url)}: {seen or 'no sessions'}; following the folder"


def _still_there(folder: SessionDirectory, initial: set[str], replica: Replica) -> bool:
    """Whether a session of the initial folder has still to be compared (it may have gone)."""
    return any(folder.exists(session_id) for session_id in initial - replica.compared)


async def stored_ids(target: Target) -> list[str]:
    """The session ids the database holds that could be files here (others are not ours)."""
    ids = []
    for raw in await target.listing():
        if isinstance(raw, bytes | bytearray | memoryview):
            try:
                raw = bytes(raw).decode()
            except UnicodeDecodeError:
                continue
        if not isinstance(raw, str) or not raw:
            continue
        try:
            filename_for(raw)
        except ValueError:
            continue
        ids.append(raw)
    return sorted(set(ids))


async def _each(
    ids: Sequence[str],
    work: Callable[[str], Awaitable[MirrorOutcome]],
    progress: Progress | None,
    concurrency: int,
) -> list[MirrorOutcome]:
    """``work`` on every id, ``concurrency`` at a time; outcomes in the order of ``ids``."""
    slots = asyncio.Semaphore(max(1, concurrency))
    done = 0
    if progress is not None:
        progress(0, len(ids))

    async def one(session_id: str) -> MirrorOutcome:
        nonlocal done
        async with slots:
            outcome = await work(session_id)
        done += 1
        if progress is not None:
            progress(done, len(ids))
        return outcome

    tasks = [asyncio.ensure_future(one(session_id)) for session_id in ids]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


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


def _first_line(exc: BaseException, url: str) -> str:
    """The error in one line, never quoting the URL's password (a driver may)."""
    text = (str(exc).strip().splitlines() or [""])[0]
    if quotes_password(text, url):
        text = "(message not shown: it quotes the password)"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _quiet(_: object) -> None:
    """Reports and notices nobody asked for."""
