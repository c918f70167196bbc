"""Follow sessions live, the way ``tail -F`` follows a log, but item by item.

Several processes share one conversation: an agent writes it, a UI or a log viewer follows it.
A watch yields :class:`Change` objects, in order, that say what happened to the file: items
``appended``, items ``removed`` from the end (``pop_item``), ``cleared``, ``replaced`` (the file
was rewritten or swapped, e.g. by an editor or ``git checkout``) or ``deleted``. Applying them
with :func:`apply` to a list rebuilds the session's items.

    async for change in session.watch(start="all"):      # or: for change in session.watch_sync()
        apply(change, items)

How it works, and why:

* **Wake-ups** come from ``watchfiles`` (inotify on Linux, polling where events are
  unavailable, e.g. network file systems: ``force_polling=True``). It watches the *directory*,
  so creation, deletion and rename of the file are seen too (an inotify watch on a deleted
  file is useless). ``watchfiles`` checks for events every ``step`` milliseconds, which sets
  both the latency (one to two steps) and the idle CPU (each check is a wake-up). So the step
  adapts: ``step_ms`` (1 ms) for a second after each change, while a conversation is active,
  and ``idle_step_ms`` (4 ms) once it is quiet (about 1.5 % of a core here; 10 ms halves that
  and makes the first change after a pause arrive ~12 ms late). Every second the file is also checked
  whether or not an event came, so nothing is missed even if events are lost.
* **What changed** is worked out from the file itself, not from the events, so several writes
  between two wake-ups, or events that arrive late, cannot confuse it. The file is read under
  the shared lock (a reader never sees half of an ``add_items``). The watcher remembers the
  file's identity (device, inode) and, for every line it knows, where it starts and ends and
  a hash of its bytes. On each wake-up it checks that the last known line is still there,
  byte for byte; if not, it walks back to the last line that is (pops truncate lines from the
  end), reports the lines after it as removed, and reads what follows as appended. A new
  identity (rename over the file, delete and re-create) means the whole file is read again.
* **Partial lines**: bytes after the last newline are held back until they form a valid item
  (a writer without the lock may be half-way through a line; a killed writer's torn tail is
  moved away by the next writer). A valid last line without its newline is an item, as for
  ``get_items``.
* **Malformed lines**: a complete line that is not a JSON object raises
  :class:`~jsonl_session.MalformedLineError` (file and line number) from the iterator, which
  then ends, exactly as ``get_items`` would raise. The file is not touched.

Limits: an edit *in place* (same inode, no rename) that leaves the last line byte-identical
at the same offset is not seen until that line changes; the library itself and common editors
replace files by rename, which is always seen. A watch waits for another process's lock for
up to ``lock_timeout`` seconds and then raises :class:`~jsonl_session.LockTimeout`.
"""

from __future__ import annotations

import asyncio
import collections
import os
import platform
import threading
import time
import warnings
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Protocol

from . import codec, storage
from .errors import LockTimeout, MalformedLineError, UnsafePathError
from .locking import BUSY, DEFAULT_LOCK_TIMEOUT, MISSING, FileHandle, backoff_delays
from .naming import filename_for, id_for

if TYPE_CHECKING:
    from typing_extensions import Self

    from .session import JSONLSession

__all__ = [
    "Change",
    "DirectoryWatch",
    "DirectoryWatchSync",
    "SessionWatch",
    "SessionWatchSync",
    "apply",
    "watch_directory",
    "watch_directory_sync",
    "watch_session",
    "watch_session_sync",
]

Kind = Literal["appended", "removed", "cleared", "replaced", "deleted"]
Start = Literal["all", "now"] | int

DEFAULT_STEP_MS = 1
DEFAULT_IDLE_STEP_MS = 4
DEFAULT_POLL_DELAY_MS = 300
HOT_SECONDS = 1.0
"""How long after a change the watcher keeps checking every ``step_ms`` before slowing down."""
TICK_SECONDS = 1.0
"""How often the file is checked even without an event (a safety net for lost events)."""
_MISSING_DIRECTORY_CHECK = 0.1
_DEBOUNCE_MS = 10  # only matters when many distinct files change at once (directory watch)


class StopFlag(Protocol):
    """Anything with ``is_set()``: ``threading.Event``, ``asyncio.Event``, ``anyio.Event``..."""

    def is_set(self) -> bool: ...


