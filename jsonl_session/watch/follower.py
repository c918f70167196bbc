"""Reading the files a watch follows: one session, or every session in a folder.

Each look at a file takes the shared lock (a reader never sees half of an ``add_items``),
reads what the engine asks for and lets go of the descriptor again: a folder watch over
thousands of sessions holds none between wake-ups. A file whose lock is held elsewhere is
retried (``pending``) until ``lock_timeout``.

A folder watch keeps going when one session cannot be read (malformed or conflicted
lines, no permission, its lock held for longer than ``lock_timeout``): that session is
reported once as a ``failed`` change and followed again from scratch once it reads.
A single-session watch raises instead, as ``get_items`` would.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path

from ..core import change_mark, reads
from ..core.errors import LockTimeout, SessionFileError, UnsafePathError
from ..core.locking import BUSY, MISSING, FileHandle
from ..core.names import filename_for, id_for
from .changes import Change
from .engine import FileState, Known, Seen, Start

TICK_SESSIONS = 100
"""Sessions a folder watch's periodic tick looks at per second, on average (see ``Follower.tick``)."""


class FileTail:
    """One followed file: its engine state, and a look at the file under the shared lock."""

    def __init__(self, path: Path, session_id: str) -> None:
        self.path = path
        self.session_id = session_id
        self.state = FileState(path, session_id)
        self.start: Start | None = None
        """What the first look delivers of the items already there (None: all, as new)."""
        self.stat_key: tuple[int, int, int, int] | None = None  # for cheap folder ticks (ctime: chmod too)
        self.failed: str | None = None  # the last error reported for this file (folder watch)
        self._handle = FileHandle(path, durable=False)

    def poll(self) -> list[Change] | None:
        """Compare the file with what was delivered: the changes, or None if the lock is busy."""
        try:
            with self._handle.try_locked(write=False, create=False) as fd:
                if fd == BUSY:
                    return None  # and ``start`` still applies to the next try
                start, self.start = self.start, None
                if isinstance(start, Known) and start.index is not None:
                    self.state.adopt(start, start.index)  # the caller read those bytes: only what follows
                    start = None
                if fd == MISSING:
                    self.stat_key = None
                    if isinstance(start, Known):  # what the caller holds is gone
                        return [Change("deleted", self.session_id)]
                    return self.state.gone()
                stat = os.fstat(fd)
                seen = _seen(fd, stat)
                offset = self.state.wanted(seen)
                changes = self.state.update(seen, reads.read_range(fd, offset, seen.size), offset, start)
                if changes is None:  # more than appends happened after all: compare the whole file
                    changes = self.state.update(seen, reads.read_range(fd, 0, seen.size), 0, start)
                    assert changes is not None
                self.stat_key = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_ctime_ns)
                return changes
        finally:
            self._handle.close()  # hold no descriptor between wake-ups (one per session adds up)

    def restart(self) -> None:
        """Forget everything delivered (after a failure): the next look reads the file afresh."""
        self.state = FileState(self.path, self.session_id)
        self.stat_key = None

    def close(self) -> None:
        self._handle.close()


