"""The one delivery state machine of every watch, and its blocking face.

:class:`Delivery` owns the follower (what the files hold) and the wake-ups (when to look),
and hands out batches of changes: the replay first, then one batch per wake-up, and when
stopped by the user's event whatever the files still hold. It blocks; the blocking
iterator runs it in the caller's thread, the asynchronous one (``aio.py``) in a thread of
its own. Both stop when ``closing`` is set.
"""

from __future__ import annotations

import collections
import threading
import time
from types import TracebackType
from typing import TYPE_CHECKING

from ..core.locking import backoff_delays
from .changes import Change
from .follower import Follower
from .options import StopFlag, WatchOptions
from .wakeups import Wakeups

if TYPE_CHECKING:
    from typing_extensions import Self


class _Either:
    """A stop flag that is set when any of its flags is (handed to watchfiles as one event)."""

    def __init__(self, *flags: StopFlag | None) -> None:
        self.flags = [flag for flag in flags if flag is not None]

    def is_set(self) -> bool:
        return any(flag.is_set() for flag in self.flags)


class Delivery:
    """States: not started -> following -> finished (stopped, closed, or an error raised)."""

    def __init__(self, follower: Follower, options: WatchOptions) -> None:
        self.follower = follower
        self.options = options
        self.closing = threading.Event()
        self.stop = _Either(self.closing, options.stop_event)
        self.started = False
        self.finished = False
        self._wakeups: Wakeups | None = None

    def next_batch(self) -> list[Change]:
        """The next changes (possibly none); blocks until a wake-up. Sets ``finished`` at the end."""
        follower = self.follower
        if not self.started:
            self.started = True
            self._wakeups = Wakeups(follower.directory, follower.wants, self.options)  # watch, then read
            return follower.start(self.options.start)
        if follower.pending:  # another process holds a lock: try again shortly
            return self._wait_for_locks()
        assert self._wakeups is not None
        wake = self._wakeups.wait(self.stop)
        if wake == "tick":
            return follower.tick(periodic=True)
        if wake == "recheck":
            return follower.tick()
        if wake == "signal":
            raise KeyboardInterrupt
        if wake == "stop":
            self.finished = True
            if self.closing.is_set():
                return []
            # The user's stop event: deliver what the files hold now, then end.
            return follower.tick(thorough=True) + self._wait_for_locks()
        return follower.refresh(wake)

    def catch_up(self) -> list[Change]:
        """Look at every file now, as a wake-up would, without waiting (tests, own wake-ups)."""
        if not self.started:
            self.started = True
            return self.follower.start(self.options.start)
        return self.follower.tick(thorough=True) + self._wait_for_locks()

    def release(self) -> None:
        """Stop watching and let go of every resource (idempotent)."""
        self.finished = True
        self.closing.set()
        if self._wakeups is not None:
            self._wakeups.close()
            self._wakeups = None
        self.follower.close()

    def _wait_for_locks(self) -> list[Change]:
        changes: list[Change] = []
        delays = backoff_delays()
        while self.follower.pending and not self.closing.is_set():
            time.sleep(next(delays))
            changes.extend(self.follower.refresh(()))
        return changes


class SyncWatch:
    """Iterator and context manager running in the caller's thread (no thread of its own)."""

    def __init__(self, delivery: Delivery) -> None:
        self._delivery = delivery
        self._queue: collections.deque[Change] = collections.deque()
        self._busy = threading.Lock()  # held while __next__ runs; close() from another thread waits

    def __iter__(self) -> Self:
        return self

    def __next__(self) -> Change:
        delivery = self._delivery
        with self._busy:
            try:
                while not self._queue:
                    if delivery.finished or delivery.closing.is_set():
                        delivery.release()
                        raise StopIteration
                    self._queue.extend(delivery.next_batch())
                return self._queue.popleft()
            except KeyboardInterrupt:
                delivery.release()
                if delivery.options.raise_interrupt:
                    raise
                raise StopIteration from None
            except StopIteration:
                raise
            except BaseException:
                delivery.release()
                raise

    def __enter__(self) -> Self:
        with self._busy:
            if not self._delivery.started:
                try:
                    self._queue.extend(self._delivery.next_batch())
                except BaseException:
                    self._delivery.release()
                    raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def catch_up(self) -> list[Change]:
        """Every change up to now, without waiting for an event (see :meth:`Delivery.catch_up`).

        For tests that step a watch deterministically, and for callers with wake-ups of their own.
        """
        with self._busy:
            changes = [*self._queue, *self._delivery.catch_up()]
            self._queue.clear()
            return changes

    def close(self) -> None:
        """Stop now (from any thread); the iteration ends and resources are released."""
        self._delivery.closing.set()
        if self._busy.acquire(timeout=5):  # another thread's __next__ ends within one step
            try:
                self._delivery.release()
            finally:
                self._busy.release()

    def __del__(self) -> None:
        self._delivery.closing.set()


class SessionWatchSync(SyncWatch):
    """What :func:`~jsonl_session.watch.watch_session_sync` returns: ``for change in watch``."""


class DirectoryWatchSync(SyncWatch):
    """What :func:`~jsonl_session.watch.watch_directory_sync` returns: ``for change in watch``."""