@dataclass(frozen=True)
class Change:
    """One thing that happened to a session file, as seen by a watch.

    Attributes:
        kind: ``"appended"``: ``items`` were added at the end.
            ``"removed"``: the last ``count`` items were removed (``pop_item``).
            ``"cleared"``: the file has no items any more (``clear_session``, or pops that emptied it).
            ``"replaced"``: the file was rewritten or swapped (rename, editor, ``git checkout``, or
            cleared and refilled between two wake-ups); ``items`` is the whole new list.
            ``"deleted"``: the file was removed; the session has no items.
        session_id: Which session changed (useful with :func:`watch_directory`).
        items: The appended items, or for ``replaced`` the complete new list; empty otherwise.
        count: How many items were appended or removed (for ``replaced``, ``len(items)``).

    Example:
        >>> Change("appended", "convo_123", [{"role": "user", "content": "Hi"}], 1)
        Change(kind='appended', session_id='convo_123', items=[{'role': 'user', 'content': 'Hi'}], count=1)
    """

    kind: Kind
    session_id: str
    items: list[Any] = field(default_factory=list)
    count: int = 0


def apply(change: Change, items: list[Any]) -> list[Any]:
    """Apply ``change`` to ``items`` in place (and return it), to mirror the session in memory.

    With ``start="all"`` the list then always equals the session's items as of the change.
    With ``start="now"`` or a number it holds the newest items seen (removing more items than
    the list holds empties it), until a ``replaced`` change hands over the full list.

    Example:
        >>> items = [{"n": 1}, {"n": 2}]
        >>> apply(Change("removed", "s", count=1), items)
        [{'n': 1}]
        >>> apply(Change("appended", "s", [{"n": 3}], 1), items)
        [{'n': 1}, {'n': 3}]
    """
    if change.kind == "appended":
        items.extend(change.items)
    elif change.kind == "removed":
        del items[max(0, len(items) - change.count) :]
    elif change.kind == "replaced":
        items[:] = change.items
    elif change.kind in ("cleared", "deleted"):
        items.clear()
    else:
        raise ValueError(f"unknown change kind {change.kind!r}")
    return items


# -- public entry points --------------------------------------------------------------------


def watch_session(
    session: JSONLSession,
    *,
    start: Start = "all",
    stop_event: StopFlag | None = None,
    force_polling: bool | None = None,
    poll_delay_ms: int = DEFAULT_POLL_DELAY_MS,
    step_ms: int = DEFAULT_STEP_MS,
    idle_step_ms: int = DEFAULT_IDLE_STEP_MS,
) -> SessionWatch:
    """Follow one session live: an async iterator (and async context manager) of :class:`Change`.

    Args:
        session: The session to follow; its file need not exist yet.
        start: ``"all"`` (default): first replay the current items as one ``appended`` change,
            then follow. ``"now"``: only changes from now on. An int ``n``: the newest ``n``
            items, then follow.
        stop_event: Anything with ``is_set()`` (``asyncio.Event``, ``threading.Event``). Once
            set, the watch delivers the changes already in the file and ends, so a list kept
            with :func:`apply` then equals the file (if nobody writes any more).
        force_polling: Poll the directory instead of using inotify, for network file systems.
            None: as ``watchfiles`` decides (the ``WATCHFILES_FORCE_POLLING`` variable, WSL).
        poll_delay_ms: How often to poll when polling.
        step_ms: How often to check for events while the session is active (latency).
        idle_step_ms: How often to check once it has been quiet for a second (idle CPU).

    Leaving the ``async with`` block, ``aclose()``, or breaking out of the loop and dropping
    the object stops it at once; its thread ends within one step.

    Example:
        >>> async with session.watch(start="now") as changes:     # doctest: +SKIP
        ...     async for change in changes:
        ...         print(change.kind, change.items)
    """
    follower = _Follower(session.directory, session.session_id, session.lock_timeout)
    options = _Options(start, force_polling, poll_delay_ms, step_ms, idle_step_ms)
    return SessionWatch(follower, options, stop_event)


