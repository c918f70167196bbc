"""One folder watch shared by every page ``serve`` has open: changes fanned out as events.

The hub runs a single :func:`~jsonl_session.watch.watch_directory_sync` in a thread and keeps
a mirror of every session: each item already rendered as its view, as escaped JSON bytes
(memory about the folder's size). Each change updates the mirror, takes the next version
number and is queued for every subscriber of that session, and for the index.

Why a mirror: a page must start from exactly the state the next change applies to. Reading
the file when a page opens would race the watch (a pop and an append between the read and
the watch's next look would be missed or applied twice). Here a page's items, its version
and its subscription are taken together under the hub's lock, so the stream continues the
page exactly; a page that reconnects with an older version (``Last-Event-ID``) gets a
``reset`` with the whole list first.

A subscriber that falls far behind (a stalled tab) does not make the queue grow without
bound: its queue is dropped and it gets one ``reset`` instead.

Items are numbered by position (1 for the first item): the line numbers ``show --html``
prints, for files written by this library (which never writes blank lines).

A session the watch cannot read (a malformed line, a conflict marker: a ``failed`` change)
is read once more, leniently, as ``show --html`` reads it: every good item, and the bad lines
as ``invalid`` views, numbered by the file's lines. Its pages get those views with the
problem (a ``problem`` event carrying ``items``), instead of an empty list under a "live"
dot; the watch hands the session over again (``replaced``) once it reads
(tests/serve/test_browser.py::test_a_malformed_line_is_flagged_and_hides_nothing_when_served).

Example:
    >>> hub = Hub("sessions", lock_timeout=10)                    # doctest: +SKIP
    >>> hub.start()
    >>> version, items_json = hub.page("convo_123")
    >>> with hub.subscribe("convo_123", version) as events:
    ...     event = events.get(timeout=10)                        # an Event, or None
"""

from __future__ import annotations

import collections
import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import orjson

from ..core.errors import JSONLSessionError, LockTimeout
from ..core.names import filename_for
from ..render.html import script_json
from ..render.views import ItemView, ViewBuilder, encode_view, read_file, views_of_lines
from ..session.folder import SessionDirectory
from ..watch import Change, watch_directory_sync

if TYPE_CHECKING:
    from typing_extensions import Self

MAX_QUEUED = 2000
"""Events a subscriber may fall behind before it is sent one ``reset`` instead."""
LENIENT_READ_TIMEOUT = 2.0
"""At most this long waiting for a failed session's lock, to show what the file holds."""
READY_TIMEOUT = 10.0
"""How long a page waits, just after start, for the watch to replay the sessions already there."""
RESTART_DELAYS = (0.5, 1.0, 2.0, 5.0)
"""Waits before restarting the watch after an error (then 5 s each time)."""


@dataclass(frozen=True)
class Event:
    """One server-sent event: the version it brings a page to, and its JSON payload."""

    version: int
    data: bytes


@dataclass
class _Mirror:
    version: int = 0
    views: list[bytes] = field(default_factory=list)
    builder: ViewBuilder = field(default_factory=ViewBuilder)
    problem: str = ""  # why the watch cannot read the session now ("failed"), until it can again


class Subscription:
    """The events for one page (one session, or the index when ``session_id`` is None).

    ``get`` returns the next :class:`Event`, None after ``timeout`` seconds without one (time
    for a keep-alive), and raises :class:`EOFError` once the hub or the subscription is closed.
    """

    def __init__(self, hub: Hub, session_id: str | None) -> None:
        self.session_id = session_id
        self._hub = hub
        self._queue: collections.deque[Event] = collections.deque()
        self._ready = threading.Condition(threading.Lock())
        self._behind = False
        self._closed = False

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def get(self, timeout: float) -> Event | None:
        with self._ready:
            self._ready.wait_for(lambda: self._queue or self._behind or self._closed, timeout)
            if self._closed:
                raise EOFError("the viewer is stopping")
            if self._queue:
                return self._queue.popleft()
            if not self._behind:
                return None
        return self._hub._catch_up(self)

    def close(self) -> None:
        self._hub._unsubscribe(self)
        self.stop()

    def stop(self) -> None:
        with self._ready:
            self._closed = True
            self._ready.notify_all()

    def put(self, event: Event) -> None:
        """Queue ``event`` (the hub holds its lock); past :data:`MAX_QUEUED`, drop all, catch up later."""
        with self._ready:
            if len(self._queue) >= MAX_QUEUED:
                self._queue.clear()
                self._behind = True
            elif not self._behind:
                self._queue.append(event)
            self._ready.notify_all()

    def restart(self, event: Event) -> None:
        """Replace whatever is queued by ``event`` (the hub holds its lock)."""
        with self._ready:
            self._queue.clear()
            self._queue.append(event)
            self._behind = False
            self._ready.notify_all()


