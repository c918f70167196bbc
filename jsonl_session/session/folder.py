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

from ..core import errors
from ..core.errors import JSONLSessionError, SessionFileError, SessionNotFoundError, SkippedSessionWarning
from ..core.locking import DEFAULT_LOCK_TIMEOUT, check_lock_timeout, fsync_directory
from ..core.names import DEFAULT_DIRECTORY, LINEAGE, META, RUN, TIMES, filename_for, id_for
from .listing import SessionInfo, in_datetime_range, utc_microseconds
from .listing_cache import ListingCache

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from pathlib import Path
    from typing import Any

    from .store import JSONLSession

__all__ = ["SessionDirectory"]


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
        limit: int | None = None,
        after: SessionInfo | str | None = None,
    ) -> list[SessionInfo]:
        """Sessions with their item count, size and last activity, most recently active first.

        Args:
            on_error: Called with ``(path, error)`` for a session that cannot be read (no
                permission, its lock held past ``lock_timeout``, a broken lineage or metadata
                file), which is skipped; by default a :class:`SkippedSessionWarning` names it.
            tags: Only sessions that have every one of these tags (exactly, case included).
            owner: Only sessions this owner owns. With ``tags`` or ``owner``, a session without
                metadata is left out without being read.
            limit: At most this many: a page, for a chat sidebar or any list that grows.
            after: The next page: the sessions after this one (the last :class:`SessionInfo` of
                the previous page, or its id) in the same order.

        Each session without a title gets its first user message, shortened, as its
        ``default_title``, and ``needs_merge`` when git left conflict markers in it (not counted
        as items). Only the sessions returned are read, and not even those when nothing
        changed: their item counts, default titles and last activity come from a cache kept
        outside the folder
        (:mod:`~jsonl_session.session.listing_cache`), taken only while each file's inode, size
        and times prove it unchanged. Ranking needs one ``lstat`` per session (two with a
        ``.times`` sidecar); a page of an unchanged folder opens no session file.

        Example:
            >>> store = SessionDirectory("sessions")
            >>> page = store.list(owner="user-42", limit=20)                # doctest: +SKIP
            >>> more = store.list(owner="user-42", limit=20, after=page[-1])  # doctest: +SKIP
        """
        if isinstance(tags, str):
            raise TypeError("tags must be a list of strings, not one string")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise ValueError(f"limit must be a non-negative int or None, not {limit!r}")
        listing = self._scan()
        names = {entry.name for entry in listing}
        wanted = frozenset(tags)
        cache = ListingCache.load(self._folder)
        ranked: list[tuple[float, str, str, str, os.stat_result, bool, float | None]] = []
        filtered = bool(wanted) or owner is not None
        for session_id, entry in self._entries(listing):
            name = entry.name
            has_meta = name + META in names
            if filtered and not has_meta:
                continue  # no metadata: it cannot match, and is not read
            path = self._path_of(name)
            try:
                file_stat = os.lstat(path)
                if not in_datetime_range(file_stat.st_mtime):
                    raise SessionFileError(
                        path, "modified outside the years 1-9999, which datetime cannot hold"
                    )
                newest = _newest_item_time(cache, name, path, file_stat, name + TIMES in names)
            except FileNotFoundError:
                continue  # deleted since we listed the folder
            except (OSError, JSONLSessionError) as exc:
                _skipped(on_error, path, exc)
                continue
            rank = utc_microseconds(file_stat.st_mtime) / 1_000_000 if newest is None else newest
            ranked.append((rank, session_id, name, path, file_stat, has_meta, newest))
        ranked.sort(reverse=True)  # by activity, then id: ids are unique, so no further field counts
        if after is not None:
            ranked = _after(ranked, after, self._folder)
        infos: list[SessionInfo] = []
        for _rank, session_id, name, path, file_stat, has_meta, newest in ranked:
            if limit is not None and len(infos) >= limit:
                break
            try:
                about = _about(path) if has_meta else (None, (), None)
                if not wanted <= set(about[1]) or (owner is not None and about[2] != owner):
                    continue
                counts = cache.counts(name, file_stat)
                # a set title needs no default: the first user message is read only without one
                title = None if about[0] is not None else cache.default_title(name, file_stat)
                if counts is None or title is False:
                    read = _read(
                        path, self.lock_timeout, file_stat, count=counts is None, title=title is False
                    )
                    if read is None:
                        continue  # deleted since we listed the folder
                    file_stat, counted, found = read
                    if counted is not None:
                        counts = counted
                        cache.remember_counts(name, file_stat, *counts)
                    if title is False:
                        title = found
                        cache.remember_default_title(name, file_stat, title)
                assert counts is not None
                items, markers = counts
                forked_from = _forked_from(path) if name + LINEAGE in names else None
                paused = name + RUN in names
            except (OSError, JSONLSessionError) as exc:
                _skipped(on_error, path, exc)
                continue
            infos.append(
                SessionInfo._listed(
                    session_id,
                    path,
                    file_stat,
                    items,
                    paused=paused,
                    forked_from=forked_from,
                    about=about,
                    activity=newest,
                    held=_held_back(path) if paused else 0,
                    default_title=title,
                    needs_merge=markers > 0,
                )
            )
        cache.save()
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
        folder = self._folder
        if folder == ".":
            return file_name
        return folder + file_name if folder.endswith("/") else f"{folder}/{file_name}"

    def delete(self, session_id: str) -> bool:
        """Delete a session's file and its metadata under its lock; False if there was none.

        The lineage, usage log, paused run and metadata go first, then the session: a crash in
        between leaves a session without metadata, never metadata that a new session of the
        same id would inherit. The ``.torn`` sidecar, if any, is kept: it holds bytes nobody
        has looked at yet.
        """
        from ..core import sidecar_files
        from ..core.transaction import Transaction  # rm only: a listing locks nothing

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
        items, times = source.all_items_with_times()  # the fork keeps their times
        if at is not None:
            items = items[:at]
        elif at_turn is not None:
            turns = split_turns(items)
            if at_turn > len(turns):  # not a silent copy of all of it
                raise TooFewTurnsError(source.path, len(turns), f"fork at turn {at_turn}")
            items = items[: turns[at_turn].start] if at_turn < len(turns) else items
        target.write_fork(items, new_lineage(source_id, items), times[: len(items)])
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