def watch_session_sync(
    session: JSONLSession,
    *,
    start: Start = "all",
    stop_event: StopFlag | None = None,
    force_polling: bool | None = None,
    poll_delay_ms: int = DEFAULT_POLL_DELAY_MS,
    step_ms: int = DEFAULT_STEP_MS,
    idle_step_ms: int = DEFAULT_IDLE_STEP_MS,
    raise_interrupt: bool = True,
) -> SessionWatchSync:
    """Blocking twin of :func:`watch_session`: an iterator (and context manager) of :class:`Change`.

    Runs in the calling thread (no thread of its own). ``raise_interrupt``: Ctrl-C while
    waiting closes the watch and re-raises ``KeyboardInterrupt`` (default), or, if False,
    just ends the iteration.

    Example:
        >>> items = []
        >>> with session.watch_sync() as changes:                 # doctest: +SKIP
        ...     for change in changes:
        ...         apply(change, items)
    """
    follower = _Follower(session.directory, session.session_id, session.lock_timeout)
    options = _Options(start, force_polling, poll_delay_ms, step_ms, idle_step_ms)
    return SessionWatchSync(follower, options, stop_event, raise_interrupt)


def watch_directory(
    directory: str | os.PathLike[str],
    *,
    start: Start = "all",
    stop_event: StopFlag | None = None,
    force_polling: bool | None = None,
    poll_delay_ms: int = DEFAULT_POLL_DELAY_MS,
    step_ms: int = DEFAULT_STEP_MS,
    idle_step_ms: int = DEFAULT_IDLE_STEP_MS,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
) -> DirectoryWatch:
    """Follow every session in a folder: sessions appearing, changing and being deleted.

    Yields the same :class:`Change` objects as :func:`watch_session`; ``session_id`` says
    which session. ``start`` applies to each session present at the start (replayed in id
    order); a session that appears later is always delivered in full. A deleted session
    yields ``deleted``; the folder need not exist yet.

    Example:
        >>> sessions: dict[str, list] = {}
        >>> async for change in watch_directory("sessions"):        # doctest: +SKIP
        ...     if change.kind == "deleted":
        ...         sessions.pop(change.session_id, None)
        ...     else:
        ...         apply(change, sessions.setdefault(change.session_id, []))
    """
    follower = _Follower(Path(directory), None, lock_timeout)
    options = _Options(start, force_polling, poll_delay_ms, step_ms, idle_step_ms)
    return DirectoryWatch(follower, options, stop_event)


def watch_directory_sync(
    directory: str | os.PathLike[str],
    *,
    start: Start = "all",
    stop_event: StopFlag | None = None,
    force_polling: bool | None = None,
    poll_delay_ms: int = DEFAULT_POLL_DELAY_MS,
    step_ms: int = DEFAULT_STEP_MS,
    idle_step_ms: int = DEFAULT_IDLE_STEP_MS,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    raise_interrupt: bool = True,
) -> DirectoryWatchSync:
    """Blocking twin of :func:`watch_directory` (see :func:`watch_session_sync` for ``raise_interrupt``).

    Example:
        >>> for change in watch_directory_sync("sessions", start="now"):   # doctest: +SKIP
        ...     print(change.session_id, change.kind, change.count)
    """
    follower = _Follower(Path(directory), None, lock_timeout)
    options = _Options(start, force_polling, poll_delay_ms, step_ms, idle_step_ms)
    return DirectoryWatchSync(follower, options, stop_event, raise_interrupt)


# -- one file: what has been delivered, and how to bring it up to date ---------------------


@dataclass
class _Line:
    start: int  # offset of the first byte of the item (after a BOM)
    end: int  # offset just past its last byte (the newline is not included)
    data: bytes
    item: Any = None
    decoded: bool = False


