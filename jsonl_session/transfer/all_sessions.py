"""Copy every session of a folder to a shared backend, or every session of a backend to a folder.

Moving a team to PostgreSQL or Redis means copying thousands of sessions, and a copy that long
gets interrupted; later, the files or the database grow and the copy is run again. So each
session is copied all or nothing, and a run copies only what the destination lacks:

* the destination's items are compared with the source's, item by item (``compare``): the
  same items are ``skipped`` (up to date), a destination that holds the first items of the
  source gets the missing tail ``appended`` (``copied`` when it held nothing), and one that
  holds anything else ``differs`` at the first item that is not the source's and is never
  overwritten, unless ``replace=True`` (then ``replaced``);
* **export** writes a session's tail and its metadata (``companion``) in one transaction: many
  sessions per transaction into PostgreSQL and SQLite (``sql_store``), one ``MULTI``/``EXEC``
  per session into Redis (``redis_store``), one transaction per session into an
  ``SQLiteSession`` file (``sqlite_store``);
* **import** writes each session in one write under the file's lock (appended to a new file,
  a rename over one that holds items), then its sidecars and times, while the lock is held
  (``import_items``);
* whatever is wrong with one session (a malformed file, an id in the backend that is not ours:
  not UTF-8, empty, too long for a file name, a key of another type) is that session's
  ``failed`` outcome with its reason, and the others go on; only an error of the backend
  itself (the connection dropped) stops the run, which a re-run then finishes;
* an empty session is copied too: see docs/backends.md ("Empty sessions").

Example:
    >>> outcomes = await export_all(SessionDirectory("sessions"), "redis://localhost/0")  # doctest: +SKIP
    >>> Counter(outcome.status for outcome in outcomes)                                   # doctest: +SKIP
    Counter({'copied': 998, 'appended': 2})
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Awaitable, Sequence
from dataclasses import replace as with_changes
from pathlib import Path
from typing import Any, NamedTuple, TypeVar, cast

from ..core import reads, safe_open, sidecar_files, worker_threads
from ..core.codec import encode_items, encoding_or_none
from ..core.errors import JSONLSessionError
from ..core.locking import BUSY, MISSING
from ..core.names import TIMES
from ..session.folder import SessionDirectory
from ..session.store import JSONLSession
from . import companion, redis_store, sql_store, sqlite_store
from .backends import Backend, Progress, open_backend
from .companion import Metadata
from .concurrently import each
from .copy_outcome import Outcome, Status, decide
from .sdk_schema import check_storable, refusal
from .shards import shard_of

__all__ = [
    "CONCURRENCY",
    "INLINE_BYTES",
    "Outcome",
    "Status",
    "export_all",
    "export_one",
    "import_all",
    "import_items",
    "prepare",
    "read_companions",
    "read_local",
    "read_locked_job",
]

T = TypeVar("T")

CONCURRENCY = 8
"""Sessions (or batches of sessions) copied at once: enough to hide a network round trip."""

INLINE_BYTES = 128 * 1024
"""An import encodes and hashes a session's items on the loop up to this many stored bytes
(about half a millisecond), as ``JSONLSession.add_items`` encodes on the loop: one hand-off
to a worker thread fewer per session."""


async def export_all(
    directory: SessionDirectory,
    url: str,
    *,
    progress: Progress | None = None,
    concurrency: int = CONCURRENCY,
    replace: bool = False,
) -> list[Outcome]:
    """Bring every session of ``directory`` up to date in the backend at ``url``, under the same id.

    Example:
        >>> await export_all(SessionDirectory("sessions"), "postgresql://me@db/chats")  # doctest: +SKIP
        [Outcome(session_id='convo_123', status='appended', items=2, ...), ...]
    """
    ids = directory.ids()
    async with open_backend(url) as backend:
        await prepare(backend)
        if backend.flavour == "sqlalchemy" and sql_store.supported(backend.handle):
            # Batches small enough that every connection in flight has one (and a killed run
            # has committed some), large enough to amortise the round trips.
            lanes = max(1, concurrency // 2)
            size = max(1, min(sql_store.BATCH_SESSIONS, -(-len(ids) // lanes)))
            batches = [ids[start : start + size] for start in range(0, len(ids), size)]
            done = 0
            _report(progress, 0, len(ids))

            async def batch(chunk: list[str]) -> list[Outcome]:
                nonlocal done
                outcomes = await _export_batch(backend, directory, chunk, replace)
                done += len(chunk)
                _report(progress, done, len(ids))
                return outcomes

            per_batch = await each(batches, batch, None, lanes)
            return [outcome for outcomes in per_batch for outcome in outcomes]

        # Redis: which sessions are there at all (one SCAN), so that a first copy skips a look.
        there = set(await backend.session_ids()) if backend.flavour == "redis" else None

        async def one(session_id: str) -> Outcome:
            read = await read_local(directory, session_id)
            if isinstance(read, Outcome):
                return read
            maybe_there = there is None or session_id in there
            return await _per_session(
                session_id, export_one(backend, read, replace=replace, maybe_there=maybe_there)
            )

        return await each(ids, one, progress, concurrency)


async def prepare(backend: Backend) -> None:
    """Create the companion table where it is missing (SQL; Redis needs nothing)."""
    if backend.flavour == "sqlalchemy":
        await sql_store.ensure_companion(backend.handle)
    elif backend.flavour == "sqlite":
        setup = backend.session("jsonl-session-setup")  # the SDK's SQLiteSession creates its tables
        backend.done(setup)
        await asyncio.to_thread(sqlite_store.ensure_companion, backend.handle)


async def read_local(directory: SessionDirectory, session_id: str) -> sql_store.Job | Outcome:
    """One session's items and companion entries, read under its lock; ``failed`` if unreadable."""
    try:
        local = directory.open(session_id)
        try:
            return await local.locked_in_thread(read_locked_job, local, write=False)
        finally:
            local.close()
    except (JSONLSessionError, OSError, ValueError) as exc:
        return Outcome(session_id, "failed", 0, f"{exc}; not exported")


