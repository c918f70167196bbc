"""A folder of sessions: list, open, delete and fork them.

``jsonl-session ls`` imports this module and nothing it does not need to list a folder: the
session class (and the settings, turns and features it brings), lineage hashing and turn
splitting are imported by the methods that use them, and a listing keeps the names and
times ``os.scandir`` and ``os.stat`` give until someone asks for a ``Path`` or a ``datetime``
(``tests/project/test_startup.py``: pathlib and datetime were ~8 ms of a 45 ms ``ls``).
"""

from __future__ import annotations

import os
import stat
import warnings
from collections.abc import Callable, Iterator, Sequence

from ..core import errors, item_times, reads, sidecar_files
from ..core.errors import JSONLSessionError, SessionFileError, SessionNotFoundError, SkippedSessionWarning
from ..core.locking import DEFAULT_LOCK_TIMEOUT, check_lock_timeout, fsync_directory
from ..core.names import DEFAULT_DIRECTORY, META, filename_for, id_for
from ..core.transaction import Transaction
from .session_info import SessionInfo, in_datetime_range, utc_seconds

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from .store import JSONLSession

# DEFAULT_LOCK_TIMEOUT and id_for are core's, offered here to the CLI, which imports no core module.
__all__ = [
    "DEFAULT_LOCK_TIMEOUT",
    "SessionDirectory",
    "SessionInfo",
    "id_for",
    "last_activity",
    "utc_seconds",
]


def last_activity(path: str, mtime: float) -> float:
    """When the session at ``path`` was last active (``ls``): its newest item's time, else ``mtime``.

    The time comes from the ``.times`` sidecar (see ``core.item_times``); a session without
    one, or whose newest item has no time (written by hand), is as recent as its file.
    """
    newest = item_times.newest_item_time(path)
    return mtime if newest is None else newest


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
        self._folder = _folder_name(directory)
        self._directory: Path | None = None
        self.durable = durable
        self.lock_timeout = check_lock_timeout(lock_timeout)

    @property
    def directory(self) -> Path:
        """The folder (made a ``Path`` on first use: ``ls`` only needs its name)."""
        if self._directory is None:
            from pathlib import Path

            self._directory = Path(self._folder)
        return self._directory

    @directory.setter
    def directory(self, directory: str | os.PathLike[str]) -> None:
        self._folder = _folder_name(directory)
        self._directory = None

    def open(self, session_id: str, **options: Any) -> JSONLSession:
        """A :class:`JSONLSession` in this folder (options as for its constructor)."""
        from .store import JSONLSession

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

    def list(
        self,
        *,
        on_error: Callable[[Path, Exception], None] | None = None,
        tags: Sequence[str] = (),
        owner: str | None = None,
    ) -> list[SessionInfo]:
        """Every session with its item count, size and modification time, newest first.

        Which sessions have a paused run, a lineage or metadata is read off the one folder
        listing; only forks and sessions with metadata cost a read more (their ``.lineage`` for
        ``forked_from``, their ``.meta`` for ``title``, ``tags`` and ``owner``).

        With ``tags``, only the sessions that have every one of them (exactly, case included);
        with ``owner``, only those it owns. A session without metadata is then left out without
        being read.

        A session that cannot be read (no permission, its lock held past ``lock_timeout``, a
        broken lineage or metadata file) is skipped and passed to ``on_error(path, error)``; by default a
        :class:`SkippedSessionWarning` names it. One such file used to fail the whole list.
        """
        infos = []
        listing = self._scan()
        names = {entry.name for entry in listing}
        if isinstance(tags, str):
            raise TypeError("tags must be a list of strings, not one string")
        wanted = frozenset(tags)
        for session_id, entry in self._entries(listing):
            path = self._path_of(entry.name)
            kinds = sidecar_files.present(entry.name, names)
            if (wanted or owner is not None) and META not in kinds:
                continue  # no metadata: it cannot match, and is not read
            try:
                about = _about(path) if META in kinds else (None, (), None)
                if not wanted <= set(about[1]) or (owner is not None and about[2] != owner):
                    continue
                counted = _count(path, self.lock_timeout)
                if counted is not None and not in_datetime_range(counted[0].st_mtime):
                    raise SessionFileError(
                        path, "modified outside the years 1-9999, which datetime cannot hold"
                    )
                forked_from = _forked_from(path) if sidecar_files.LINEAGE in kinds else None
            except (OSError, JSONLSessionError) as exc:
                if on_error is None:
                    warnings.warn(
                        SkippedSessionWarning(f"{errors.describe_error(exc)}; skipped"), stacklevel=2
                    )
                else:
                    from pathlib import Path

                    on_error(Path(path), exc)
                continue
            if counted is None:
                continue  # deleted since we listed the folder
            file_stat, items = counted
            infos.append(
                SessionInfo._listed(
                    session_id,
                    path,
                    file_stat,
                    items,
                    paused=sidecar_files.RUN in kinds,
                    forked_from=forked_from,
                    about=about,
                )
            )
        # newest first, as ``modified`` orders them (to the microsecond), without making it
        infos.sort(key=lambda info: (info._microseconds, info.session_id), reverse=True)
        return infos

    def session_path(self, session_id: str) -> str:
        """Where ``session_id``'s file is, as ``str(self.open(session_id).path)`` says, but without
        making a session or a ``Path`` (``grep`` over a folder names thousands, and starts fast).

        Example:
            >>> SessionDirectory("sessions").session_path("user/42")
            'sessions/user%2F42.jsonl'
        """
        return self._path_of(filename_for(session_id))

    def _path_of(self, file_name: str) -> str:
        """``str(self.directory / file_name)``, without pathlib (``ls``, ``grep``)."""
        return file_name if self._folder == "." else os.path.join(self._folder, file_name)

    def delete(self, session_id: str) -> bool:
        """Delete a session's file and its metadata under its lock; False if there was none.

        The lineage, usage log, paused run and metadata go first, then the session: a crash in
        between leaves a session without metadata, never metadata that a new session of the
        same id would inherit. The ``.torn`` sidecar, if any, is kept: it holds bytes nobody
        has looked at yet.
        """
        path = self.open(session_id).path
        with Transaction(path, write=True, timeout=self.lock_timeout) as file:
            if not file.exists:
                return False
            for kind in sidecar_files.KINDS:
                sidecar_files.remove(sidecar_files.sidecar(path, kind), durable=False)
            os.unlink(path)
            if self.durable:
                fsync_directory(self.directory)
        return True

    def fork(
        self, source_id: str, target_id: str, *, at: int | None = None, at_turn: int | None = None
    ) -> JSONLSession:
        """Copy the first ``at`` items, or the first ``at_turn`` whole turns (all when neither), to a new id.

        The new session's ``<file>.jsonl.lineage`` records the source, how many items were
        copied, their hash and when (see :attr:`JSONLSession.lineage`). To redo turn K,
        fork ``at_turn=K - 1``.

        Raises:
            SessionExistsError: ``target_id`` already has items (nothing is overwritten); a FileExistsError.
            SessionNotFoundError: ``source_id`` does not exist; a FileNotFoundError.
            TooFewTurnsError: ``at_turn`` is beyond the source's last turn; a ValueError.

        Example:
            >>> store.fork("convo_123", "convo_123-retry", at_turn=2).lineage.items   # doctest: +SKIP
            6
        """
        from ..history.lineage import new_lineage
        from ..history.turns import TooFewTurnsError, split_turns

        if at is not None and at_turn is not None:
            raise ValueError("give at (items) or at_turn (turns), not both")
        for name, value in (("at", at), ("at_turn", at_turn)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"{name} must be a non-negative int, not {value!r}")
        source = self.open(source_id)
        target = self.open(target_id)
        if not source.path.is_file():
            raise SessionNotFoundError(source.path, "no such session")
        items, times = source._all_items_with_times()  # the fork keeps their times
        if at is not None:
            items = items[:at]
        elif at_turn is not None:
            turns = split_turns(items)
            if at_turn > len(turns):  # was: all of it, exit 0 (issue 24)
                raise TooFewTurnsError(source.path, len(turns), f"fork at turn {at_turn}")
            items = items[: turns[at_turn].start] if at_turn < len(turns) else items
        target._write_fork(items, new_lineage(source_id, items), times[: len(items)])
        return target

    def _scan(self) -> Sequence[os.DirEntry[str]]:
        try:
            return list(os.scandir(self._folder))
        except FileNotFoundError:
            return []

    def _entries(
        self, listing: Sequence[os.DirEntry[str]] | None = None
    ) -> Iterator[tuple[str, os.DirEntry[str]]]:
        """Session files among ``listing`` (one ``scandir`` of the folder when not given)."""
        for entry in self._scan() if listing is None else listing:
            session_id = id_for(entry.name)
            if session_id is not None and entry.is_file(follow_symlinks=False):
                yield session_id, entry