class _Tail:
    """What a watch knows of one session file: identity, and offsets and hashes of its lines.

    The index holds three numbers per line (start, end, hash), not the items, so following a
    long session costs 24 bytes per item.
    """

    def __init__(self, path: Path, session_id: str) -> None:
        self.path = path
        self.session_id = session_id
        self.exists = False
        self.stat_key: tuple[int, int, int, int] | None = None  # for cheap directory ticks
        self._identity: tuple[int, int] | None = None
        self._starts = array("q")
        self._ends = array("q")
        self._hashes = array("q")
        self._consumed = 0  # bytes read up to here (after the last newline, or a valid tail)
        self._handle = FileHandle(path, durable=False)
        self.start: Start | None = None
        """Which items already in the file the first poll delivers (None: all of them, as new)."""

    def poll(self) -> list[Change] | None:
        """Compare the file with what was delivered; the changes, or None if the lock is busy."""
        fd = self._handle.try_acquire(write=False, create=False)
        if fd == BUSY:
            return None  # and ``start`` still applies to the next try
        start, self.start = self.start, None
        if fd == MISSING:
            return self._gone()
        try:
            stat = os.fstat(fd)
            changes = self._update(fd, stat, start)
            self.stat_key = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
            return changes
        finally:
            self._handle.release()
            self._handle.close()  # hold no descriptor between wake-ups (one per session adds up)

    def close(self) -> None:
        self._handle.close()

    def _gone(self) -> list[Change]:
        self.stat_key = None
        if not self.exists:
            return []
        count = len(self._starts)
        self._reset(None)
        self.exists = False
        return [Change("deleted", self.session_id, [], count)]

    def _update(self, fd: int, stat: os.stat_result, start: Start | None) -> list[Change]:
        identity = (stat.st_dev, stat.st_ino)
        size = stat.st_size
        known = len(self._starts)
        if identity != self._identity:
            # First sight, re-created, or a new file renamed over the path: read it all.
            lines, consumed = self._scan(fd, 0, size)
            items = self._decode(fd, _selected(lines, start))
            self._commit(lines, consumed, keep=0)
            self._identity = identity
            self.exists = True
            if start is not None or known == 0:
                return [self._appended(items)] if items else []
            if not lines:
                return [Change("cleared", self.session_id, [], known)]
            return [Change("replaced", self.session_id, items, len(items))]

        # Same file. Normally only appended to: the last known line is where we left it.
        # Otherwise lines were truncated away (pop, clear), possibly followed by new ones,
        # or the file was edited in place: walk back to the last line still intact.
        intact = known
        while intact and not self._intact(fd, size, intact - 1):
            intact -= 1
        if known and intact == known and size >= self._consumed:
            resume = self._consumed
        else:
            resume = self._ends[intact - 1] if intact else 0
        lines, consumed = self._scan(fd, resume, size)
        items = self._decode(fd, lines)
        self._commit(lines, consumed, keep=intact)
        removed = known - intact
        if removed and not intact:
            if not items:
                return [Change("cleared", self.session_id, [], removed)]
            return [Change("replaced", self.session_id, items, len(items))]
        changes = []
        if removed:
            changes.append(Change("removed", self.session_id, [], removed))
        if items:
            changes.append(self._appended(items))
        return changes

    def _appended(self, items: list[Any]) -> Change:
        return Change("appended", self.session_id, items, len(items))

    def _intact(self, fd: int, size: int, index: int) -> bool:
        """Is line ``index`` still there, byte for byte, and still followed by a newline or the end?"""
        start, end = self._starts[index], self._ends[index]
        if end > size:
            return False
        length = end - start + (1 if end < size else 0)
        data = storage.read_range(fd, start, start + length)
        if hash(data[: end - start]) != self._hashes[index]:
            return False
        return end == size or data[end - start :] == b"\n"

    def _scan(self, fd: int, resume: int, size: int) -> tuple[list[_Line], int]:
        """Split the bytes from ``resume`` to the end into lines; hold back a partial last line."""
        data = storage.read_range(fd, resume, size)
        base = resume
        if resume == 0 and data.startswith(codec.BOM):
            data = data[len(codec.BOM) :]
            base = len(codec.BOM)
        lines: list[_Line] = []
        position = 0
        while True:
            newline = data.find(b"\n", position)
            if newline < 0:
                break
            line = data[position:newline]
            if not codec.is_blank(line):
                lines.append(_Line(base + position, base + newline, line))
            position = newline + 1
        consumed = base + position
        tail = data[position:]
        if tail and not codec.is_blank(tail):
            # A valid last line without its newline is an item (as for get_items); anything
            # else is a line still being written, or a torn tail: wait until it is complete.
            item = storage.parse_item(tail)
            if item is not None:
                lines.append(_Line(base + position, base + len(data), tail, item, True))
                consumed = base + len(data)
        return lines, consumed

    def _decode(self, fd: int, lines: Iterable[_Line]) -> list[Any]:
        items = []
        with codec.gc_paused():
            for line in lines:
                if not line.decoded:
                    line.item = storage.parse_item(line.data)
                    if line.item is None:
                        problem = storage.describe_bad_line(line.data) or "not a valid item"
                        raise MalformedLineError(self.path, problem, storage.line_number(fd, line.start))
                items.append(line.item)
        return items

    def _commit(self, lines: list[_Line], consumed: int, *, keep: int) -> None:
        del self._starts[keep:], self._ends[keep:], self._hashes[keep:]
        for line in lines:
            self._starts.append(line.start)
            self._ends.append(line.end)
            self._hashes.append(hash(line.data))
        self._consumed = consumed

    def _reset(self, identity: tuple[int, int] | None) -> None:
        self._identity = identity
        self._commit([], 0, keep=0)


