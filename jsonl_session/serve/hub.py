"""One folder watch shared by every page ``serve`` has open, and the sessions those pages show.

The hub runs a single :func:`~jsonl_session.watch.watch_directory_sync` in a thread, from
``start="now"``: it reads no item of the sessions already there, it only says which session
changed (for the index, and as a wake-up). Memory follows what pages follow, not the folder
nor the clients: a session a page asks for becomes a :class:`~.shown.ShownSession` (its
follower, version and item count, which read, refresh and render it), dropped
:data:`LINGER_SECONDS` after its last page went. Pages themselves are streamed from the file
(:meth:`Hub.open_page`, ``page``): 16 stalled readers of a 30 MB session once held 553 MB
(tests/serve/test_serve_memory.py). The hub numbers the versions (one count for every session
and the index) and queues each session's events for its pages.

A page's descriptor and version are taken together under the session's shared lock with the
session brought up to date under it; a page that reconnects with an older version
(``Last-Event-ID``) gets a ``reset`` with the whole list first.

Bounded per client: see ``subscriptions``; a client that reads nothing at all is dropped by
the server's write timeout (``server.Limits``), and its ``EventSource`` reconnects by itself.

Items are numbered by position (1 for the first item): the line numbers ``show --html``
prints, for files written by this library (which never writes blank lines). A session that
cannot be read is shown leniently, with its problem (``shown``;
tests/serve/test_browser.py::test_a_malformed_line_is_flagged_and_hides_nothing_when_served).

Example:
    >>> import shutil, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> SessionDirectory(folder).open("convo_123").add_items_sync([{"role": "user", "content": "hi"}])
    >>> hub = Hub(folder, lock_timeout=10)
    >>> hub.start()
    >>> version, views, problem = hub.page("convo_123")
    >>> len(views), problem
    (1, '')
    >>> with hub.subscribe("convo_123", version) as events:      # a page that has `version`
    ...     events.get(timeout=0.1)                               # an Event, or None: nothing new
    >>> with hub.subscribe("convo_123", None) as events:         # a page that has nothing yet
    ...     orjson.loads(events.get(timeout=10).data)["kind"]     # a reset first, with every item
    'reset'
    >>> hub.close()
    >>> shutil.rmtree(folder)
"""

from __future__ import annotations

import collections
import os
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from ..core.names import filename_for
from ..core.transaction import Transaction
from ..render.html import script_json
from ..session.folder import SessionDirectory
from ..watch import Change, watch_directory_sync
from .heap import give_back
from .shown import PageRead, PageSnapshot, ShownSession, WatchedFile
from .subscriptions import MAX_QUEUED_BYTES, Event, Subscription

LINGER_SECONDS = 15.0
"""How long a shown session is kept after its last page went (a reload, the page's events connecting)."""
RESTART_DELAYS = (0.5, 1.0, 2.0, 5.0)
"""Waits before restarting the watch after an error (then 5 s each time)."""


