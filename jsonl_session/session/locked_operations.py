"""The locked steps every part of ``JSONLSession`` shares, and the internal interface others use.

``JSONLSession`` (``store``: the SDK's four methods, their blocking twins, the options) adds
three sibling mixins over ``LockedOperations``: ``history_methods``, ``metadata_methods`` and
``timestamps``. Here are the steps they share: wait for the lock (on the loop for async
callers), read, rewrite, replace. ``compaction``, ``routing``, ``folder``
(``SessionDirectory.fork``), ``transfer.all_sessions``, ``transfer.single`` and
``tools.resend_fix`` call these, and a few methods of the mixins, on a session too; such methods
are named without a leading underscore, so that no other module calls a private method of
``JSONLSession``, and are internal all the same: no stability promise, not in the API reference
(docs/api.md filters them out).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ..core import reads, storage
from ..core.async_locking import AsyncLocked
from ..core.codec import encode_items, encoding_or_none, identical
from ..core.locking import MISSING, FileHandle, Locked
from ..core.times_log import TimesLog
from ..history.turns import newest_turns

T = TypeVar("T")


class LockedOperations:
    """Locked reads and rewrites of one session file, for the session's own layers."""

    path: Path
    turn_limit: int | None
    _handle: FileHandle
    _lock_timeout: float
    _times: TimesLog | None

    @property
    def durable(self) -> bool:  # pragma: no cover - JSONLSession's
        raise NotImplementedError

    @property
    def lock_timeout(self) -> float:  # pragma: no cover - JSONLSession's
        raise NotImplementedError

    def _resolve_limit(self, limit: int | None) -> int | None:  # pragma: no cover - JSONLSession's
        raise NotImplementedError

    def locked(self, *, write: bool, create: bool) -> Locked:
        return self._handle.locked(write=write, create=create, timeout=self._lock_timeout)

    def try_locked(self, *, write: bool, create: bool = False) -> Locked:
        """:meth:`locked` that never waits: the block gets ``BUSY`` when the lock is held (for a
        worker thread, which must not wait: its caller then waits on the loop)."""
        return self._handle.try_locked(write=write, create=create)

    def locked_async(self, *, write: bool, create: bool) -> AsyncLocked:
        # Reads yield after the unlock, durable writes in their worker's hop; writes that stay
        # on the loop yield first, so that a caller cancelled there knows nothing was done.
        # The timeout was checked when it was set.
        yield_first = write and not self.durable
        return AsyncLocked(self._handle, write, create, self._lock_timeout, yield_first)

    async def locked_in_thread(
        self, function: Callable[..., T], *args: Any, write: bool, create: bool = False
    ) -> T:
        """Wait for the lock on the loop, then run ``function(fd, *args)`` in a worker thread, which unlocks.

        For the async twins of blocking methods: waiting for another process sleeps on the
        loop instead of parking a thread of its executor for up to ``lock_timeout``, and work
        that has started finishes, and unlocks, even if the caller is cancelled.
        """
        lock = AsyncLocked(self._handle, write, create, self._lock_timeout, yield_first=False)
        async with lock as fd:
            if fd == MISSING:  # no file, so nothing is locked: the worker has nothing to unlock
                from ..core import (
                    worker_threads as workers,  # here, not at import time: the CLI never needs threads
                )

                result: T = await workers.run(function, fd, *args)
                return result
            return await lock.finish_in_thread(function, fd, *args)

    def read_locked(self, fd: int, limit: int | None) -> list[Any]:
        if fd == MISSING:
            return []
        if limit is None and self.turn_limit is not None:
            return newest_turns(fd, self.path, self.turn_limit, size=self._handle.size)
        return reads.read_items(fd, self.path, limit, size=self._handle.size)

    @contextmanager
    def rewriting(self, fd: int) -> Iterator[Draft]:
        """:meth:`rewrite` once the write lock is held (the compaction hooks take it on the loop)."""
        original = reads.read_items(fd, self.path)
        # Parsing again is the copy that in-place edits may change: cheaper than
        # copy.deepcopy, which also recursed (RecursionError on a 1,000-deep line).
        draft = Draft(items=reads.read_items(fd, self.path))
        yield draft
        before = encoding_or_none(original)
        try:
            payload = encode_items(draft.items)
        except ValueError:
            if before is None and identical(draft.items, original):
                return  # unchanged, though it cannot be written (huge ints, deep nesting)
            raise
        if payload != before:  # compare bytes: 1 vs 1.0 and key order count too
            self.replace_locked(fd, payload)

    async def replace_items(self, items: list[Any]) -> None:
        """Atomically replace the whole history (``replace_items_sync``, async); encoded in a thread."""
        await self.locked_in_thread(self.encode_and_replace_locked, items, write=True, create=True)

    def encode_and_replace_locked(self, fd: int, items: list[Any]) -> None:
        self.replace_locked(fd, encode_items(items))

    def fill_locked(self, fd: int, payload: bytes, *, stamp: bool = True) -> None:
        """:meth:`replace_locked` for a file that holds nothing (no line, no torn tail): the
        items are appended as ``add_items`` appends them, one write and its ``fdatasync``
        (if durable), without the temporary file, rename and new file id of a rewrite.

        Readers that lock see none of it or all of it. A ``kill -9`` in the middle of the write
        can leave its first items, as it can for any ``add_items``; a copy run again completes
        the file (``transfer.compare``: it is behind). ``stamp=False``: see :meth:`replace_locked`.
        """
        self._handle.sync_folder_once()
        storage.write_at_end(fd, payload, 0, durable=self.durable)
        times = self._times
        if times is not None:  # anew: a sidecar a hand-made empty file kept describes nothing here
            if stamp:
                times.rewrite(b"", payload)
            else:
                times.close()

    def replace_locked(self, fd: int, payload: bytes, *, stamp: bool = True) -> None:
        """Replace the items with ``payload`` (atomically: a rename), their ``.times`` rewritten
        after them. ``stamp=False``: the caller writes the ``.times`` itself, under the same
        lock (an import restores the one exported with these very items), so it is not
        written here first; the log's descriptor is closed, as a rewrite closes it."""
        # A crashed writer's partial line is not an item, so it is not in `payload`: save it
        # to the sidecar first rather than let the rename throw it away.
        self._handle.replaced()  # the next call opens the new file
        storage.repair_tail(fd, self.path, durable=self.durable)
        times = self._times if stamp else None
        before = b"" if times is None else reads.read_range(fd, 0, os.fstat(fd).st_size)
        storage.replace(fd, self.path, payload, durable=self.durable)
        if times is not None:  # after the items: a crash in between leaves the old times, which still match
            times.rewrite(before, payload)
        elif self._times is not None:
            self._times.close()


@dataclass
class Draft:
    """The items being edited inside :meth:`JSONLSession.rewrite`; assign or mutate ``items``."""

    items: list[Any] = field(default_factory=list)