def _selected(lines: list[_Line], start: Start | None) -> list[_Line]:
    """The lines of a first read that ``start`` asks to deliver (the rest are only indexed)."""
    if start is None or start == "all":
        return lines
    if start == "now":
        return []
    return lines[len(lines) - start :] if start else []


# -- the sessions a watch follows: one, or every session in a folder -------------------------


class _Follower:
    """The tails of one watch, and which of them still wait for another process's lock."""

    def __init__(self, directory: Path, session_id: str | None, lock_timeout: float) -> None:
        self.directory = directory
        self.lock_timeout = lock_timeout
        self.only = filename_for(session_id) if session_id is not None else None
        self.tails: dict[str, _Tail] = {}
        self.pending: dict[str, float] = {}  # file name -> when we started waiting for its lock
        if session_id is not None and self.only is not None:
            self.tails[self.only] = _Tail(directory / self.only, session_id)

    def wants(self, name: str) -> bool:
        return name == self.only if self.only is not None else id_for(name) is not None

    def start(self, start: Start) -> list[Change]:
        names = (
            [self.only]
            if self.only is not None
            else sorted(self._listdir(), key=lambda name: id_for(name) or "")
        )
        for name in names:
            tail = self._tail(name)
            if tail is not None:
                tail.start = start
        return self.refresh(names)

    def refresh(self, names: Iterable[str]) -> list[Change]:
        """Poll these files (and those still waiting for a lock)."""
        return self._poll(set(names) | set(self.pending))

    def tick(self, *, thorough: bool = False) -> list[Change]:
        """The safety net: look at every file without an event (``thorough``: read them all)."""
        if self.only is not None:
            return self.refresh([self.only])
        present = set(self._listdir())
        names = present - set(self.tails)  # new sessions
        for name, tail in self.tails.items():
            if thorough or name not in present or tail.stat_key != _stat_key(tail.path):
                names.add(name)
        return self.refresh(names)

    def close(self) -> None:
        for tail in self.tails.values():
            tail.close()

    def _poll(self, names: Iterable[str]) -> list[Change]:
        changes: list[Change] = []
        for name in names:
            tail = self._tail(name)
            if tail is None:
                continue
            try:
                found = tail.poll()
            except UnsafePathError:
                if self.only is not None:
                    raise  # the session itself is unusable (get_items raises the same)
                del self.tails[name]  # a symlink in a folder of sessions: not a session
                continue
            if found is None:
                waiting_since = self.pending.setdefault(name, time.monotonic())
                if time.monotonic() - waiting_since > self.lock_timeout:
                    raise LockTimeout(tail.path, self.lock_timeout)
                continue
            self.pending.pop(name, None)
            changes.extend(found)
            if self.only is None and not tail.exists:
                del self.tails[name]  # deleted (or never there): forget it
        return changes

    def _tail(self, name: str) -> _Tail | None:
        tail = self.tails.get(name)
        if tail is None:
            session_id = id_for(name)
            if session_id is None:
                return None
            tail = self.tails[name] = _Tail(self.directory / name, session_id)
        return tail

    def _listdir(self) -> list[str]:
        try:
            entries = list(os.scandir(self.directory))
        except (FileNotFoundError, NotADirectoryError):
            return []
        return [
            entry.name for entry in entries if self.wants(entry.name) and entry.is_file(follow_symlinks=False)
        ]


def _stat_key(path: Path) -> tuple[int, int, int, int] | None:
    try:
        stat = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return None
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


# -- wake-ups: watchfiles on the directory, with an adaptive step ---------------------------


