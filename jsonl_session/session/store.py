"""``JSONLSession``: an Agents SDK ``Session`` whose history is one JSONL file.

Each operation locks the file, checks that the path still names the file it holds, does
its work and unlocks (see ``locking``). No items are cached between calls, so a file
replaced by an editor or ``git checkout`` is seen by the next call, and one object can be
shared by threads that each run their own event loop (``Runner.run_sync``): no loop-bound
state is created in ``__init__``.

The async methods never hold the event loop for more than about a millisecond of file
work: each lets other tasks run at least once, tries the lock inline (and only when someone
else holds it waits with ``asyncio.sleep``), does cheap work inline (an append's ``write``, a
``limit`` read of a few items, anything on a file of a few tens of KB) and hands the rest to
a worker thread: every ``fdatasync``, full reads, pops and clears of durable sessions. The
worker releases the lock when it is done, whether or not its caller still waits, so a
cancelled caller never leaves a write half-done or the lock held
(``AsyncLocked.finish_in_thread``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..core import reads, storage
from ..core.async_locking import YIELD_ONCE, AsyncLocked
from ..core.codec import encode_items
from ..core.item_times import encode_lines
from ..core.locking import DEFAULT_LOCK_TIMEOUT, MISSING, FileHandle, check_lock_timeout
from ..core.names import DEFAULT_DIRECTORY, TORN_SUFFIX, filename_for
from ..core.times_log import TimesLog
from ..history import paused_runs
from . import compaction
from .history_methods import HistoryMethods
from .locked_operations import Draft
from .metadata_methods import MetadataMethods
from .routing import RouteFunction, Router
from .settings import as_sdk_settings, coerce_settings
from .timestamps import TimestampMethods

if TYPE_CHECKING:
    from agents.items import TResponseInputItem  # noqa: F401  (for readers of the types)

__all__ = ["DEFAULT_DIRECTORY", "Draft", "JSONLSession", "check_lock_timeout"]

T = TypeVar("T")

# Inline on the loop below these sizes (parsing ~64 KB of JSONL takes well under 1 ms); a
# ``limit`` read costs about limit x line size, so a few dozen items stay inline too.
_INLINE_FILE_BYTES = 64 * 1024
_INLINE_LIMIT = 100
_INLINE_PAYLOAD_BYTES = 256 * 1024


class JSONLSession(HistoryMethods, MetadataMethods, TimestampMethods):
    """Conversation history for the Agents SDK, stored as ``<directory>/<session_id>.jsonl``.

    One class, its methods in sibling files of :mod:`jsonl_session.session`: ``store`` (here)
    the SDK's four methods, their blocking twins, ``rewrite`` and the options;
    ``history_methods`` turns, ``rewind``, lineage, usage and paused runs; ``metadata_methods``
    the title, tags and owner; ``timestamps`` ``get_items_with_times`` and the ``timestamps``
    switch; ``locked_operations`` the locked steps they all share (internal).

    Args:
        session_id: Any non-empty string. Ids made of letters, digits, ``.``, ``_`` and
            ``-`` are the file name; others are percent-encoded (see ``core.names``).
        directory: Folder of session files, created (0700) on first write.
        session_settings: The SDK's ``SessionSettings`` or a dict such as ``{"limit": 50}``;
            its ``limit`` applies when ``get_items()`` is called without one. Read back, it is
            the SDK's ``SessionSettings`` whenever ``agents`` is imported.
        durable: fsync every write (default). ``False`` trades crash-safety for speed,
            e.g. in bulk imports: a power loss may then lose the newest writes.
        lock_timeout: Seconds to wait for another process's lock before raising
            :class:`~jsonl_session.LockTimeout`.
        turn_limit: When no item limit applies, ``get_items()`` returns the newest this
            many whole turns (a user message and what follows it), so the history never
            starts with a tool output cut from its call. Not together with a settings limit.
        timestamps: Record when each item was added, beside the items (``<file>.jsonl.times``,
            see :meth:`get_items_with_times_sync`); the items' lines are never touched. On by
            default; ``False`` turns it off.
        route: Pick this run's folder and owner from its run context, so one object serves many
            users, each kept apart: a callable taking the SDK's ``RunContextWrapper`` and
            returning a :class:`~jsonl_session.Route` (or None for this session's own file).
            The Runner (0.24+) passes the wrapper on every call; calls without one use this
            session's own file. See :mod:`jsonl_session.session.routing`.

    Example:
        >>> from agents import Agent, Runner                     # doctest: +SKIP
        >>> session = JSONLSession("convo_123")                  # ./sessions/convo_123.jsonl
        >>> await Runner.run(agent, "Hi", session=session)       # doctest: +SKIP
        >>> session.add_items_sync([{"role": "user", "content": "Hi"}])
        >>> session.get_items_sync(limit=1)
        [{'role': 'user', 'content': 'Hi'}]
    """

    def __init__(
        self,
        session_id: str,
        directory: str | os.PathLike[str] = DEFAULT_DIRECTORY,
        *,
        session_settings: Any = None,
        durable: bool = True,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        turn_limit: int | None = None,
        timestamps: bool | None = None,
        route: RouteFunction | None = None,
    ) -> None:
        self.session_id = session_id
        self.directory = Path(directory)
        self.path = self.directory / filename_for(session_id)
        self._session_settings: Any = None
        self.session_settings = session_settings
        self._handle = FileHandle(self.path, durable=durable)
        # On by default: it costs little enough (the bounds: docs/benchmarks.md#timestamps).
        self._times = TimesLog(self.path) if timestamps is None or timestamps else None
        self.lock_timeout = lock_timeout
        if turn_limit is not None:
            if isinstance(turn_limit, bool) or not isinstance(turn_limit, int) or turn_limit < 0:
                raise ValueError(f"turn_limit must be a non-negative int or None, not {turn_limit!r}")
            if self._resolve_limit(None) is not None:  # a negative settings limit is no limit
                raise ValueError("give turn_limit or a session_settings limit, not both")
        self.turn_limit = turn_limit
        self._router = None if route is None else Router(route, self._routed_twin, self.directory)

    def _routed_twin(self, directory: Path) -> JSONLSession:
        """This session in another folder, with the same options (the router's sessions)."""
        return JSONLSession(
            self.session_id,
            directory,
            session_settings=self._session_settings,
            durable=self.durable,
            lock_timeout=self._lock_timeout,
            turn_limit=self.turn_limit,
            timestamps=self._times is not None,
        )

    @property
    def durable(self) -> bool:
        """fsync every write; kept by the file handle, which fsyncs on its side too (creation, the folder)."""
        return self._handle.durable

    @durable.setter
    def durable(self, value: bool) -> None:
        self._handle.durable = bool(value)

    @property
    def lock_timeout(self) -> float:
        """Seconds to wait for another process's lock before ``jsonl_session.LockTimeout`` (never forever)."""
        return self._lock_timeout

    @lock_timeout.setter
    def lock_timeout(self, value: float) -> None:
        self._lock_timeout = check_lock_timeout(value)

    @property
    def session_settings(self) -> Any:
        """The SDK's ``SessionSettings`` once ``agents`` is imported; ours before (see ``settings``).

        The conversion happens on read, so a session made before ``import agents`` still hands
        the SDK its own type (``EncryptedSession`` and the Runner accept nothing else).
        """
        settings = as_sdk_settings(self._session_settings)
        self._session_settings = settings  # converted once: the same object on every read
        return settings

    @session_settings.setter
    def session_settings(self, value: Any) -> None:
        self._session_settings = coerce_settings(value)

    @property
    def sidecar_path(self) -> Path:
        """Where partial lines left by interrupted writers are moved (``<file>.torn``)."""
        return self.path.with_name(self.path.name + TORN_SUFFIX)

    def __repr__(self) -> str:
        return f"JSONLSession({self.session_id!r}, path={str(self.path)!r})"

    # -- the Agents SDK Session protocol ---------------------------------------------

    async def get_items(self, limit: int | None = None, *, wrapper: Any = None) -> list[Any]:
        """The newest ``limit`` items, oldest first; all when ``limit`` and the settings' limit are None.

        A negative ``limit`` (or settings limit) means no limit, as in the SDK.

        Without an item limit, ``turn_limit`` (if set) returns the newest whole turns instead.
        Costs time and memory proportional to what is returned, not to the file's size. Large
        reads run in a worker thread, so the event loop keeps serving other tasks.

        ``wrapper`` is the run context the Runner passes (see ``route``); each of the four
        methods takes it.
        """
        if wrapper is not None and self._router is not None:
            return await self._router.get_items(wrapper, limit)
        limit = self._resolve_limit(limit)
        if limit == 0:
            await _yield_once()
            return []
        lock = self.locked_async(write=False, create=False)
        async with lock as fd:
            if fd == MISSING:
                return []
            if self._handle.size <= _INLINE_FILE_BYTES or (limit is not None and limit <= _INLINE_LIMIT):
                return self.read_locked(fd, limit)
            return await lock.finish_in_thread(self.read_locked, fd, limit)

    async def add_items(self, items: Iterable[Any], *, wrapper: Any = None) -> None:
        """Append items, one line each, in a single write: readers see all of them or none.

        The ``write`` is done on the loop (it is cheap); the ``fdatasync`` in a worker
        thread, which then unlocks. Once the write has started, cancelling the caller
        does not stop it.
        """
        if wrapper is not None and self._router is not None:
            return await self._router.add_items(wrapper, items)
        times = self._times  # when each item was added: one more write (core/item_times.py)
        # Refuse bad items before touching the file.
        if times is None or (type(items) is list and len(items) == 1):
            payload, lines = encode_items(items), None
        else:
            payload, lines = encode_lines(items)  # the lines apart, for their record
        if not payload:
            return await _yield_once()
        handle = self._handle
        durable = handle.durable
        if not durable and len(payload) <= _INLINE_PAYLOAD_BYTES:
            # The Runner calls this once per item it saves, and in a busy process each Python
            # call costs about 1 µs (benchmarks/run.py): after the one yield (cancelled there,
            # nothing was written), the whole block is one call when the lock is free.
            await YIELD_ONCE
            if handle.try_append(payload, lines, None if times is None else times.stamp):
                return
        # ``locked_async`` spelled out, for the same reason.
        lock = AsyncLocked(handle, True, True, self._lock_timeout, not durable)
        async with lock as fd:
            size = handle.size
            if (
                len(payload) > _INLINE_PAYLOAD_BYTES
                or (size and os.pread(fd, 1, size - 1) != b"\n")
                or (handle.folder_unsynced and durable)
            ):
                # Big payloads; a last line without its newline: a hand edit to repair, or a
                # torn tail to move aside first (which fsyncs a sidecar); and the first durable
                # write to a file made elsewhere, which fsyncs its folder first.
                await lock.finish_in_thread(self._append, fd, payload, size, lines)
            else:
                written = os.write(fd, payload)  # storage.write_at_end, written out (see above)
                if written < len(payload):
                    storage.write_rest(fd, payload, written, size)
                if durable:
                    if times is None:
                        await lock.finish_in_thread(storage.sync_or_undo, fd, size)
                    else:
                        await lock.finish_in_thread(times.sync_and_stamp, fd, size, payload, lines)
                elif times is not None:
                    times.stamp(payload, lines, size)

    async def pop_item(self, *, wrapper: Any = None) -> Any:
        """Remove and return the newest item (None when empty) by truncating its line."""
        if wrapper is not None and self._router is not None:
            return await self._router.pop_item(wrapper)
        lock = self.locked_async(write=True, create=False)
        async with lock as fd:
            if fd == MISSING or not self.durable:
                return self._pop(fd)
            handle = self._handle
            if not handle.folder_unsynced:
                # The common pop is read and marked on the loop, and the cut, its sync and then the
                # ``.times`` record go to the worker: a worker's calls just after it wakes cost
                # several times what the loop's do, and the first change after a journal commit
                # starts the next transaction, which costs the loop's next write ~1 µs if the record
                # was blanked before the sync (docs/benchmarks.md, "pop_item, durable").
                newest = storage.take_newest(fd, self.path, handle.size, handle.bump_mark)
                if newest is not None:
                    item, size, removed = newest
                    return await lock.finish_in_thread(self._cut_popped, fd, item, size, removed)
            return await lock.finish_in_thread(self._pop, fd)

    def _cut_popped(self, fd: int, item: Any, size: int, removed: bytes) -> Any:
        """The worker's half of a durable pop read on the loop (``removed``: its line and newline):
        the cut and its sync, then the ``.times`` upkeep, so a failed cut leaves the record as it
        was, unless the line could not be put back either."""
        times = self._times
        storage.truncate(
            fd, size, durable=True, removed=removed, lost=None if times is None else times.forget_popped
        )
        if times is not None:
            times.forget_popped(removed[:-1], size, fd)
        self._handle.left_as(size)
        return item

    async def clear_session(self, *, wrapper: Any = None) -> None:
        """Remove every item. The file stays, empty, so followers and git see the clear.

        A paused run (see :meth:`save_run_state`) ends with it; the usage log stays: tokens
        once spent still count in ``get_session_usage`` and ``jsonl-session stats``.
        """
        if wrapper is not None and self._router is not None:
            return await self._router.clear_session(wrapper)
        lock = self.locked_async(write=True, create=False)
        async with lock as fd:
            if fd == MISSING or not self.durable:
                return self._clear(fd)
            return await lock.finish_in_thread(self._clear, fd)

    # -- the same, for scripts, threads and test fixtures ------------------------------

    def get_items_sync(self, limit: int | None = None) -> list[Any]:
        """Blocking twin of :meth:`get_items`."""
        limit = self._resolve_limit(limit)
        if limit == 0:
            return []
        with self.locked(write=False, create=False) as fd:
            return self.read_locked(fd, limit)

    def add_items_sync(self, items: Iterable[Any]) -> None:
        """Blocking twin of :meth:`add_items`."""
        payload, lines = (encode_items(items), None) if self._times is None else encode_lines(items)
        if payload:
            with self.locked(write=True, create=True) as fd:
                self._append(fd, payload, self._handle.size, lines)

    def pop_item_sync(self) -> Any:
        """Blocking twin of :meth:`pop_item`."""
        with self.locked(write=True, create=False) as fd:
            return self._pop(fd)

    def clear_session_sync(self) -> None:
        """Blocking twin of :meth:`clear_session`."""
        with self.locked(write=True, create=False) as fd:
            self._clear(fd)

    def count_items_sync(self) -> int:
        """How many items the session holds, counted by streaming the file: memory stays flat.

        Lines are counted, not parsed (``check`` finds bad ones), so this is what ``ls``
        shows; ``jsonl-session show -n`` numbers the newest items with it.

        Example:
            >>> session.count_items_sync()                        # doctest: +SKIP
            42
        """
        with self.locked(write=False, create=False) as fd:
            if fd == MISSING:
                return 0
            return reads.count_items(fd)

    # -- deliberate edits ----------------------------------------------------------------

    @contextmanager
    def rewrite(self) -> Iterator[Draft]:
        """Hold the write lock while you change the items; replace the file atomically on exit.

        Other processes wait (up to their ``lock_timeout``) instead of racing the edit. If
        the block raises, or leaves ``Draft.items`` unchanged, the file is not touched.

        Example:
            >>> with session.rewrite() as draft:                  # doctest: +SKIP
            ...     draft.items = [i for i in draft.items if i.get("role") != "system"]
        """
        with self.locked(write=True, create=True) as fd, self.rewriting(fd) as draft:
            yield draft

    def replace_items_sync(self, items: Iterable[Any]) -> None:
        """Atomically replace the whole history with ``items`` (one rename, under the lock)."""
        payload = encode_items(items)
        with self.locked(write=True, create=True) as fd:
            self.replace_locked(fd, payload)

    def repair_sync(self) -> bytes | None:
        """Move a torn last line to :attr:`sidecar_path` now; return the bytes moved, if any."""
        with self.locked(write=True, create=False) as fd:
            if fd == MISSING:
                return None
            self._handle.sync_folder_once()
            return storage.repair_tail(fd, self.path, durable=self.durable)

    # -- hooks the SDK's compaction wrapper looks for (see ``compaction``) ------------------

    async def _atomic_replace_items(self, items: list[Any]) -> bool:
        """Replace the whole history in one rename (the SDK would otherwise clear, then add).

        Subclasses get False (the SDK then clears and adds): a subclass may store items in
        its own way, which a rename of the file would bypass.
        """
        if type(self) is not JSONLSession:
            return False
        self._refuse_compaction_when_routed()
        return await compaction.atomic_replace(self, items)

    async def _get_compaction_snapshot(self, limit: int, *, prune_prefix: Any = None) -> Any:
        """The newest ``limit`` items and a ``replace_suffix`` that swaps them in one rename.

        None for subclasses (the SDK then needs the whole history), as for ``_atomic_replace_items``.
        """
        if type(self) is not JSONLSession:
            return None
        self._refuse_compaction_when_routed()
        return await compaction.snapshot(self, limit, prune_prefix)

    def _refuse_compaction_when_routed(self) -> None:
        """The SDK's compaction wrapper calls these hooks without the run context, so a routed
        session cannot know whose file to compact: refuse rather than rewrite the wrong one."""
        if self._router is not None:
            raise TypeError(
                "a JSONLSession with a route cannot be compacted by OpenAIResponsesCompactionSession: "
                "its hooks get no run context; compact each user's session without a route"
            )

    # -- following a live conversation (see ``watch``) -------------------------------------

    def watch(self, **options: Any) -> Any:
        """Follow this session live: ``async for change in session.watch(start="now")``.

        See :func:`jsonl_session.watch.watch_session` for the options and the changes yielded.
        """
        from ..watch import watch_session

        return watch_session(self, **options)

    def watch_sync(self, **options: Any) -> Any:
        """Blocking twin of :meth:`watch`: ``for change in session.watch_sync(...)``."""
        from ..watch import watch_session_sync

        return watch_session_sync(self, **options)

    def close(self) -> None:
        """Close the file descriptors this object keeps open (they reopen if used again); those
        a worker still writes through (a durable call whose caller stopped waiting) when it is done."""
        self._handle.close(None if self._times is None else self._times.close)
        if self._router is not None:
            self._router.close()

    # -- one implementation behind both faces -------------------------------------------

    def _resolve_limit(self, limit: int | None) -> int | None:
        """The item limit of a read: the explicit one, else the settings'; None for no limit.

        A negative limit means no limit, as in the SDK (``SQLiteSession`` hands it to SQLite's
        ``LIMIT``, where a negative count is unlimited), so it overrides a settings limit.
        """
        if limit is None:
            limit = getattr(self._session_settings, "limit", None)
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise ValueError(f"limit must be an int (negative: no limit) or None, not {limit!r}")
        return None if limit is None or limit < 0 else limit

    # Each runs under the lock its caller holds (sync: this thread; async: the loop or a worker).

    # The first durable change through each opened file also makes its name durable
    # (``FileHandle.sync_folder_once``): async callers run these in a worker thread.

    def _append(self, fd: int, payload: bytes, size: int, lines: list[bytes] | None) -> None:
        self._handle.sync_folder_once()
        storage.append(fd, self.path, payload, durable=self.durable, size=size)
        if self._times is not None:
            self._times.stamp(payload, lines, size)

    def _pop(self, fd: int) -> Any:
        if fd == MISSING:
            return None
        handle = self._handle
        durable = handle.durable  # not the property: a durable pop runs this in a cold worker thread
        if handle.folder_unsynced:
            handle.sync_folder_once()
        times = self._times
        item, size, line = storage.pop(
            fd,
            self.path,
            durable=durable,
            size=handle.size,
            bump=handle.bump_mark,
            lost=None if times is None else times.forget_popped,
        )
        if item is not None:
            if times is not None:
                times.forget_popped(line, size, fd, durable=durable)
            handle.left_as(size)  # cut at a line's start: the next append need not look
        return item

    def _clear(self, fd: int) -> None:
        if fd != MISSING:
            handle = self._handle
            handle.sync_folder_once()
            storage.clear(fd, self.path, durable=handle.durable, size=handle.size, bump=handle.bump_mark)
            if self._times is not None:
                self._times.clear()
            # A paused run resumes turns that are gone now (as after ``rewind``); the usage
            # log is a ledger of tokens spent, and stays (docs/history.md).
            paused_runs.clear(self.path, durable=self.durable)


async def _yield_once() -> None:
    """Let other tasks run once: every async call yields to the loop, even one with nothing to do."""
    import asyncio  # not at import time: the CLI starts without asyncio

    await asyncio.sleep(0)
