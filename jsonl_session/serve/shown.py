"""A session that pages show: its follower, the version it is at, and what rendering its changes needs.

The hub keeps one :class:`ShownSession` per session a page has open, and drops it a while
after its last page went. The session reads, refreshes and renders itself: the hub hands it a
way to number versions, and queues the events its methods return for the session's pages.

Why a follower of its own: a page must start from exactly the state the next change applies
to. The follower is a :func:`~jsonl_session.watch.watch_session_sync` that is never started as
an iterator (so no inotify instance): only its ``catch_up()`` is called, when the folder watch
says the session changed. Its first look indexes the file's lines (``start="now"``: no item
parsed) and its later looks deliver the exact changes since, so the session, its version and
the events it makes always agree, whatever the folder watch had already seen.

One read per page: a new session's follower starts from the file as the page's shared lock
showed it (a :class:`~jsonl_session.watch.engine.Known`), and the page's own pass over the file
(``page``) hands back, when the page is written (:meth:`ShownSession.settle`), the index of its
lines for the follower and what rendering the next changes needs (how many items there are,
and the handoff calls a :class:`~jsonl_session.render.views.ViewBuilder` remembers). A change
that comes first makes the follower read the whole file from that position, and is rendered
after one more pass, under the session's shared lock.

The items, rendered (escaped JSON bytes, each in an allocation of its own size), are kept only
while an event stream may need them whole (a ``reset``): pages are streamed from the file.

A session that cannot be read (a malformed line, a conflict marker) is read once more,
leniently, as ``show --html`` reads it: every good item, and the bad lines as ``invalid``
views, numbered by the file's lines. Its pages get those views with the problem (a ``problem``
event carrying ``items``), instead of an empty list under a "live" dot; once it reads again it
comes as ``replaced``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import orjson

from ..core import reads
from ..core.errors import JSONLSessionError, LockTimeout, UnsafePathError
from ..core.names import filename_for
from ..core.transaction import Transaction
from ..render.html import script_json
from ..render.views import (
    ItemView,
    ViewBuilder,
    encode_view,
    prime,
    read_file,
    views_of_lines,
    views_of_scans,
)
from ..watch import Change, watch_session_sync
from ..watch.engine import Known, LineIndex
from ..watch.follower import seen_of
from .subscriptions import Event

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["LENIENT_READ_TIMEOUT", "PageRead", "PageSnapshot", "ShownSession", "WatchedFile", "kept_view"]

LENIENT_READ_TIMEOUT = 2.0
"""At most this long waiting for a failed session's lock, to show what the file holds."""


@dataclass(frozen=True)
class WatchedFile:
    """What a session watch needs of a session (``watch.WatchedSession``), without opening one."""

    directory: Path
    session_id: str
    lock_timeout: float

    @property
    def path(self) -> Path:
        return self.directory / filename_for(self.session_id)


@dataclass
class PageSnapshot:
    """A session as one page shows it: the first ``size`` bytes of the file open on ``fd``, at ``version``.

    The descriptor was taken under the session's shared lock (:meth:`ShownSession.snapshot`):
    the page is read from it as the client takes it, and closing the snapshot closes it.
    """

    session_id: str
    path: Path
    fd: int
    size: int
    version: int
    cuts: int  # the session's count of cuts then (:meth:`ShownSession.settle`)
    problem: str

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        os.close(self.fd)


@dataclass(frozen=True)
class PageRead:
    """What a page's pass over its snapshot learnt for the session's next changes.

    ``count`` views were made (every line of the snapshot, the torn tail left out) with
    ``builder``, which remembers their handoff calls; ``bad`` says whether a line was not an
    item (then the session says why, as its follower would have); ``index`` holds the lines
    as a follower indexes them (the session's follower starts from it if it has not looked).
    """

    count: int
    builder: ViewBuilder
    bad: bool
    index: LineIndex | None = None