def _count(path: str, lock_timeout: float) -> tuple[os.stat_result, int] | None:
    """The file's stat and item count, read under its shared lock; None if it is gone."""
    with Transaction(path, write=False, timeout=lock_timeout) as file:
        if not file.exists:
            return None
        return os.fstat(file.fd), reads.count_items(file.fd)


def _forked_from(path: str) -> str | None:
    """The session a fork was copied from (lineage is imported only when a folder has forks)."""
    from pathlib import Path

    from ..history.lineage import read_lineage

    lineage = read_lineage(Path(path))
    return lineage.source if lineage is not None else None


def _about(path: str) -> tuple[str | None, tuple[str, ...], str | None]:
    """Title, tags and owner from ``<file>.jsonl.meta`` (metadata is imported only when a folder has some)."""
    from pathlib import Path

    from ..history.metadata import read_metadata

    stored = read_metadata(Path(path))
    return stored.title, stored.tags, stored.owner


def _folder_name(directory: str | os.PathLike[str]) -> str:
    """The folder as ``str(Path(directory))`` writes it, without importing pathlib (``ls``).

    No empty or ``.`` parts (``""`` is ``"."``); two leading slashes are kept, as POSIX
    allows, three or more are one. Messages then name files as they did with ``Path``.
    """
    folder = os.fspath(directory)
    if not isinstance(folder, str):
        raise TypeError(f"directory must be a str or a str path, not {type(folder).__name__}")
    root = "//" if folder[:2] == "//" and folder[2:3] != "/" else "/" if folder[:1] == "/" else ""
    return root + "/".join(part for part in folder.split("/") if part not in ("", ".")) or "."