def _newest_item_time(
    cache: ListingCache, name: str, path: str, file_stat: os.stat_result, has_times: bool
) -> float | None:
    """When the session's newest item was added (its ``.times``), from the cache if nothing changed."""
    if not has_times:
        return None
    try:
        times_stat: os.stat_result | None = os.lstat(path + TIMES)
    except FileNotFoundError:
        times_stat = None
    cached = cache.activity(name, file_stat, times_stat)
    if cached is not False:
        return cached
    from ..core import item_times  # only when the cache cannot say: a warm ls reads no .times

    newest = item_times.newest_item_time(path)
    cache.remember_activity(name, file_stat, times_stat, newest)
    return newest


def _after(ranked: list[Any], after: SessionInfo | str, folder: str) -> list[Any]:
    """The rows ranked after ``after`` (a listed session, or an id in the folder)."""
    if isinstance(after, SessionInfo):
        key = (after.last_activity, after.session_id)
    elif isinstance(after, str):
        found = [(row[0], row[1]) for row in ranked if row[1] == after]
        if not found:
            raise SessionNotFoundError(
                os.path.join(folder, filename_for(after)), "no such session to list after"
            )
        key = found[0]
    else:
        raise TypeError(f"after must be a SessionInfo or a session id, not {type(after).__name__}")
    return [row for row in ranked if (row[0], row[1]) < key]


def _skipped(on_error: Callable[[Path, Exception], None] | None, path: str, exc: Exception) -> None:
    if on_error is None:
        warnings.warn(SkippedSessionWarning(f"{errors.describe_error(exc)}; skipped"), stacklevel=3)
    else:
        from pathlib import Path

        on_error(Path(path), exc)


def _read(
    path: str, lock_timeout: float, seen: os.stat_result, *, count: bool, title: bool
) -> tuple[os.stat_result, tuple[int, int] | None, str | None] | None:
    """What a listing reads of a session under its shared lock: the file's stat, its item count
    and conflict marker lines (when ``count``, or when the file is no longer as ``seen``), and its
    default title (when ``title``). None if the file is gone."""
    from ..core.transaction import Transaction  # only when the cache cannot say

    with Transaction(path, write=False, timeout=lock_timeout) as file:
        if not file.exists:
            return None
        from ..core import reads

        now = os.fstat(file.fd)
        unchanged = (now.st_ino, now.st_size, now.st_mtime_ns, now.st_ctime_ns) == (
            seen.st_ino,
            seen.st_size,
            seen.st_mtime_ns,
            seen.st_ctime_ns,
        )
        counts = reads.count_lines(file.fd) if count or not unchanged else None
        if not title:
            return now, counts, None
        from ..history.titles import listed_default_title

        return now, counts, listed_default_title(file.fd, now.st_size)


def _held_back(path: str) -> int:
    """How many items a paused run holds back (the sidecar code is imported only for a paused run)."""
    from ..core import sidecar_files

    return sidecar_files.held_back(path)


def _forked_from(path: str) -> str | None:
    """The session a fork was copied from (lineage is imported only when a folder has forks)."""
    from pathlib import Path

    from ..history.lineage import read_lineage

    lineage = read_lineage(Path(path))
    return lineage.source if lineage is not None else None


def _about(path: str) -> tuple[str | None, tuple[str, ...], str | None]:
    """Title, tags and owner from ``<file>.jsonl.meta`` (metadata is imported only when a folder has some).

    A ``.meta`` that cannot be read is named in a warning and the session listed without it.
    """
    from pathlib import Path

    from ..history.metadata import listed_metadata

    stored = listed_metadata(Path(path))
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