@dataclass(frozen=True)
class _Options:
    start: Start
    force_polling: bool | None
    poll_delay_ms: int
    step_ms: int
    idle_step_ms: int

    def __post_init__(self) -> None:
        start = self.start
        if isinstance(start, bool) or not (
            start in ("all", "now") or (isinstance(start, int) and start >= 0)
        ):
            raise ValueError(f'start must be "all", "now" or a non-negative int, not {start!r}')
        for name in ("poll_delay_ms", "step_ms", "idle_step_ms"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int (milliseconds), not {value!r}")


class _Either:
    """A stop flag that is set when any of its flags is (handed to watchfiles as one event)."""

    def __init__(self, *flags: StopFlag | None) -> None:
        self.flags = [flag for flag in flags if flag is not None]

    def is_set(self) -> bool:
        return any(flag.is_set() for flag in self.flags)


Wake = set[str] | Literal["tick", "stop", "signal"]


class _Notifier:
    """Waits for changes in the directory with ``watchfiles``' Rust watcher.

    ``watchfiles.watch()`` fixes ``step`` for its lifetime; the Rust watcher it wraps
    (``RustNotify``, documented as the low-level API) takes it per call, which lets the step
    grow when the session is quiet without losing events between two calls.
    """

    def __init__(self, follower: _Follower, options: _Options) -> None:
        self.directory = follower.directory
        self.wants = follower.wants
        self.step_ms = options.step_ms
        self.idle_step_ms = max(options.idle_step_ms, options.step_ms)
        self.poll_delay_ms = options.poll_delay_ms
        self.force_polling = _default_force_polling(options.force_polling)
        self.tick_seconds = TICK_SECONDS
        if self.force_polling:  # polling may miss a change within one mtime tick: check as often
            self.tick_seconds = min(TICK_SECONDS, options.poll_delay_ms / 1000)
        self._rust: Any = None
        self._identity: tuple[int, int] | None = None
        self._hot_until = 0.0
        self._next_tick = time.monotonic() + self.tick_seconds
        self._open()

    def wait(self, stop: StopFlag) -> Wake:
        """Block until files we want changed (their names), a tick is due, or stop/Ctrl-C."""
        while True:
            now = time.monotonic()
            if now >= self._next_tick:
                self._next_tick = now + self.tick_seconds
                self._check_directory()
                return "tick"
            if self._rust is None:  # the directory does not exist (yet)
                if _sleep_unless(
                    stop, min(_MISSING_DIRECTORY_CHECK, self._next_tick - now), self.idle_step_ms
                ):
                    return "stop"
                if self.directory.is_dir():
                    self._next_tick = 0.0
                continue
            hot = self._hot_until > now
            step = self.step_ms if hot else self.idle_step_ms
            until = min(self._next_tick, self._hot_until) if hot else self._next_tick
            timeout_ms = max(1, int((until - now) * 1000))
            result = self._rust.watch(_DEBOUNCE_MS, step, timeout_ms, stop)
            if result in ("stop", "signal"):
                return result  # type: ignore[no-any-return]
            if result == "timeout":
                continue
            names = set()
            for _, path in result:
                name = os.path.basename(path)
                if self.wants(name):
                    names.add(name)
                elif os.path.normpath(path) == os.path.normpath(self.directory):
                    self._next_tick = 0.0  # the folder itself was moved or deleted
            if names:
                self._hot_until = time.monotonic() + HOT_SECONDS
                return names

    def close(self) -> None:
        if self._rust is not None:
            self._rust.close()
            self._rust = None

    def _open(self) -> None:
        from watchfiles._rust_notify import RustNotify

        try:
            stat = os.stat(self.directory)
        except FileNotFoundError:
            self._rust, self._identity = None, None
            return
        try:
            self._rust = RustNotify(
                [str(self.directory)], False, self.force_polling, self.poll_delay_ms, False, False
            )
        except (OSError, RuntimeError) as exc:
            if self.force_polling or not self.directory.is_dir():
                raise
            # No inotify here (e.g. the per-user watch limit is reached; watchfiles reports
            # that as FileNotFoundError): poll instead of failing.
            warnings.warn(
                f"{self.directory}: file system events unavailable ({exc}); polling every "
                f"{self.poll_delay_ms} ms instead",
                RuntimeWarning,
                stacklevel=2,
            )
            self.force_polling = True
            self.tick_seconds = min(self.tick_seconds, self.poll_delay_ms / 1000)
            self._rust = RustNotify([str(self.directory)], False, True, self.poll_delay_ms, False, False)
        self._identity = (stat.st_dev, stat.st_ino)

    def _check_directory(self) -> None:
        """Re-watch the folder if it was created, deleted or replaced since the last tick."""
        try:
            stat = os.stat(self.directory)
            identity: tuple[int, int] | None = (stat.st_dev, stat.st_ino)
        except FileNotFoundError:
            identity = None
        if identity != self._identity or self._rust is None:
            self.close()
            if identity is not None:
                self._open()
            else:
                self._identity = None


def _sleep_unless(stop: StopFlag, seconds: float, step_ms: int) -> bool:
    """Sleep up to ``seconds`` in steps, returning True as soon as ``stop`` is set."""
    deadline = time.monotonic() + max(0.0, seconds)
    while True:
        if stop.is_set():
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(remaining, step_ms / 1000))