def read_locked_job(fd: int, local: JSONLSession) -> sql_store.Job:
    """``local``'s items and companion entries, read from ``fd`` under its lock (for ``locked_in_thread``)."""
    if fd == MISSING:
        raise FileNotFoundError(f"{local.path}: no such session (deleted meanwhile)")
    items = local.read_locked(fd, None)
    payload = encode_items(items)  # an item this format cannot write exactly: refused before any write
    return sql_store.Job(local.session_id, items, companion.read_locally(local.path, fd, payload))


async def export_one(
    backend: Backend, job: sql_store.Job, *, replace: bool = False, maybe_there: bool = True
) -> Outcome:
    """Bring one session up to date in ``backend`` (see the module docstring for each backend);
    ``maybe_there=False``: it was not there when the run began (Redis then skips a look).
    An id the backend cannot hold exactly (``sdk_schema.refusal``) raises ``NotStorable``
    before anything is written."""
    check_storable(backend.kind, job.session_id)
    if backend.flavour == "redis":
        return await redis_store.export_one(
            backend.handle, job.session_id, job.items, job.metadata, replace=replace, maybe_there=maybe_there
        )
    if backend.flavour == "sqlite":
        return await asyncio.to_thread(
            sqlite_store.export_one, backend.handle, job.session_id, job.items, job.metadata, replace=replace
        )
    if sql_store.supported(backend.handle):
        return (await sql_store.export_batch(backend.handle, [job], replace=replace))[0]
    return await _through_the_sdk(backend, job, replace)


async def _through_the_sdk(backend: Backend, job: sql_store.Job, replace: bool) -> Outcome:
    """Other SQL databases: the SDK's own calls (one transaction for the tail), then the companion."""
    remote = backend.session(job.session_id)
    try:
        existing = await remote.get_items()
        decided = decide(job.session_id, job.items, existing, replace=replace)
        if not decided.write:
            return decided.outcome
        if decided.clear:
            await remote.clear_session()
        tail = job.items[decided.start :]
        if tail:
            await remote.add_items(tail)
        elif not job.items:
            await backend.add_empty(job.session_id)
        await sql_store.write_companion(backend.handle, job.session_id, job.metadata)
        return decided.outcome
    finally:
        backend.done(remote)


