"""A folder of sessions: list, open, delete and fork them."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import storage
from .codec import encode_items
from .errors import SessionExistsError, SessionNotFoundError
from .locking import DEFAULT_LOCK_TIMEOUT, MISSING, FileHandle, fsync_directory
from .naming import id_for
from .session import DEFAULT_DIRECTORY, JSONLSession, check_lock_timeout


@dataclass(frozen=True)
class SessionInfo:
    """One session file as ``SessionDirectory.list()`` reports it."""

    session_id: str
    path: Path
    items: int
    size: int
    modified: datetime


class SessionDirectory:
    """The sessions stored in one folder.

    Example:
        >>> store = SessionDirectory("sessions")                   # doctest: +SKIP
        >>> [info.session_id for info in store.list()]             # doctest: +SKIP
        ['convo_123', 'support-42']
        >>> store.fork("convo_123", "convo_123-retry", at=4)       # doctest: +SKIP
    """

    def __init__(
        self,
        directory: str | os.PathLike[str] = DEFAULT_DIRECTORY,
        *,
        durable: bool = True,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    ) -> None:
        self.directory = Path(directory)
        self.durable = durable
        self.lock_timeout = check_lock_timeout(lock_timeout)

    def open(self, session_id: str, **options: Any) -> JSONLSession:
        """A :class:`JSONLSession` in this folder (options as for its constructor)."""
        options.setdefault("durable", self.durable)
        options.setdefault("lock_timeout", self.lock_timeout)
        return JSONLSession(session_id, self.directory, **options)

    def ids(self) -> list[str]:
        """Session ids in this folder, sorted; files that are not sessions are ignored."""
        return sorted(session_id for session_id, _ in self._entries())

    def exists(self, session_id: str) -> bool:
        """True if the session has a file (a symlink in its place does not count)."""
        try:
            return stat.S_ISREG(os.lstat(self.open(session_id).path).st_mode)
        except FileNotFoundError:
            return False

    def list(self) -> list[SessionInfo]:
        """Every session with its item count, size and modification time, newest first."""
        infos = []
        for session_id, entry in self._entries():
            path = self.directory / entry.name
            handle = FileHandle(path)
            fd = handle.acquire(write=False, create=False, timeout=self.lock_timeout)
            if fd == MISSING:
                continue  # deleted since we listed the folder
            try:
                file_stat = os.fstat(fd)
                items = storage.count_items(fd)
            finally:
                handle.release()
                handle.close()
            modified = datetime.fromtimestamp(file_stat.st_mtime, tz=timezone.utc)
            infos.append(SessionInfo(session_id, path, items, file_stat.st_size, modified))
        infos.sort(key=lambda info: (info.modified, info.session_id), reverse=True)
        return infos

    def delete(self, session_id: str) -> bool:
        """Delete a session's file under its lock; False if there was none.

        The ``.torn`` sidecar, if any, is kept: it holds bytes nobody has looked at yet.
        """
        handle = FileHandle(self.open(session_id).path)
        fd = handle.acquire(write=True, create=False, timeout=self.lock_timeout)
        if fd == MISSING:
            return False
        try:
            os.unlink(handle.path)
            if self.durable:
                fsync_directory(self.directory)
        finally:
            handle.release(invalidate=True)
        return True

    def fork(self, source_id: str, target_id: str, *, at: int | None = None) -> JSONLSession:
        """Copy the first ``at`` items (all when None) of one session to a new one.

        Raises:
            SessionExistsError: ``target_id`` already has items (nothing is overwritten); a FileExistsError.
            SessionNotFoundError: ``source_id`` does not exist; a FileNotFoundError.
        """
        source = self.open(source_id)
        target = self.open(target_id)
        if not source.path.is_file():
            raise SessionNotFoundError(source.path, "no such session")
        items = source.get_items_sync()
        if at is not None:
            if at < 0:
                raise ValueError(f"at must be >= 0, not {at}")
            items = items[:at]
        encode_items(items)  # refuse what cannot be stored before the target file exists
        with target.rewrite() as draft:
            if draft.items:
                raise SessionExistsError(target.path, "session already exists; not overwriting it")
            draft.items = items
        return target

    def _entries(self) -> Iterator[tuple[str, os.DirEntry[str]]]:
        try:
            entries = list(os.scandir(self.directory))
        except FileNotFoundError:
            return
        for entry in entries:
            session_id = id_for(entry.name)
            if session_id is not None and entry.is_file(follow_symlinks=False):
                yield session_id, entry