def _default_force_polling(force_polling: bool | None) -> bool:
    """As ``watchfiles`` decides: the ``WATCHFILES_FORCE_POLLING`` variable, else only on WSL."""
    if force_polling is not None:
        return force_polling
    variable = os.environ.get("WATCHFILES_FORCE_POLLING")
    if variable:
        return variable.lower() not in {"false", "disable", "disabled"}
    uname = platform.uname()
    return "microsoft-standard" in uname.release.lower() and uname.system.lower() == "linux"


# -- the blocking iterator ------------------------------------------------------------------


class _SyncWatch:
    """Iterator and context manager running in the caller's thread."""

    def __init__(
        self, follower: _Follower, options: _Options, stop_event: StopFlag | None, raise_interrupt: bool
    ) -> None:
        self._follower = follower
        self._options = options
        self._user_stop = stop_event
        self._closing = threading.Event()
        self._stop = _Either(self._closing, stop_event)
        self._raise_interrupt = raise_interrupt
        self._queue: collections.deque[Change] = collections.deque()
        self._notifier: _Notifier | None = None
        self._started = False
        self._finished = False
        self._busy = threading.Lock()  # held while __next__ runs; close() from another thread waits

    def __iter__(self) -> Self:
        return self

    def __next__(self) -> Change:
        with self._busy:
            try:
                while not self._queue:
                    if self._finished or self._closing.is_set():
                        self._release()
                        raise StopIteration
                    self._queue.extend(self._step())
                return self._queue.popleft()
            except KeyboardInterrupt:
                self._closing.set()
                self._release()
                if self._raise_interrupt:
                    raise
                raise StopIteration from None
            except BaseException as exc:
                if not isinstance(exc, StopIteration):
                    self._closing.set()
                    self._release()
                raise

    def __enter__(self) -> Self:
        with self._busy:
            if not self._started:
                try:
                    self._queue.extend(self._step())
                except BaseException:
                    self._closing.set()
                    self._release()
                    raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop now (from any thread); the iteration ends and resources are released."""
        self._closing.set()
        if self._busy.acquire(timeout=5):  # another thread's __next__ ends within one step
            try:
                self._release()
            finally:
                self._busy.release()

    def _step(self) -> list[Change]:
        follower = self._follower
        if not self._started:
            self._started = True
            self._notifier = _Notifier(follower, self._options)  # watch first, then read
            return follower.start(self._options.start)
        if follower.pending:  # another process holds a lock: retry shortly
            delays = backoff_delays()
            changes: list[Change] = []
            while follower.pending and not self._closing.is_set():
                time.sleep(next(delays))
                changes.extend(follower.refresh(()))
            return changes
        assert self._notifier is not None
        wake = self._notifier.wait(self._stop)
        if wake == "tick":
            return follower.tick()
        if wake == "signal":
            raise KeyboardInterrupt
        if wake == "stop":
            self._finished = True
            if self._closing.is_set():
                return []
            return _drain(follower)  # the user's stop event: deliver what is there, then end
        return follower.refresh(wake)

    def _release(self) -> None:
        self._finished = True
        if self._notifier is not None:
            self._notifier.close()
            self._notifier = None
        self._follower.close()

    def __del__(self) -> None:
        self._closing.set()
        if self._notifier is not None:
            self._notifier.close()


def _drain(follower: _Follower) -> list[Change]:
    """Every change up to now, waiting (up to ``lock_timeout``) for locks held elsewhere."""
    changes = follower.tick(thorough=True)
    delays = backoff_delays()
    while follower.pending:
        time.sleep(next(delays))
        changes.extend(follower.refresh(()))
    return changes


class SessionWatchSync(_SyncWatch):
    """What :func:`watch_session_sync` returns: ``for change in watch``, or ``with watch: ...``."""


class DirectoryWatchSync(_SyncWatch):
    """What :func:`watch_directory_sync` returns: ``for change in watch``, or ``with watch: ...``."""


# -- the asynchronous iterator --------------------------------------------------------------


class _Mailbox:
    """What the notifier thread has seen since the event loop last looked."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.names: set[str] = set()
        self.tick = False
        self.stopped = False
        self.error: BaseException | None = None
        self.signalled = False

    def post(self, wake: Wake | BaseException) -> bool:
        """Record a wake-up; True if the loop must be woken (it is not already)."""
        with self.lock:
            if isinstance(wake, BaseException):
                self.error = wake
            elif wake == "tick":
                self.tick = True
            elif wake in ("stop", "signal"):
                self.stopped = True
            elif isinstance(wake, set):
                self.names |= wake
            first, self.signalled = not self.signalled, True
            return first

    def take(self) -> tuple[set[str], bool, bool, BaseException | None]:
        with self.lock:
            taken = (self.names, self.tick, self.stopped, self.error)
            self.names, self.tick, self.signalled = set(), False, False
            return taken