class Hub:
    """The shared folder watch of ``serve``, and the sessions its pages show."""

    def __init__(
        self, directory: str | os.PathLike[str], *, lock_timeout: float, queued_bytes: int = MAX_QUEUED_BYTES
    ) -> None:
        self.directory = Path(directory)
        self.lock_timeout = lock_timeout
        self.queued_bytes = queued_bytes
        self._lock = threading.RLock()
        self._shown: dict[str, ShownSession] = {}
        self._subscribers: dict[str | None, set[Subscription]] = collections.defaultdict(set)
        self._version = 0
        self._stop = threading.Event()
        self._ready = threading.Event()  # the watch's first look is done (or failed)
        self._last_problem = ""
        self._thread = threading.Thread(target=self._run, name="jsonl-session-serve-watch", daemon=True)

    def start(self) -> None:
        """Start following the folder; return once the watch is up (its first look done, or failed).

        A server that says it is ready is then watching, and the memory the first look freed
        is given back.
        """
        self._thread.start()
        while not self._ready.wait(0.5) and self._thread.is_alive():
            pass

    def close(self) -> None:
        """Stop the watch (within one of its steps) and end every subscription."""
        self._stop.set()
        self._thread.join(timeout=10)
        with self._lock:
            for subscribers in self._subscribers.values():
                for subscriber in subscribers:
                    subscriber.stop()
            for shown in self._shown.values():
                shown.close()
            self._shown.clear()

    def open_page(self, session_id: str) -> PageSnapshot | None:
        """The session as a page shows it now: a descriptor on its file and the version it is at.

        None if there is no such session. Taken under the session's shared lock with the
        session brought up to date under it (a new one: where its follower starts), so the
        first ``size`` bytes of the descriptor are exactly the items of ``version``; the page
        streams them from there, and :meth:`settle` says, once they are written, whether they
        still are. The session is kept for the page's events (:data:`LINGER_SECONDS` at least).
        """
        with self._lock:
            shown = self._shown.get(session_id)
            if shown is None and not SessionDirectory(self.directory).exists(session_id):
                return None
            path = self.directory / filename_for(session_id)
            with Transaction(path, write=False, timeout=self.lock_timeout) as file:
                if not file.exists:
                    return None
                if shown is None:
                    shown = self._new(session_id, file)
                page, events = shown.snapshot(file, followed=self._followed(session_id))
            self._queue(shown, events)
            return page

    def settle(self, page: PageSnapshot, read: PageRead | None = None) -> tuple[int, str]:
        """The version a streamed page is at (0 if the file was cut meanwhile), and its problem.

        ``read``: what the page's pass over its bytes learnt (``ShownSession.settle``).
        """
        with self._lock:
            shown = self._shown.get(page.session_id)
            if shown is None:
                return 0, ""
            version, problem, events = shown.settle(page, read, followed=self._followed(page.session_id))
            self._queue(shown, events)
            return version, problem

    def page(self, session_id: str) -> tuple[int, Sequence[bytes], str] | None:
        """``(version, views, problem)`` of a session, rendered whole (tests; pages are streamed)."""
        with self._lock:
            shown = self._session(session_id)
            if shown is None:
                return None
            views = tuple(shown.rendered())
            return shown.version, views, shown.shown_problem

    def subscribe(self, session_id: str | None, since: int | None) -> Subscription | None:
        """Follow one session from version ``since`` (a ``reset`` first if not current), or the index.

        None if there is no such session.
        """
        subscriber = Subscription(
            session_id, self.queued_bytes, catch_up=self._catch_up, leave=self._unsubscribe
        )
        with self._lock:
            if session_id is not None:
                shown = self._session(session_id)
                if shown is None:
                    return None
                if since != shown.version:
                    subscriber.fall_behind()
            self._subscribers[session_id].add(subscriber)
        return subscriber

    def sweep(self) -> None:
        """Drop the sessions no page has followed for :data:`LINGER_SECONDS` (the server calls this often)."""
        now = time.monotonic()
        dropped = False
        with self._lock:
            for session_id, shown in list(self._shown.items()):
                if self._subscribers.get(session_id):
                    continue
                dropped |= shown.let_go()  # no stream needs them whole: rendered again for a reset
                if now - shown.used > LINGER_SECONDS:
                    shown.close()
                    del self._shown[session_id]
        if dropped:
            give_back()

    def subscribers(self, session_id: str | None) -> int:
        """How many pages follow this session (None: the index) now (tests, benchmarks)."""
        with self._lock:
            return len(self._subscribers.get(session_id, ()))

    def shown(self) -> list[str]:
        """The sessions kept in memory now (tests, benchmarks)."""
        with self._lock:
            return sorted(self._shown)

    # -- inside -----------------------------------------------------------------------------

    def _next_version(self) -> int:
        """The next version (of a session or the index): one count for all. Under the lock."""
        self._version += 1
        return self._version

    def _followed(self, session_id: str | None) -> bool:
        return bool(self._subscribers.get(session_id))

    def _new(self, session_id: str, file: Any) -> ShownSession:
        """A shown session; its follower starts from the file as the caller's shared lock shows it."""
        shown = ShownSession(WatchedFile(self.directory, session_id, self.lock_timeout), self._next_version)
        self._shown[session_id] = shown
        shown.first_look(file)  # reads nothing: the page's pass (or the first change) does
        return shown

    def _session(self, session_id: str) -> ShownSession | None:
        """The session, made now if needed, or None if there is none. Under the lock."""
        shown = self._shown.get(session_id)
        if shown is None:
            if not SessionDirectory(self.directory).exists(session_id):
                return None
            path = self.directory / filename_for(session_id)
            with Transaction(path, write=False, timeout=self.lock_timeout) as file:
                if not file.exists:
                    return None
                shown = self._new(session_id, file)
        if shown.gone:  # a symlink after all: not a session
            self._forget(shown)
            return None
        shown.used = time.monotonic()
        return shown

    def _queue(self, shown: ShownSession, events: list[Event]) -> None:
        """Queue a session's events for its pages. Under the lock."""
        session_id = shown.source.session_id
        for event in events:
            for subscriber in self._subscribers.get(session_id, ()):
                subscriber.put(event)
        if shown.gone:
            self._forget(shown)

    def _forget(self, shown: ShownSession) -> None:
        shown.close()
        if self._shown.get(shown.source.session_id) is shown:
            del self._shown[shown.source.session_id]

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                with watch_directory_sync(
                    self.directory, start="now", stop_event=self._stop, lock_timeout=self.lock_timeout
                ) as changes:
                    give_back()  # what its first look at every session freed
                    self._ready.set()
                    if failures:  # what changed while the watch was down
                        self._refresh_all()
                    for change in changes:
                        self._apply(change)
                        failures = 0
                        self._last_problem = ""
                return
            except Exception as exc:  # noqa: BLE001  (a bad file, a lock held too long: report, go on)
                message = str(exc) or type(exc).__name__
                print(f"jsonl-session serve: warning: watch stopped ({message}); restarting", file=sys.stderr)
                self._broadcast_problem(message)
                self._ready.set()  # serve what there is meanwhile
                self._stop.wait(RESTART_DELAYS[min(failures, len(RESTART_DELAYS) - 1)])
                failures += 1

    def _apply(self, change: Change) -> None:
        """A change the folder watch saw: a note for the index; the shown session (if any) looks itself."""
        with self._lock:
            if self._subscribers.get(None):
                payload: dict[str, Any] = {
                    "kind": change.kind,
                    "version": self._next_version(),
                    "count": change.count,
                    "session": change.session_id,
                }
                if change.kind == "failed":
                    payload["kind"] = "problem"
                    payload["message"] = f"{change.session_id}: {change.error}"
                note = Event(self._version, script_json(orjson.dumps(payload)))
                for subscriber in self._subscribers[None]:
                    subscriber.put(note)
            shown = self._shown.get(change.session_id)
            if shown is not None:
                self._queue(shown, shown.refresh(followed=self._followed(change.session_id)))

    def _refresh_all(self) -> None:
        with self._lock:
            for session_id, shown in list(self._shown.items()):
                self._queue(shown, shown.refresh(followed=self._followed(session_id)))

    def _catch_up(self, subscriber: Subscription) -> None:
        """Restart a subscriber that fell behind with a ``reset`` made now."""
        with self._lock:
            session_id = subscriber.session_id
            shown = self._shown.get(session_id) if session_id is not None else None
            if shown is None:  # the index (or a session forgotten meanwhile: nothing to show)
                event = Event(self._version, b'{"kind":"reset","version":%d' % self._version, (), b"}")
            else:
                event = shown.reset_event()
            subscriber.restart(event)

    def _broadcast_problem(self, message: str) -> None:
        with self._lock:
            if message == self._last_problem:
                return  # the same failure again, after a restart: said once is enough
            self._last_problem = message
            version = self._next_version()
            data = script_json(orjson.dumps({"kind": "problem", "version": version, "message": message}))
            for subscribers in self._subscribers.values():
                for subscriber in subscribers:
                    subscriber.put(Event(version, data))

    def _unsubscribe(self, subscriber: Subscription) -> None:
        with self._lock:
            subscribers = self._subscribers.get(subscriber.session_id)
            if subscribers is not None:
                subscribers.discard(subscriber)
                if not subscribers:
                    del self._subscribers[subscriber.session_id]
            shown = self._shown.get(subscriber.session_id) if subscriber.session_id is not None else None
            if shown is not None:
                shown.used = time.monotonic()  # kept LINGER_SECONDS more (a reload)
