"""What one open page receives: server-sent events, queued per page and bounded in bytes.

A page that stops reading must not make ``serve`` hold every change for it (a stalled
``/events`` client once took the server from 34 MB to 331 MB), so each subscription holds at
most ``MAX_QUEUED_BYTES`` beyond one event; past that its queue is dropped and it gets one
coalesced ``reset`` when it reads again. The hub (``hub``) fills the queues, and hands each
subscription the two things it asks of it: a ``reset`` made now, and its leaving.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING

from ..render.html import PIECE_BYTES

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["MAX_QUEUED_BYTES", "Event", "Subscription"]

MAX_QUEUED_BYTES = 1024 * 1024
"""Bytes of events a subscriber may fall behind (beyond one event) before it is sent one ``reset`` instead."""


@dataclass(frozen=True)
class Event:
    """One server-sent event: the version it brings a page to, and its JSON payload in pieces.

    ``views`` (escaped JSON objects, shared with the shown session, never copied) go between ``head``
    and ``tail``, joined by commas: a ``reset`` of a 40 MB session is written from the
    session's views, a piece at a time, without a 40 MB copy per client.
    """

    version: int
    head: bytes
    views: Sequence[bytes] = ()
    tail: bytes = b""

    @property
    def size(self) -> int:
        """Bytes of the payload (what it costs a queue to hold it)."""
        return len(self.head) + len(self.tail) + sum(map(len, self.views)) + len(self.views)

    def pieces(self) -> Iterator[bytes]:
        """The payload, in pieces of about ``PIECE_BYTES``."""
        yield self.head
        piece: list[bytes] = []
        size = 0
        comma = b""
        for data in self.views:
            piece.append(data)
            size += len(data)
            if size >= PIECE_BYTES:
                yield comma + b",".join(piece)
                piece, size, comma = [], 0, b","
        if piece:
            yield comma + b",".join(piece)
        yield self.tail

    @property
    def data(self) -> bytes:
        """The whole payload at once (tests)."""
        return b"".join(self.pieces())


class Subscription:
    """The events for one page (one session, or the index when ``session_id`` is None).

    ``get`` returns the next :class:`Event`, None after ``timeout`` seconds without one (time
    for a keep-alive), and raises :class:`EOFError` once the hub or the subscription is closed.
    ``catch_up`` makes the ``reset`` of a subscription that fell behind (and restarts it with
    it); ``leave`` is called when it closes.
    """

    def __init__(
        self,
        session_id: str | None,
        max_bytes: int,
        *,
        catch_up: Callable[[Subscription], None],
        leave: Callable[[Subscription], None],
    ) -> None:
        self.session_id = session_id
        self._catch_up = catch_up
        self._leave = leave
        self._max_bytes = max_bytes
        self._queue: collections.deque[Event] = collections.deque()
        self._bytes = 0
        self._ready = threading.Condition(threading.Lock())
        self._behind = False
        self._closed = False

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    @property
    def queued_bytes(self) -> int:
        """Bytes of the events waiting for this subscriber."""
        with self._ready:
            return self._bytes

    def get(self, timeout: float) -> Event | None:
        with self._ready:
            self._ready.wait_for(lambda: self._queue or self._behind or self._closed, timeout)
            if self._closed:
                raise EOFError("the viewer is stopping")
            if self._queue:
                event = self._queue.popleft()
                self._bytes -= event.size
                return event
            if not self._behind:
                return None
        self._catch_up(self)  # restarts the queue with a reset (outside our lock: the hub's first)
        return self.get(0)

    def close(self) -> None:
        self._leave(self)
        self.stop()

    def stop(self) -> None:
        with self._ready:
            self._closed = True
            self._ready.notify_all()

    def put(self, event: Event) -> None:
        """Queue ``event`` (the hub holds its lock); past ``max_bytes``, drop all and catch up later."""
        with self._ready:
            if self._behind or self._closed:
                return
            size = event.size
            if self._queue and self._bytes + size > self._max_bytes:
                self._queue.clear()
                self._bytes = 0
                self._behind = True
            else:
                self._queue.append(event)
                self._bytes += size
            self._ready.notify_all()

    def fall_behind(self) -> None:
        """Drop what is queued: the next ``get`` is a ``reset`` made from the hub's state then."""
        with self._ready:
            self._queue.clear()
            self._bytes = 0
            self._behind = True
            self._ready.notify_all()

    def restart(self, event: Event) -> None:
        """Replace whatever is queued by ``event`` (the hub holds its lock)."""
        with self._ready:
            self._queue.clear()
            self._queue.append(event)
            self._bytes = event.size
            self._behind = False
            self._ready.notify_all()