def _pump(
    notifier: _Notifier,
    stop: StopFlag,
    mailbox: _Mailbox,
    loop: asyncio.AbstractEventLoop,
    wake: asyncio.Event,
    done: threading.Event,
) -> None:
    """The notifier thread: wait in watchfiles, and wake the event loop when something happened.

    Holds no reference to the watch object, so dropping the watch stops the thread.
    """
    try:
        while True:
            try:
                result: Wake | BaseException = notifier.wait(stop)
            except BaseException as exc:  # noqa: BLE001  (handed to the loop, raised there)
                result = exc
            if mailbox.post(result):
                try:
                    loop.call_soon_threadsafe(wake.set)
                except RuntimeError:  # the loop is closed: nobody is listening any more
                    return
            if isinstance(result, BaseException) or result in ("stop", "signal"):
                return
    finally:
        notifier.close()
        done.set()


class _AsyncWatch:
    """Async iterator and async context manager; a small thread waits in watchfiles."""

    def __init__(self, follower: _Follower, options: _Options, stop_event: StopFlag | None) -> None:
        self._follower = follower
        self._options = options
        self._user_stop = stop_event
        self._closing = threading.Event()
        self._queue: collections.deque[Change] = collections.deque()
        self._mailbox = _Mailbox()
        self._wake: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._thread_done = threading.Event()
        self._started = False
        self._finished = False

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Change:
        try:
            while not self._queue:
                if self._finished or self._closing.is_set():
                    self._release()
                    raise StopAsyncIteration
                self._queue.extend(await self._step())
            return self._queue.popleft()
        except (StopAsyncIteration, asyncio.CancelledError):
            raise
        except BaseException:
            await self.aclose()
            raise

    async def __aenter__(self) -> Self:
        if not self._started:
            try:
                self._queue.extend(await self._step())
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
        self._closing.set()
        self._finished = True
        deadline = time.monotonic() + 5
        while self._thread is not None and not self._thread_done.is_set() and time.monotonic() < deadline:
            await asyncio.sleep(0.001)
        if self._thread is not None and self._thread_done.is_set():
            self._thread.join(timeout=1)
        self._release()

    async def _step(self) -> list[Change]:
        follower = self._follower
        if not self._started:
            self._started = True
            loop = asyncio.get_running_loop()
            self._wake = asyncio.Event()
            notifier = _Notifier(follower, self._options)  # watch first, then read
            self._thread = threading.Thread(
                target=_pump,
                args=(
                    notifier,
                    _Either(self._closing, self._user_stop),
                    self._mailbox,
                    loop,
                    self._wake,
                    self._thread_done,
                ),
                name=f"jsonl-session-watch:{follower.directory / (follower.only or '')}",
                daemon=True,
            )
            self._thread.start()
            return follower.start(self._options.start)
        if follower.pending:
            delays = backoff_delays()
            changes: list[Change] = []
            while follower.pending and not self._closing.is_set():
                await asyncio.sleep(next(delays))
                changes.extend(follower.refresh(()))
            return changes
        assert self._wake is not None
        await self._wake.wait()
        self._wake.clear()
        names, tick, stopped, error = self._mailbox.take()
        if error is not None:
            raise error
        if stopped:
            self._finished = True
            if self._closing.is_set():
                return []
            return await _drain_async(follower)
        if tick:
            return follower.tick()
        return follower.refresh(names)

    def _release(self) -> None:
        self._finished = True
        self._closing.set()
        self._follower.close()

    def __del__(self) -> None:
        self._closing.set()  # the thread sees it within one step and ends


async def _drain_async(follower: _Follower) -> list[Change]:
    changes = follower.tick(thorough=True)
    delays = backoff_delays()
    while follower.pending:
        await asyncio.sleep(next(delays))
        changes.extend(follower.refresh(()))
    return changes


class SessionWatch(_AsyncWatch):
    """What :func:`watch_session` returns: ``async for change in watch``, or ``async with watch``."""


class DirectoryWatch(_AsyncWatch):
    """What :func:`watch_directory` returns: ``async for change in watch``, or ``async with watch``."""