class ShownSession:
    """One session the pages of ``serve`` show: its follower, version, item count and views if kept.

    ``cuts`` counts the changes that were more than appends: a page streamed from the file
    while it stayed the same shows exactly the bytes of its version. Every method is called
    under the hub's lock; those that return events leave them for the hub to queue.
    """

    def __init__(self, source: WatchedFile, versions: Callable[[], int]) -> None:
        self.source = source
        self._versions = versions  # the hub's numbering, shared by every session and the index
        self.watch = watch_session_sync(source, start="now")
        self.version = 0
        self.count = 0  # items (views), numbered by position; known once ``primed``
        self.builder = ViewBuilder()
        self.primed = False  # count and builder are those of the follower's items
        self.views: list[bytes] | None = None  # None: not rendered (no event stream needs them whole)
        self.cuts = 0
        self.seen: tuple[int, ...] | None = None  # the file's stat when the follower last looked under a lock
        self.problem = ""  # why the session cannot be read now, until it can again
        self.fresh = False  # the follower's next look is a first one that delivers every item
        self.known: Known | None = None  # where the follower starts, while it has not looked yet
        self.gone = False  # a symlink or FIFO in the session's place: not a session
        self.used = time.monotonic()

    @property
    def path(self) -> Path:
        return self.source.path

    @property
    def shown_problem(self) -> str:
        return f"{self.source.session_id}: {self.problem}" if self.problem else ""

    def first_look(self, file: Any) -> None:
        """Where the follower starts: the file as the caller's shared lock shows it; nothing read.

        ``file`` is the caller's read ``Transaction``. The follower's first look starts from
        there: from the index of the page's pass over those bytes (:meth:`settle`), or, if a
        change or another reader comes first, from a read of the whole file (``Known``).
        """
        self.known = Known(seen_of(file.fd))
        self.watch.close()
        self.watch = watch_session_sync(self.source, start=self.known)
        self.seen = _stat_key(os.fstat(file.fd))
        self.version = self._versions()

    def close(self) -> None:
        self.watch.close()

    # -- pages ------------------------------------------------------------------------------

    def snapshot(self, file: Any, *, followed: bool) -> tuple[PageSnapshot | None, list[Event]]:
        """The page of the file open under the caller's shared lock (``file``, a read ``Transaction``),
        and the events to queue first; no page if the file is not a session after all.

        The follower is brought up to date under that lock (what changed before it is queued as
        usual), so the first ``size`` bytes are exactly the items of ``version``.
        """
        seen = _stat_key(os.fstat(file.fd))
        events: list[Event] = []
        if seen != self.seen:
            events = self.refresh(followed=followed)
            self.seen = seen
        if self.gone:
            return None, events
        self.used = time.monotonic()
        fd = os.dup(file.fd)
        page = PageSnapshot(
            self.source.session_id, self.path, fd, file.size, self.version, self.cuts, self.shown_problem
        )
        return page, events

    def settle(
        self, page: PageSnapshot, read: PageRead | None, *, followed: bool
    ) -> tuple[int, str, list[Event]]:
        """The version a streamed page is at (0 if the file was cut meanwhile), its problem, and events.

        A pop or a clear in place may have changed the bytes the page was streamed from; a page
        at version 0 gets a ``reset`` (the session as it is) when its events connect. A page
        read whole (``read``) primes a session that is not primed yet, or finds the bad line
        its follower did not parse.
        """
        events: list[Event] = []
        at_page = not self.gone and self.version == page.version and self.cuts == page.cuts
        if at_page and read is not None and not self.problem:  # the follower holds the page's bytes
            if read.bad:  # its follower parsed no old line: it says which and why now
                self._restart()
                events = self.refresh(followed=followed)
                return 0, self.shown_problem, events
            known = self.known
            if known is not None and read.index is not None and page.size == known.seen.size:
                self.watch.close()  # not looked yet: it starts from the page's pass, reads only what follows
                self.watch = watch_session_sync(self.source, start=Known(known.seen, read.index))
                self.known = None
            if not self.primed:
                self.count, self.builder, self.primed = read.count, read.builder, True
        try:
            unchanged = _stat_key(os.stat(page.path, follow_symlinks=False)) == self.seen
        except OSError:
            unchanged = False
        if not unchanged:  # a change not yet heard of by the folder watch
            events = self.refresh(followed=followed)
        same = not self.gone and self.cuts == page.cuts
        self.used = time.monotonic()
        return (page.version if same else 0), self.shown_problem, events

    def rendered(self) -> list[bytes]:
        """The session's views, rendered from the file now if they are not kept.

        Read under the session's shared lock with the follower brought up to date under it, so
        the views are exactly those of the session's version. Kept while an event stream
        follows the session (a ``reset`` for each page that falls behind shares them).
        """
        if self.views is not None:
            return self.views
        try:
            with Transaction(self.path, write=False, timeout=self.source.lock_timeout) as file:
                self.refresh(followed=False)
                if self.views is not None:  # a problem, a failure: the refresh rendered them
                    return self.views
                if self.gone or not file.exists:
                    return []
                made = _pass(file.fd, file.size, render=True)
        except (JSONLSessionError, OSError):
            return []
        if made is None:  # a bad line: say why, with every line's view
            self._restart()
            self.refresh(followed=False)
            return self.views or []
        self.count, self.builder, views, self.primed = made[0], made[1], made[2] or [], True
        self.views = views
        return views

    def reset_event(self) -> Event:
        """A ``reset`` with every view and the problem, for a page that fell behind."""
        views = tuple(self.rendered())
        head = b'{"kind":"reset","version":%d,"count":%d,"problem":%s,"items":[' % (
            self.version,
            len(views),
            script_json(orjson.dumps(self.shown_problem)),
        )
        return Event(self.version, head, views, b"]}")

    def let_go(self) -> bool:
        """Drop the kept views (no event stream needs them whole); True if there were any."""
        kept, self.views = self.views is not None, None
        return kept

    # -- changes ----------------------------------------------------------------------------

    def refresh(self, *, followed: bool) -> list[Event]:
        """Bring the session up to date with the file; the events for its pages (``followed``: some).

        Views are made for the pages that follow the session, and kept only if they are.
        """
        if self.gone:
            return []
        session_id = self.source.session_id
        self.known = None  # the follower looks now
        try:
            if self.primed or self.fresh:
                changes = self.watch.catch_up()
            else:  # what the items before the changes leave in the builder: read with them, one lock
                with Transaction(self.path, write=False, timeout=self.source.lock_timeout) as file:
                    changes = self.watch.catch_up()
                    if changes and not self._prime(file, changes):
                        self._restart()  # a bad line: the follower says which, and why
                        return self.refresh(followed=followed)
        except UnsafePathError:
            self.gone = True
            self.watch.close()
            return []
        except LockTimeout as error:  # its lock held too long: keep the items, say why
            self.problem = str(error)
            self.cuts += 1  # what happened meanwhile is not known
            return [self._event({"kind": "problem", "message": f"{session_id}: {error}"})]
        except (JSONLSessionError, OSError) as error:  # a malformed line...: show what the file holds
            return self._failed(error)
        if self.fresh:  # a first look after a failure: every item, as one "replaced" (or nothing)
            self.fresh = False
            self.builder.reset()
            items = [item for change in changes if change.kind == "appended" for item in change.items]
            changes = [Change("replaced", session_id, items, len(items))]
        if not changes:
            return []
        self.problem = ""
        wanted = followed or self.views is not None
        events = []
        for change in changes:
            views: Sequence[bytes] = ()
            if change.kind == "appended":
                views = self._render(change.items, start=self.count, wanted=wanted)
                if self.views is not None:
                    self.views.extend(views)
                self.count += len(change.items)
            elif change.kind == "removed":
                self.cuts += 1
                self.count = max(0, self.count - change.count)
                if self.views is not None:
                    del self.views[self.count :]
            else:  # "cleared", "replaced", "deleted"
                self.cuts += 1
                self.builder.reset()
                views = self._render(change.items, wanted=wanted)
                if self.views is not None:
                    self.views = list(views)
                self.count = len(change.items)
            events.append(self._event({"kind": change.kind, "count": change.count}, views))
        return events

    def _prime(self, file: Any, changes: list[Change]) -> bool:
        """Count and builder as they were before ``changes``, from the file they left (under its lock).

        For changes that come before any page primed the session; False if a line is not an item.
        """
        made = _pass(file.fd, file.size, render=False) if file.exists else (0, ViewBuilder(), None)
        if made is None:
            return False
        count = made[0]
        for change in reversed(changes):
            if change.kind == "appended":
                count -= len(change.items)
            elif change.kind == "removed":
                count += change.count
            else:  # it sets the count itself: what came before no longer matters
                count = 0
                break
        self.count, self.builder, self.primed = max(0, count), made[1], True
        return True

    def _failed(self, error: Exception) -> list[Event]:
        """The session cannot be read: its views as the file holds them, and a follower that starts over."""
        self._restart()
        self.problem = str(error)
        self.views = _read_leniently(self.path, self.source.lock_timeout)
        self.count = len(self.views)
        self.cuts += 1
        message = f"{self.source.session_id}: {error}"
        return [self._event({"kind": "problem", "message": message, "count": self.count}, self.views)]

    def _restart(self) -> None:
        """A new follower whose first look delivers every item (to be parsed: a bad line raises)."""
        self.watch.close()
        self.watch = watch_session_sync(self.source, start="all")
        self.known = None
        self.fresh = True
        self.primed = True  # a fresh look renders everything again from the builder's start
        self.builder.reset()

    def _render(self, items: list[Any], *, start: int = 0, wanted: bool) -> list[bytes]:
        """The items' views after the session's; if not ``wanted``, only what the builder must remember."""
        builder = self.builder
        if not wanted:
            for item in items:
                builder.note(item)
            return []
        return [kept_view(builder.view(item, start + n)) for n, item in enumerate(items, 1)]

    def _event(self, payload: dict[str, Any], views: Sequence[bytes] = ()) -> Event:
        """The session's next version, and the change as its pages receive it."""
        self.version = self._versions()
        payload["version"] = self.version
        head = script_json(orjson.dumps(payload))[:-1] + b',"items":['
        return Event(self.version, head, tuple(views), b"]}")


