"""The asynchronous face of the one delivery state machine.

A small thread runs :class:`~jsonl_session.watch.delivery.Delivery` (the waiting, the lock
retries and the file reads, so the event loop never blocks on them) and hands each batch of
changes to the loop. The thread holds no reference to the watch object, so dropping the
watch stops it; leaving ``async with``, ``aclose()`` or a set ``stop_event`` stop it within
one step.
"""

from __future__ import annotations

import asyncio
import collections
import threading
import time
from types import TracebackType
from typing import TYPE_CHECKING

from .changes import Change
from .delivery import Delivery

if TYPE_CHECKING:
    from typing_extensions import Self

_Batch = list[Change] | BaseException | None  # None: the delivery finished


class _Mailbox:
    """Batches the thread has produced and the loop has not taken yet."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.ready = asyncio.Event()
        self.lock = threading.Lock()
        self.batches: collections.deque[_Batch] = collections.deque()

    def post(self, batch: _Batch) -> bool:
        """Hand a batch to the loop; False when the loop is gone (nobody is listening)."""
        with self.lock:
            self.batches.append(batch)
        try:
            self.loop.call_soon_threadsafe(self.ready.set)
        except RuntimeError:  # the loop is closed
            return False
        return True

    def take(self) -> list[_Batch]:
        with self.lock:
            taken = list(self.batches)
            self.batches.clear()
            self.ready.clear()
            return taken


def _run(delivery: Delivery, mailbox: _Mailbox, done: threading.Event) -> None:
    """The thread: produce batches until the delivery finishes, fails or is closed."""
    first = True  # the replay is posted even when empty: ``async with`` waits for it
    try:
        while not delivery.finished and not delivery.closing.is_set():
            try:
                batch: _Batch = delivery.next_batch()
            except BaseException as exc:  # noqa: BLE001  (handed to the loop, raised there)
                mailbox.post(exc)
                return
            if (batch or first) and not mailbox.post(batch):
                return
            first = False
        mailbox.post(None)
    finally:
        delivery.release()
        done.set()


class AsyncWatch:
    """Async iterator and async context manager over a :class:`Delivery` run in a thread."""

    def __init__(self, delivery: Delivery) -> None:
        self._delivery = delivery
        self._queue: collections.deque[Change] = collections.deque()
        self._mailbox: _Mailbox | None = None
        self._thread: threading.Thread | None = None
        self._done = threading.Event()
        self._ended = False

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Change:
        try:
            while not self._queue:
                if self._ended or self._delivery.closing.is_set():
                    await self.aclose()
                    raise StopAsyncIteration
                await self._fill()
            return self._queue.popleft()
        except (StopAsyncIteration, asyncio.CancelledError):
            raise
        except BaseException:
            await self.aclose()
            raise

    async def __aenter__(self) -> Self:
        if self._thread is None:
            try:
                await self._fill()  # the replay: errors at the start are raised here
            except BaseException:
                await self.aclose()
                raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop now: the thread ends within one step; its end is awaited (up to 5 s)."""
        self._ended = True
        self._delivery.closing.set()
        deadline = time.monotonic() + 5
        while self._thread is not None and not self._done.is_set() and time.monotonic() < deadline:
            await asyncio.sleep(0.001)
        if self._thread is not None and self._done.is_set():
            self._thread.join(timeout=1)
        if self._thread is None:
            self._delivery.release()

    async def _fill(self) -> None:
        if self._thread is None:
            self._mailbox = _Mailbox(asyncio.get_running_loop())
            follower = self._delivery.follower
            self._thread = threading.Thread(
                target=_run,
                args=(self._delivery, self._mailbox, self._done),
                name=f"jsonl-session-watch:{follower.label}",
                daemon=True,
            )
            self._thread.start()
        assert self._mailbox is not None
        await self._mailbox.ready.wait()
        for batch in self._mailbox.take():
            if batch is None:
                self._ended = True
            elif isinstance(batch, BaseException):
                self._ended = True
                raise batch
            else:
                self._queue.extend(batch)

    def __del__(self) -> None:
        self._delivery.closing.set()  # the thread sees it within one step and ends


class SessionWatch(AsyncWatch):
    """What :func:`~jsonl_session.watch.watch_session` returns: ``async for change in watch``."""


class DirectoryWatch(AsyncWatch):
    """What :func:`~jsonl_session.watch.watch_directory` returns: ``async for change in watch``."""