async def _export_batch(
    backend: Backend, directory: SessionDirectory, ids: list[str], replace: bool
) -> list[Outcome]:
    reads = await asyncio.gather(*(_read_storable(backend, directory, session_id) for session_id in ids))
    jobs = [read for read in reads if isinstance(read, sql_store.Job)]
    try:
        written = iter(await sql_store.export_batch(backend.handle, jobs, replace=replace) if jobs else [])
    except Exception as exc:
        if not _about_data(exc):
            raise
        # One session's data spoiled the batch: each alone, so that only it fails.
        singles = [
            await _per_session(job.session_id, export_one(backend, job, replace=replace)) for job in jobs
        ]
        written = iter(singles)
    return [read if isinstance(read, Outcome) else next(written) for read in reads]


async def _read_storable(
    backend: Backend, directory: SessionDirectory, session_id: str
) -> sql_store.Job | Outcome:
    """:func:`read_local`, or ``failed`` at once if the backend cannot hold the id exactly."""
    why = refusal(backend.kind, session_id)
    return Outcome(session_id, "failed", 0, why) if why else await read_local(directory, session_id)


async def _per_session(session_id: str, work: Awaitable[T]) -> T | Outcome:
    """``work``'s outcome, or ``failed`` if it raised an error about this session's data.

    A backend's complaint about one key or row (Redis ``WRONGTYPE``, an item that is not JSON)
    fails that session; anything else (the connection, the credentials) stops the run.
    """
    try:
        return await work
    except Exception as exc:
        if _about_data(exc):
            return Outcome(session_id, "failed", 0, _reason(exc))
        raise


# A backend's errors about one key or row, by name (their packages are optional imports).
_DATA_ERRORS = {"ResponseError", "DataError", "IntegrityError"}


def _about_data(exc: BaseException) -> bool:
    return isinstance(exc, JSONLSessionError | ValueError | TypeError | LookupError) or (
        type(exc).__name__ in _DATA_ERRORS
    )


def _reason(exc: BaseException) -> str:
    first_line = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first_line}" if not isinstance(exc, JSONLSessionError) else first_line


async def import_all(
    url: str | Sequence[str],
    directory: SessionDirectory,
    *,
    progress: Progress | None = None,
    concurrency: int = CONCURRENCY,
    replace: bool = False,
) -> list[Outcome]:
    """Bring every session stored at ``url`` up to date in ``directory`` (one file per session id),
    with its sidecars and times when jsonl-session exported it there (``companion``).

    Several URLs (a sharded mirror's): each session is read from its home database
    (``shards.shard_of``), or, if only another one holds it, from the first that does.

    Example:
        >>> await import_all("redis://localhost:6379/0", SessionDirectory("sessions"))  # doctest: +SKIP
        [Outcome(session_id='convo_123', status='skipped', items=42, detail=''), ...]
    """
    if isinstance(url, str) or len(url) == 1:
        return await _import_from(
            url if isinstance(url, str) else url[0], directory, None, progress, concurrency, replace
        )
    urls = list(url)
    held: list[set[str]] = []
    for one_url in urls:
        async with open_backend(one_url) as backend:
            held.append(set((await backend.listing())[0]))
    chosen: list[set[str]] = [set() for _ in urls]
    for session_id in set().union(*held):
        home = shard_of(session_id, len(urls))
        source = (
            home if session_id in held[home] else next(i for i, ids in enumerate(held) if session_id in ids)
        )
        chosen[source].add(session_id)
    outcomes: list[Outcome] = []
    for one_url, only in zip(urls, chosen, strict=True):
        outcomes += await _import_from(one_url, directory, only, progress, concurrency, replace)
    return outcomes