class Hub:
    """The shared folder watch of ``serve``, and the rendered mirror of every session in the folder."""

    def __init__(self, directory: str | os.PathLike[str], *, lock_timeout: float) -> None:
        self.directory = Path(directory)
        self.lock_timeout = lock_timeout
        self._lock = threading.Lock()
        self._mirrors: dict[str, _Mirror] = {}
        self._subscribers: dict[str | None, set[Subscription]] = collections.defaultdict(set)
        self._version = 0
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._unseen: set[str] = set()
        self._last_problem = ""
        self._thread = threading.Thread(target=self._run, name="jsonl-session-serve-watch", daemon=True)

    def start(self) -> None:
        """Start following the folder (the first changes replay every session)."""
        try:  # pages wait for the sessions present now (with items) to be replayed
            self._unseen = {info.session_id for info in SessionDirectory(self.directory).list() if info.items}
        except (OSError, ValueError):
            self._unseen = set()
        if not self._unseen:
            self._ready.set()
        self._thread.start()

    def close(self) -> None:
        """Stop the watch (within one of its steps) and end every subscription."""
        self._stop.set()
        self._thread.join(timeout=10)
        with self._lock:
            for subscribers in self._subscribers.values():
                for subscriber in subscribers:
                    subscriber.stop()

    def problem(self, session_id: str) -> str:
        """Why the watch cannot read this session now (a malformed line...), or empty."""
        with self._lock:
            mirror = self._mirrors.get(session_id)
            return mirror.problem if mirror is not None else ""

    def page(self, session_id: str) -> tuple[int, bytes] | None:
        """``(version, items as an escaped JSON array)`` of a session, or None if there is no such session.

        A session file the watch has not delivered yet (an empty one, or one not replayed yet
        just after start) is version 0 with no items: its items then come as events.
        """
        self._ready.wait(READY_TIMEOUT)
        with self._lock:
            mirror = self._mirrors.get(session_id)
            if mirror is not None:
                return mirror.version, b"[" + b",".join(mirror.views) + b"]"
        # Outside the lock (a file-system call). Version 0 stays right meanwhile: the first
        # change to this session gets a new version, and the page then receives it.
        if not SessionDirectory(self.directory).exists(session_id):
            return None
        with self._lock:
            mirror = self._mirrors.get(session_id)
            if mirror is not None:
                return mirror.version, b"[" + b",".join(mirror.views) + b"]"
            return 0, b"[]"

    def subscribe(self, session_id: str | None, since: int | None) -> Subscription:
        """Follow one session from version ``since`` (a ``reset`` first if not current), or the index."""
        subscriber = Subscription(self, session_id)
        with self._lock:
            if session_id is not None:
                mirror = self._mirrors.get(session_id)
                if since is None or since != (mirror.version if mirror else 0):
                    subscriber.restart(self._reset(session_id))
            self._subscribers[session_id].add(subscriber)
        return subscriber

    # -- inside -----------------------------------------------------------------------------

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                with watch_directory_sync(
                    self.directory, start="all", stop_event=self._stop, lock_timeout=self.lock_timeout
                ) as changes:
                    for change in changes:
                        self._apply(change)
                        failures = 0
                        self._last_problem = ""
                return
            except Exception as exc:  # noqa: BLE001  (a bad file, a lock held too long: report, go on)
                self._ready.set()  # pages show what there is rather than wait
                message = str(exc) or type(exc).__name__
                print(f"jsonl-session serve: warning: watch stopped ({message}); restarting", file=sys.stderr)
                self._broadcast_problem(message)
                self._stop.wait(RESTART_DELAYS[min(failures, len(RESTART_DELAYS) - 1)])
                failures += 1
                self._forget_all()

    def _apply(self, change: Change) -> None:
        lenient = self._read_leniently(change) if change.kind == "failed" else None
        with self._lock:
            mirror = self._mirrors.setdefault(change.session_id, _Mirror())
            if self._unseen:
                self._unseen.discard(change.session_id)
                if not self._unseen:
                    self._ready.set()
            self._version += 1
            mirror.version = version = self._version
            payload: dict[str, Any] = {"kind": change.kind, "version": version, "count": change.count}
            mirror.problem = ""
            items = b""
            if change.kind == "appended":
                items = self._render(mirror, change.items)
            elif change.kind == "removed":
                del mirror.views[max(0, len(mirror.views) - change.count) :]
            elif change.kind in ("cleared", "replaced", "deleted"):
                mirror.views.clear()
                mirror.builder.reset()
                items = self._render(mirror, change.items)
                if change.kind == "deleted":
                    del self._mirrors[change.session_id]
            else:  # "failed" (the session cannot be read now), or a kind this viewer does not know
                error = getattr(change, "error", None) or f"unknown change {change.kind!r}"
                mirror.problem = str(error)
                payload = {
                    "kind": "problem",
                    "version": version,
                    "message": f"{change.session_id}: {error}",
                }
                if lenient is not None:  # what the file holds now, bad lines flagged
                    mirror.views[:] = [script_json(encode_view(view)) for view in lenient]
                    mirror.builder.reset()
                    payload["count"] = len(mirror.views)
                    items = b",".join(mirror.views)
            self._send(change.session_id, payload, items)

    def _read_leniently(self, change: Change) -> list[ItemView] | None:
        """The views of a session the watch failed to read, as ``show --html`` reads it; None if it cannot.

        Outside the hub's lock (a file read). A session whose lock is held too long is not
        tried again here: its pages keep the items they have.
        """
        if isinstance(change.error, LockTimeout):
            return None
        try:
            data = read_file(
                self.directory / filename_for(change.session_id),
                lock_timeout=min(self.lock_timeout, LENIENT_READ_TIMEOUT),
            )
        except (OSError, ValueError, JSONLSessionError):
            return None
        return views_of_lines(data)

    def _render(self, mirror: _Mirror, items: list[Any]) -> bytes:
        start = len(mirror.views)
        views = [
            script_json(encode_view(mirror.builder.view(item, start + offset)))
            for offset, item in enumerate(items, 1)
        ]
        mirror.views.extend(views)
        return b",".join(views)

    def _send(self, session_id: str, payload: dict[str, Any], items: bytes) -> None:
        """Queue one change for the session's pages (with its items) and the index (without)."""
        data = script_json(orjson.dumps(payload))
        event = Event(payload["version"], data[:-1] + b',"items":[' + items + b"]}")
        for subscriber in self._subscribers.get(session_id, ()):
            subscriber.put(event)
        if self._subscribers.get(None):
            note = Event(payload["version"], script_json(orjson.dumps({**payload, "session": session_id})))
            for subscriber in self._subscribers[None]:
                subscriber.put(note)

    def _reset(self, session_id: str) -> Event:
        mirror = self._mirrors.get(session_id) or _Mirror()
        problem = script_json(orjson.dumps(f"{session_id}: {mirror.problem}" if mirror.problem else ""))
        payload = b'{"kind":"reset","version":%d,"count":%d,"problem":%s,"items":[' % (
            mirror.version,
            len(mirror.views),
            problem,
        )
        return Event(mirror.version, payload + b",".join(mirror.views) + b"]}")

    def _catch_up(self, subscriber: Subscription) -> Event:
        """A reset for a subscriber that fell behind, taken with the queue cleared, under the lock."""
        with self._lock:
            event = (
                self._reset(subscriber.session_id)
                if subscriber.session_id is not None
                else Event(self._version, b'{"kind":"reset","version":%d}' % self._version)
            )
            subscriber.restart(event)
        got = subscriber.get(0)
        assert got is not None
        return got

    def _forget_all(self) -> None:
        """After a watch error: every session starts again from nothing (the new watch replays them)."""
        with self._lock:
            self._mirrors.clear()
            for session_id, subscribers in self._subscribers.items():
                if session_id is not None:
                    for subscriber in subscribers:
                        subscriber.restart(self._reset(session_id))

    def _broadcast_problem(self, message: str) -> None:
        with self._lock:
            if message == self._last_problem:
                return  # the same failure again, after a restart: said once is enough
            self._last_problem = message
            self._version += 1
            data = script_json(
                orjson.dumps({"kind": "problem", "version": self._version, "message": message})
            )
            for subscribers in self._subscribers.values():
                for subscriber in subscribers:
                    subscriber.put(Event(self._version, data))

    def _unsubscribe(self, subscriber: Subscription) -> None:
        with self._lock:
            subscribers = self._subscribers.get(subscriber.session_id)
            if subscribers is not None:
                subscribers.discard(subscriber)
                if not subscribers:
                    del self._subscribers[subscriber.session_id]