class Follower:
    """The files one watch follows, and which of them wait for another process's lock."""

    def __init__(self, directory: Path, session_id: str | None, lock_timeout: float) -> None:
        self.directory = directory
        self.lock_timeout = lock_timeout
        self.only = filename_for(session_id) if session_id is not None else None
        self.tails: dict[str, FileTail] = {}
        self.pending: dict[str, float] = {}  # file name -> when we started waiting for its lock
        self._ticks = 0
        if session_id is not None and self.only is not None:
            self.tails[self.only] = FileTail(directory / self.only, session_id)

    @property
    def label(self) -> str:
        return str(self.directory / self.only) if self.only is not None else str(self.directory)

    def wants(self, name: str) -> bool:
        """Is this file name one of ours (the session, or any session file in the folder)?"""
        return name == self.only if self.only is not None else id_for(name) is not None

    def start(self, start: Start) -> list[Change]:
        """The first look: ``start`` says which of the items already there to deliver."""
        names = (
            [self.only] if self.only is not None else sorted(self._listdir(), key=lambda n: id_for(n) or "")
        )
        for name in names:
            tail = self._tail(name)
            if tail is not None:
                tail.start = start
        return self.refresh(names)

    def refresh(self, names: Iterable[str]) -> list[Change]:
        """Look at these files (and those still waiting for a lock)."""
        changes: list[Change] = []
        for name in dict.fromkeys([*names, *self.pending]):  # in order (the replay is in id order)
            changes.extend(self._poll(name))
        return changes

    def tick(self, *, thorough: bool = False, periodic: bool = False) -> list[Change]:
        """The safety net: look at every file without an event (``thorough``: read them all).

        ``periodic`` (the once-a-second tick): a folder of many sessions is looked at only
        every ``len(sessions) / TICK_SESSIONS`` ticks, so a folder watch idles at about the
        cost of a single-session watch (events, not ticks, bring changes; ticks are for lost events).
        """
        if self.only is not None:
            return self.refresh([self.only])
        self._ticks += 1
        if periodic and self._ticks % max(1, len(self.tails) // TICK_SESSIONS):
            return self.refresh(())
        present = set(self._listdir())
        names = present - set(self.tails)  # new sessions
        for name, tail in self.tails.items():
            if thorough or name not in present or tail.stat_key != _stat_key(tail.path):
                names.add(name)
        return self.refresh(names)

    def close(self) -> None:
        for tail in self.tails.values():
            tail.close()

    def _poll(self, name: str) -> list[Change]:
        tail = self._tail(name)
        if tail is None:
            return []
        try:
            found = tail.poll()
            if found is None:
                waiting_since = self.pending.setdefault(name, time.monotonic())
                if time.monotonic() - waiting_since > self.lock_timeout:
                    raise LockTimeout(tail.path, self.lock_timeout)
                return []
        except UnsafePathError:
            if self.only is not None:
                raise  # the session itself is unusable (get_items raises the same)
            self._forget(name)  # a symlink or FIFO in a folder of sessions: not a session
            return []
        except (SessionFileError, LockTimeout, OSError) as error:
            if self.only is not None:
                raise
            return self._failed(name, tail, error)
        self.pending.pop(name, None)
        if tail.failed is not None:  # it reads again: hand over the whole list
            tail.failed = None
            found = [Change("replaced", tail.session_id, *_all(found))] if tail.state.exists else []
            if not tail.state.exists:
                found = [Change("deleted", tail.session_id)]
        if self.only is None and not tail.state.exists:
            self._forget(name)  # deleted (or never there): forget it
        return found

    def _failed(self, name: str, tail: FileTail, error: BaseException) -> list[Change]:
        """Report a session that cannot be read (once per distinct problem) and follow the others."""
        self.pending.pop(name, None)
        tail.restart()
        # Look again when the file changes; a lock held too long is tried again at every tick.
        tail.stat_key = None if isinstance(error, LockTimeout) else _stat_key(tail.path)
        message = f"{type(error).__name__}: {error}"
        if tail.failed == message:
            return []
        tail.failed = message
        return [Change("failed", tail.session_id, error=error)]

    def _forget(self, name: str) -> None:
        self.pending.pop(name, None)
        tail = self.tails.pop(name, None)
        if tail is not None:
            tail.close()

    def _tail(self, name: str) -> FileTail | None:
        tail = self.tails.get(name)
        if tail is None:
            session_id = id_for(name)
            if session_id is None:
                return None
            tail = self.tails[name] = FileTail(self.directory / name, session_id)
        return tail

    def _listdir(self) -> list[str]:
        try:
            entries = list(os.scandir(self.directory))
        except (FileNotFoundError, NotADirectoryError):
            return []
        return [
            entry.name for entry in entries if self.wants(entry.name) and entry.is_file(follow_symlinks=False)
        ]


def seen_of(fd: int) -> Seen:
    """The file open on ``fd`` as a follower's look sees it (call under the shared lock; see ``Known``)."""
    return _seen(fd, os.fstat(fd))


def _seen(fd: int, stat: os.stat_result) -> Seen:
    return Seen((stat.st_dev, stat.st_ino), stat.st_size, change_mark.read(fd))


def _all(found: list[Change]) -> tuple[list[object], int]:
    """After a failure the tail starts afresh, so its first look is one ``appended`` of everything."""
    items = [item for change in found if change.kind == "appended" for item in change.items]
    return items, len(items)


def _stat_key(path: Path) -> tuple[int, int, int, int] | None:
    try:
        stat = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_ctime_ns)
