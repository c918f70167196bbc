"""One folder watch shared by every page ``serve`` has open, and the sessions those pages show.

The hub runs a single :func:`~jsonl_session.watch.watch_directory_sync` in a thread, from
``start="now"``: it reads no item of the sessions already there, it only says which session
changed (for the index, and as a wake-up). Memory follows what pages follow, not the folder
nor the clients: a session a page asks for gets a *mirror* (its follower, version and item
count), dropped :data:`LINGER_SECONDS` after its last page went; its items are rendered whole
(each as its view, escaped JSON bytes) only for a ``reset``, and kept only while an event
stream follows the session. Pages themselves are streamed from the file
(:meth:`Hub.open_page`, ``server.page_parts``): 16 stalled readers of a 30 MB session once
held 553 MB (tests/serve/test_serve_memory.py).

Why a mirror per open session, with a session follower of its own: a page must start from
exactly the state the next change applies to. Each mirror has its own
:func:`~jsonl_session.watch.watch_session_sync` that is never started as an iterator (so no
inotify instance: only its ``catch_up()`` is called, when the folder watch says the session
changed). Its first look reads the session and its later looks deliver the exact changes
since, so the mirror, its version and the events it queues always agree, whatever the
folder watch had already seen. A page's descriptor and version are taken together under the
session's shared lock with the mirror brought up to date under it; a page that reconnects
with an older version (``Last-Event-ID``) gets a ``reset`` with the whole list first.

Bounded per client: see ``subscriptions``; a client that reads nothing at all is dropped by
the server's write timeout (``server.Limits``), and its ``EventSource`` reconnects by itself.

Items are numbered by position (1 for the first item): the line numbers ``show --html``
prints, for files written by this library (which never writes blank lines).

A session that cannot be read (a malformed line, a conflict marker) is read once more,
leniently, as ``show --html`` reads it: every good item, and the bad lines as ``invalid``
views, numbered by the file's lines. Its pages get those views with the problem (a
``problem`` event carrying ``items``), instead of an empty list under a "live" dot; once it
reads again it comes as ``replaced``
(tests/serve/test_browser.py::test_a_malformed_line_is_flagged_and_hides_nothing_when_served).

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

from ..core import reads
from ..core.errors import JSONLSessionError, LockTimeout, UnsafePathError
from ..core.names import filename_for
from ..core.transaction import Transaction
from ..render.html import script_json
from ..render.views import ViewBuilder, prime, read_file, views_of_lines, views_of_scans
from ..session.folder import SessionDirectory
from ..watch import Change, watch_directory_sync, watch_session_sync
from .heap import give_back
from .mirrors import Mirror, PageSnapshot, WatchedFile, kept_view
from .subscriptions import MAX_QUEUED_BYTES, Event, Subscription

LINGER_SECONDS = 15.0
"""How long a session's mirror is kept after its last page went (a reload, the page's events connecting)."""
LENIENT_READ_TIMEOUT = 2.0
"""At most this long waiting for a failed session's lock, to show what the file holds."""
RESTART_DELAYS = (0.5, 1.0, 2.0, 5.0)
"""Waits before restarting the watch after an error (then 5 s each time)."""