def kept_view(view: ItemView) -> bytes:
    """A view as escaped JSON, in a bytes object of its own size.

    orjson's result sits in a 4 KB allocation however short it is: kept as they come, the
    views of a 10 MB session took 96 MB instead of 11 (tracemalloc).
    """
    return memoryview(script_json(encode_view(view))).tobytes()


def _pass(fd: int, size: int, *, render: bool) -> tuple[int, ViewBuilder, list[bytes] | None] | None:
    """The count of items in the first ``size`` bytes, a builder primed by them, and their views if
    ``render``; None if a line is not an item."""
    builder = ViewBuilder()
    scans = reads.scan_file(fd, size)
    if not render:
        count = prime(builder, scans)
        return None if count is None else (count, builder, None)
    views = []
    for view in views_of_scans(scans, builder, torn_tail=False):
        if view.tone == "invalid":
            return None
        views.append(kept_view(view))
    return len(views), builder, views


def _read_leniently(path: Path, lock_timeout: float) -> list[bytes]:
    """The views of a session the follower failed to read, as ``show --html`` reads it (or none)."""
    try:
        data = read_file(path, lock_timeout=min(lock_timeout, LENIENT_READ_TIMEOUT))
    except (OSError, ValueError, JSONLSessionError):
        return []
    return [kept_view(view) for view in views_of_lines(data)]


def _stat_key(stat: os.stat_result) -> tuple[int, ...]:
    """What changes with any write to a session file (its size, times, or the file itself)."""
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