async def _import_from(
    url: str,
    directory: SessionDirectory,
    only: set[str] | None,
    progress: Progress | None,
    concurrency: int,
    replace: bool,
) -> list[Outcome]:
    """:func:`import_all` from one backend, of the ids in ``only`` (None: all of them)."""
    async with open_backend(url) as backend:
        ids, foreign = await backend.listing()
        if only is not None:
            ids = [session_id for session_id in ids if session_id in only]
        known = await read_companions(backend)
        names, files = _listing(directory.directory)
        redis = backend.flavour == "redis"
        ahead = _ReadAhead(backend.handle, ids, max(1, concurrency // 2)) if redis else None

        async def one(session_id: str) -> Outcome:
            try:
                metadata: Metadata | None
                stored: int | None = None
                if ahead is not None:
                    items, metadata, stored = await ahead.read(session_id)
                else:
                    remote = backend.session(session_id)
                    try:
                        items = list(await remote.get_items())
                    finally:
                        backend.done(remote)
                    metadata = known.get(session_id) if known is not None else None
            except Exception as exc:  # noqa: BLE001  (sorted by _per_session: ours, or re-raised)
                failed = await _per_session(session_id, _raised(exc))
                return with_changes(failed, detail=f"{failed.detail}; not imported")
            local = directory.open(session_id)
            try:
                name = local.path.name
                listed = sidecar_files.present(name, names)
                small = stored is not None and stored <= INLINE_BYTES
                existed: bool | None = name in files
                if name not in names and not listed:  # new here: neither the file nor a sidecar
                    new = _import_new(local, items, metadata or {}, replace, small)
                    created = await _per_session(session_id, new)
                    if isinstance(created, Outcome):
                        return created
                    # The usual way: for a file made here whose lock a reader took at once, as
                    # new (``False``); for one made elsewhere since the listing, or already gone,
                    # by looking (``None``).
                    existed = created
                work = import_items(
                    local, items, metadata or {}, replace=replace, existed=existed, listed=listed, small=small
                )
                return await _per_session(session_id, work)
            finally:
                local.close()

        try:
            outcomes = await each(ids, one, progress, concurrency)
        finally:
            if ahead is not None:
                await ahead.close()
        return outcomes + [Outcome(shown, "failed", 0, why) for shown, why in foreign]


class _ReadAhead:
    """Redis sessions read ``size`` per round trip (``redis_store.read_sessions``), in the order
    of ``ids``, the next ``size`` as soon as the first of these is asked for: the import's
    writes never wait for a read, and the pipeline's fixed cost is paid once per ``size``
    sessions. Sessions read and not yet written: at most the writes in flight plus ``2 * size``."""

    def __init__(self, client: Any, ids: list[str], size: int) -> None:
        self._client, self._ids, self._size = client, ids, size
        self._at = {session_id: n for n, session_id in enumerate(ids)}
        self._chunks: dict[int, asyncio.Task[list[Any]]] = {}
        self._left: dict[int, int] = {}

    async def read(self, session_id: str) -> tuple[list[Any], Metadata, int]:
        """``session_id``'s ``redis_store.read_session``, raised as it would raise; each id once."""
        n = self._at[session_id]
        chunk = n // self._size
        self._start(chunk)
        self._start(chunk + 1)
        # Shielded: a caller cancelled must not cancel the read the chunk's others wait for.
        reads = await asyncio.shield(self._chunks[chunk])
        self._left[chunk] -= 1
        if not self._left[chunk]:  # every session of the chunk has its read: let it go
            del self._chunks[chunk], self._left[chunk]
        read = reads[n - chunk * self._size]
        if isinstance(read, Exception):
            raise read
        return cast("tuple[list[Any], Metadata, int]", read)

    def _start(self, chunk: int) -> None:
        first = chunk * self._size
        if chunk not in self._chunks and first < len(self._ids):
            ids = self._ids[first : first + self._size]
            self._chunks[chunk] = asyncio.ensure_future(redis_store.read_sessions(self._client, ids))
            self._left[chunk] = len(ids)

    async def close(self) -> None:
        """Cancel the reads nobody waits for (the run stopped): no task is left behind."""
        pending = list(self._chunks.values())
        self._chunks.clear()
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)


def _listing(folder: Path) -> tuple[frozenset[str], frozenset[str]]:
    """The names in ``folder`` as the run begins, and those of regular files (one ``scandir``,
    where a look at each session's file and sidecars cost seven system calls per session)."""
    try:
        with os.scandir(folder) as entries:
            found = [(entry.name, entry.is_file(follow_symlinks=False)) for entry in entries]
    except FileNotFoundError:
        return frozenset(), frozenset()
    return frozenset(name for name, _ in found), frozenset(name for name, regular in found if regular)


async def read_companions(backend: Backend, ids: list[str] | None = None) -> dict[str, Metadata] | None:
    """The companion entries of ``ids`` (or all) at once for SQL backends; None for Redis (read
    per session with ``redis_store.read_companion``)."""
    if backend.flavour == "sqlite":
        return await asyncio.to_thread(sqlite_store.read_companion, backend.handle, ids)
    if backend.flavour == "sqlalchemy":
        return await sql_store.read_companion(backend.handle, ids)
    return None


async def _raised(exc: BaseException) -> Outcome:
    raise exc


async def import_items(
    local: JSONLSession,
    items: list[Any],
    metadata: Metadata | None = None,
    *,
    replace: bool = False,
    existed: bool | None = True,
    private: bool = False,
    listed: frozenset[str] | None = None,
    small: bool = False,
) -> Outcome:
    """Bring ``local`` up to ``items`` in one write under its lock, with ``metadata``'s sidecars.

    Encoding, and the read, compare and write under the lock, run in worker threads; the
    lock is waited for on the loop. Items that cannot be written create no file. ``existed``:
    whether the file was there before (None: look, in the same worker as the encoding).
    ``private``: no longer used (the items' write went through a twin session when it was
    ``local``'s own); accepted for the callers that still pass it. ``listed``: the sidecar
    kinds a listing of the folder found when the run began (None: look for each); a sidecar
    the companion lacks and the listing did not find is not looked for
    (``companion.apply_locally``). ``small``: the items are few bytes (``INLINE_BYTES``),
    encoded on the loop.
    """
    del private
    metadata = metadata or {}
    try:
        look = (items, local.path if existed is None else None)
        if small and existed is not None:
            payload, there = _encode_and_stat(*look)
        else:
            payload, there = await worker_threads.run(_encode_and_stat, *look)
    except ValueError as exc:
        return _unwritable(local, items, exc)
    existed = there if existed is None else existed
    # A new file is created as add_items creates one (a durable create fsyncs its folder) and
    # the items appended to it (``fill_locked``): the SDK's own copy syncs as much, no more.
    flags = _Flags(replace, existed, listed)
    return await local.locked_in_thread(
        _import_locked, local, items, payload, metadata, flags, write=True, create=True
    )


async def _import_new(
    local: JSONLSession, items: list[Any], metadata: Metadata, replace: bool, small: bool
) -> Outcome | bool | None:
    """:func:`import_items` of a session of which the run's listing found neither the file nor
    a sidecar, in one hop to a worker (the usual way takes two: the create, then the locked
    work), which creates the file without unlinking sidecars (``core.safe_open.create_new``: six
    system calls fewer, each holding the folder's lock, that the SDK's own copy makes), locks
    it without waiting (``try_locked``) and writes it. Else nothing is written and the caller
    goes the usual way, which waits on the loop: False if the file was made here but another
    process holds its lock (a reader that saw it appear), None if it was there by now or is
    gone again.

    A sidecar that appears after the run's listing is left alone (no unlink): a writer of this
    session made it, or a namesake made and removed by hand within the run did, whose leftovers
    (a paused run, usage) the new session then finds, as if it were that namesake's.
    """
    try:
        payload = encode_items(items) if small else None
    except ValueError as exc:
        return _unwritable(local, items, exc)
    work = (local, items, payload, metadata, _Flags(replace, False, frozenset()))
    done: Outcome | bool | None = await worker_threads.run(_create_and_import, *work)
    return done


def _create_and_import(
    local: JSONLSession, items: list[Any], payload: bytes | None, metadata: Metadata, flags: _Flags
) -> Outcome | bool | None:
    """:func:`_import_new`'s worker."""
    if payload is None:
        try:
            payload = encode_items(items)
        except ValueError as exc:  # before any file is made
            return _unwritable(local, items, exc)
    path = local.path
    if not safe_open.create_new(path, durable=local.durable):
        return None
    if not payload and local.durable:  # no write will sync the new name (``fill_locked`` does)
        safe_open.fsync_directory(path.parent)
    try:
        with local.try_locked(write=True) as fd:
            if fd == BUSY:
                return False  # made here: the usual way takes it as new
            if fd == MISSING:
                return None  # removed as soon as made: the usual way looks
            return _import_locked(fd, local, items, payload, metadata, flags)
    finally:
        local.close()  # also here: a caller cancelled meanwhile closed it before this opened it


def _unwritable(local: JSONLSession, items: list[Any], error: ValueError) -> Outcome:
    """The outcome of a session whose items no line can hold (found before any file is made)."""
    return Outcome(local.session_id, "failed", len(items), f"{error}; nothing imported")


def _encode_and_stat(items: list[Any], path: Path | None) -> tuple[bytes, bool]:
    """The items encoded (about a millisecond per 100 items: not for the loop, unless few) and
    whether ``path`` is a session file (if given).

    Raises ValueError if the items cannot be written exactly.
    """
    payload = encode_items(items)
    found = False
    if path is not None:
        try:
            found = stat.S_ISREG(os.lstat(path).st_mode)  # as SessionDirectory.exists: a symlink is not one
        except FileNotFoundError:
            pass
    return payload, found


class _Flags(NamedTuple):
    replace: bool
    existed: bool
    listed: frozenset[str] | None


def _import_locked(
    fd: int, local: JSONLSession, items: list[Any], payload: bytes, metadata: Metadata, flags: _Flags
) -> Outcome:
    """``local``'s rewrite (as ``JSONLSession.rewriting``) to ``items``, already encoded as ``payload``."""
    replace, existed, listed = flags
    info = os.fstat(fd)  # the lock is held: its size and mode stay what they are until we write
    held = reads.read_items(fd, local.path) if info.st_size else []
    decided = decide(local.session_id, items, held, replace=replace)
    if not decided.write:
        return decided.outcome
    outcome = decided.outcome
    if outcome.status == "skipped" and not items and not existed:
        outcome = Outcome(local.session_id, "copied", 0)  # an empty session, created now
    written = outcome.status != "skipped"
    # The file gets its recorded time back only if it now holds exactly the items exported:
    # the SHA-256 that says so is taken here, in the worker (hashlib lets go of the GIL), not
    # on the loop, where it was a twelfth of an import's time.
    recorded = metadata.get(companion.FILE)
    as_exported = recorded is not None and recorded.content == companion.items_digest(payload, len(items))
    # When the companion's ``.times`` is the one the file gets, the items' write stamps none
    # of its own first (written, then replaced at once).
    stamp = not (as_exported and companion.FILE + TIMES in metadata)
    if written:
        companion.set_mode(fd, metadata, info.st_mode)
    rewrite = payload != encoding_or_none(held)  # bytes: 1 vs 1.0 and key order count too
    if rewrite and not held and not info.st_size:
        local.fill_locked(fd, payload, stamp=stamp)  # nothing there (a new session): as add_items
    elif rewrite:
        local.replace_locked(fd, payload, stamp=stamp)
    # Still under the lock, after the items (whose rewrite rewrites ``.times``): the sidecars.
    # Up to date: only the sidecars this folder lacks are added (its own may be newer).
    wrote = companion.apply_locally(
        local.path,
        fd,
        metadata,
        durable=local.durable,
        only_missing=not written,
        keep_grown=written and not as_exported,
        listed=listed,
    )
    own = (companion.FILE,) if written and as_exported else ()
    companion.restore_times(local.path, metadata, (*own, *wrote))
    return outcome


def _report(progress: Progress | None, done: int, total: int) -> None:
    if progress is not None:
        progress(done, total)