class Hub:
    """The shared folder watch of ``serve``, and the mirrors of the sessions its pages show."""

    def __init__(
        self, directory: str | os.PathLike[str], *, lock_timeout: float, queued_bytes: int = MAX_QUEUED_BYTES
    ) -> None:
        self.directory = Path(directory)
        self.lock_timeout = lock_timeout
        self.queued_bytes = queued_bytes
        self._lock = threading.RLock()
        self._mirrors: dict[str, Mirror] = {}
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
            for mirror in self._mirrors.values():
                mirror.watch.close()
            self._mirrors.clear()

    def open_page(self, session_id: str) -> PageSnapshot | None:
        """The session as a page shows it now: a descriptor on its file and the version it is at.

        None if there is no such session. Taken under the session's shared lock with the
        mirror brought up to date under it, so the first ``size`` bytes of the descriptor are
        exactly the items of ``version``; the server streams them from there, and
        :meth:`settle` says, once they are written, whether they still are. The mirror is
        kept for the page's events (:data:`LINGER_SECONDS` at least).
        """
        path = self.directory / filename_for(session_id)
        with self._lock:
            mirror = self._mirror(session_id)
            if mirror is None:
                return None
            with Transaction(path, write=False, timeout=self.lock_timeout) as file:
                if not file.exists:
                    return None
                seen = _stat_key(os.fstat(file.fd))
                if seen != mirror.seen:  # the changes before our lock, sent as usual
                    self._refresh(session_id, mirror)
                    mirror.seen = seen
                if self._mirrors.get(session_id) is not mirror:  # a symlink after all: not a session
                    return None
                fd = os.dup(file.fd)
            problem = f"{session_id}: {mirror.problem}" if mirror.problem else ""
            return PageSnapshot(session_id, path, fd, file.size, mirror.version, mirror.cuts, problem)

    def settle(self, page: PageSnapshot) -> int:
        """The version a streamed page is at: its snapshot's, or 0 if the file was cut meanwhile.

        A pop or a clear in place may have changed the bytes the page was streamed from; a
        page at version 0 gets a ``reset`` (the session as it is) when its events connect.
        """
        with self._lock:
            mirror = self._mirrors.get(page.session_id)
            if mirror is None:
                return 0
            try:
                unchanged = _stat_key(os.stat(page.path, follow_symlinks=False)) == mirror.seen
            except OSError:
                unchanged = False
            if not unchanged:  # a cut not yet heard of by the folder watch
                self._refresh(page.session_id, mirror)
            same = self._mirrors.get(page.session_id) is mirror and mirror.cuts == page.cuts
            mirror.used = time.monotonic()
            return page.version if same else 0

    def page(self, session_id: str) -> tuple[int, Sequence[bytes], str] | None:
        """``(version, views, problem)`` of a session, rendered whole (tests; pages are streamed)."""
        with self._lock:
            mirror = self._mirror(session_id)
            if mirror is None:
                return None
            problem = f"{session_id}: {mirror.problem}" if mirror.problem else ""
            return mirror.version, tuple(self._views(session_id, mirror)), problem

    def subscribe(self, session_id: str | None, since: int | None) -> Subscription | None:
        """Follow one session from version ``since`` (a ``reset`` first if not current), or the index.

        None if there is no such session.
        """
        subscriber = Subscription(self, session_id, self.queued_bytes)
        with self._lock:
            if session_id is not None:
                mirror = self._mirror(session_id)
                if mirror is None:
                    return None
                if since != mirror.version:
                    subscriber.fall_behind()
            self._subscribers[session_id].add(subscriber)
        return subscriber

    def sweep(self) -> None:
        """Drop the mirrors no page has followed for :data:`LINGER_SECONDS` (the server calls this often)."""
        now = time.monotonic()
        dropped = False
        with self._lock:
            for session_id, mirror in list(self._mirrors.items()):
                if self._subscribers.get(session_id):
                    continue
                if mirror.views is not None:  # no stream needs them whole: rendered again for a reset
                    mirror.views = None
                    dropped = True
                if now - mirror.used > LINGER_SECONDS:
                    mirror.watch.close()
                    del self._mirrors[session_id]
        if dropped:
            give_back()

    def subscribers(self, session_id: str | None) -> int:
        """How many pages follow this session (None: the index) now (tests, benchmarks)."""
        with self._lock:
            return len(self._subscribers.get(session_id, ()))

    def mirrored(self) -> list[str]:
        """The sessions rendered in memory now (tests, benchmarks)."""
        with self._lock:
            return sorted(self._mirrors)

    # -- inside -----------------------------------------------------------------------------

    def _mirror(self, session_id: str) -> Mirror | None:
        """The session's mirror, made now (its first look: the file read) if needed. Under the lock."""
        mirror = self._mirrors.get(session_id)
        if mirror is None:
            if not SessionDirectory(self.directory).exists(session_id):
                return None
            mirror = self._read(session_id)
            if mirror is not None:
                self._mirrors[session_id] = mirror
            else:  # a bad line, a lock held too long: the follower says why
                watch = watch_session_sync(self._watched(session_id), start="all")
                mirror = self._mirrors[session_id] = Mirror(watch)
                self._refresh(session_id, mirror, send=False)
                if self._mirrors.get(session_id) is not mirror:  # a symlink after all: not a session
                    return None
            self._version += 1
            mirror.version = self._version
        mirror.used = time.monotonic()
        return mirror

    def _read(self, session_id: str) -> Mirror | None:
        """A new mirror, the session read a piece at a time; None if a line is not an item.

        Nothing is rendered: the builder learns the handoff calls and the items are counted,
        for the changes that follow. The follower is made with ``start="now"`` (it indexes the
        lines, parses none) while this shared lock is held, so it starts from exactly the
        bytes read here (a shared lock is granted beside another shared one).
        """
        builder = ViewBuilder()
        try:
            with Transaction(
                self.directory / filename_for(session_id), write=False, timeout=self.lock_timeout
            ) as file:
                if not file.exists:
                    return None
                # The follower first: what its look holds (the whole file and its lines) is
                # let go before the file is read again.
                watch = watch_session_sync(self._watched(session_id), start="now")
                watch.catch_up()
                count = prime(builder, reads.scan_file(file.fd, file.size))
                if count is None:
                    watch.close()
                    return None
                seen = _stat_key(os.fstat(file.fd))
        except (JSONLSessionError, OSError):
            return None
        finally:
            give_back()  # what the follower's first look freed
        return Mirror(watch, count=count, builder=builder, fresh=False, seen=seen)

    def _views(self, session_id: str, mirror: Mirror) -> list[bytes]:
        """The mirror's views, rendered from the file now if they are not kept. Under the lock.

        Read under the session's shared lock with the mirror brought up to date under it, so
        the views are exactly those of the mirror's version. Kept while an event stream
        follows the session (a ``reset`` for each page that falls behind shares them).
        """
        if mirror.views is not None:
            return mirror.views
        views: list[bytes] = []
        try:
            with Transaction(
                self.directory / filename_for(session_id), write=False, timeout=self.lock_timeout
            ) as file:
                self._refresh(session_id, mirror)
                if mirror.views is not None:  # a problem, a failure: the refresh rendered them
                    return mirror.views
                if file.exists:
                    scans = reads.scan_file(file.fd, file.size)
                    views = [kept_view(view) for view in views_of_scans(scans, torn_tail=False)]
        except (JSONLSessionError, OSError):
            return []
        mirror.views = views
        return views

    def _watched(self, session_id: str) -> WatchedFile:
        return WatchedFile(self.directory, session_id, self.lock_timeout)

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
        """A change the folder watch saw: a note for the index; the mirror (if any) looks for itself."""
        with self._lock:
            if self._subscribers.get(None):
                self._version += 1
                payload: dict[str, Any] = {
                    "kind": change.kind,
                    "version": self._version,
                    "count": change.count,
                    "session": change.session_id,
                }
                if change.kind == "failed":
                    payload["kind"] = "problem"
                    payload["message"] = f"{change.session_id}: {change.error}"
                note = Event(self._version, script_json(orjson.dumps(payload)))
                for subscriber in self._subscribers[None]:
                    subscriber.put(note)
            mirror = self._mirrors.get(change.session_id)
            if mirror is not None:
                self._refresh(change.session_id, mirror)

    def _refresh_all(self) -> None:
        with self._lock:
            for session_id, mirror in list(self._mirrors.items()):
                self._refresh(session_id, mirror)

    def _refresh(self, session_id: str, mirror: Mirror, *, send: bool = True) -> None:
        """Bring the mirror up to date with the file, and queue each change for its pages. Under the lock."""
        try:
            changes = mirror.watch.catch_up()
        except UnsafePathError:  # a symlink or FIFO in the session's place: not a session
            mirror.watch.close()
            self._mirrors.pop(session_id, None)
            return
        except LockTimeout as error:  # its lock held too long: keep the items, say why
            mirror.problem = str(error)
            mirror.cuts += 1  # what happened meanwhile is not known
            self._send(
                session_id, mirror, {"kind": "problem", "message": f"{session_id}: {error}"}, send=send
            )
            return
        except (JSONLSessionError, OSError) as error:  # a malformed line...: show what the file holds
            mirror.watch.close()
            mirror.watch = watch_session_sync(
                WatchedFile(self.directory, session_id, self.lock_timeout), start="all"
            )
            mirror.fresh = True
            mirror.problem = str(error)
            mirror.builder.reset()
            mirror.views = self._read_leniently(session_id)
            mirror.count = len(mirror.views)
            mirror.cuts += 1
            payload = {"kind": "problem", "message": f"{session_id}: {error}", "count": len(mirror.views)}
            self._send(session_id, mirror, payload, mirror.views, send=send)
            return
        if mirror.fresh:  # the first look: every item, as one "appended" (or nothing)
            mirror.fresh = False
            mirror.builder.reset()
            items = [item for change in changes if change.kind == "appended" for item in change.items]
            if not send:  # a new mirror: no page has anything yet
                mirror.views = self._render(mirror, items)
                mirror.count = len(items)
                return
            changes = [Change("replaced", session_id, items, len(items))]  # after a failure
        mirror.problem = ""
        # Views are made for the pages that follow the session, and kept only if they are.
        wanted = (send and bool(self._subscribers.get(session_id))) or mirror.views is not None
        for change in changes:
            views: Sequence[bytes] = ()
            if change.kind == "appended":
                views = self._render(mirror, change.items, start=mirror.count, wanted=wanted)
                if mirror.views is not None:
                    mirror.views.extend(views)
                mirror.count += len(change.items)
            elif change.kind == "removed":
                mirror.cuts += 1
                mirror.count = max(0, mirror.count - change.count)
                if mirror.views is not None:
                    del mirror.views[mirror.count :]
            else:  # "cleared", "replaced", "deleted"
                mirror.cuts += 1
                mirror.builder.reset()
                views = self._render(mirror, change.items, wanted=wanted)
                if mirror.views is not None:
                    mirror.views = list(views)
                mirror.count = len(change.items)
            self._send(session_id, mirror, {"kind": change.kind, "count": change.count}, views, send=send)

    def _render(
        self, mirror: Mirror, items: list[Any], *, start: int = 0, wanted: bool = True
    ) -> list[bytes]:
        """The items' views after the mirror's; if not ``wanted``, only what the builder must remember."""
        builder = mirror.builder
        if not wanted:
            for item in items:
                builder.note(item)
            return []
        return [kept_view(builder.view(item, start + n)) for n, item in enumerate(items, 1)]

    def _read_leniently(self, session_id: str) -> list[bytes]:
        """The views of a session the follower failed to read, as ``show --html`` reads it (or none)."""
        try:
            data = read_file(
                self.directory / filename_for(session_id),
                lock_timeout=min(self.lock_timeout, LENIENT_READ_TIMEOUT),
            )
        except (OSError, ValueError, JSONLSessionError):
            return []
        return [kept_view(view) for view in views_of_lines(data)]

    def _send(
        self,
        session_id: str,
        mirror: Mirror,
        payload: dict[str, Any],
        views: Sequence[bytes] = (),
        *,
        send: bool = True,
    ) -> None:
        """Give the mirror its next version and queue the change for the session's pages."""
        self._version += 1
        mirror.version = self._version
        if not send:
            return
        payload["version"] = self._version
        head = script_json(orjson.dumps(payload))[:-1] + b',"items":['
        event = Event(self._version, head, tuple(views), b"]}")
        for subscriber in self._subscribers.get(session_id, ()):
            subscriber.put(event)

    def catch_up(self, subscriber: Subscription) -> Event:
        """A reset for a subscriber that fell behind, made from the mirror now, under the lock."""
        with self._lock:
            session_id = subscriber.session_id
            mirror = self._mirrors.get(session_id) if session_id is not None else None
            if (
                session_id is None or mirror is None
            ):  # the index (or a session forgotten meanwhile: nothing to show)
                event = Event(self._version, b'{"kind":"reset","version":%d' % self._version, (), b"}")
            else:
                views = tuple(self._views(session_id, mirror))
                problem = f"{session_id}: {mirror.problem}" if mirror.problem else ""
                head = b'{"kind":"reset","version":%d,"count":%d,"problem":%s,"items":[' % (
                    mirror.version,
                    len(views),
                    script_json(orjson.dumps(problem)),
                )
                event = Event(mirror.version, head, views, b"]}")
            subscriber.restart(event)
        got = subscriber.get(0)
        assert got is not None
        return got

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

    def unsubscribe(self, subscriber: Subscription) -> None:
        with self._lock:
            subscribers = self._subscribers.get(subscriber.session_id)
            if subscribers is not None:
                subscribers.discard(subscriber)
                if not subscribers:
                    del self._subscribers[subscriber.session_id]
            mirror = self._mirrors.get(subscriber.session_id) if subscriber.session_id is not None else None
            if mirror is not None:
                mirror.used = time.monotonic()  # kept LINGER_SECONDS more (a reload)


def _stat_key(stat: os.stat_result) -> tuple[int, ...]:
    """What changes with any write to a session file (its size, times, or the file itself)."""
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
