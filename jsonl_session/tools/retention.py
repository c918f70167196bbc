"""Retention: archive the sessions nobody wrote for a while, and bring one back byte for byte.

:func:`prune` moves each session not written for ``older_than`` (its file and every sidecar,
``.torn`` fragments included) into ``<dir>/.archive/`` as one ``.tar.gz`` per session (see
``archive_files`` and ``docs/format.md``), then deletes it. :func:`restore` puts one back,
byte-identical, and deletes its archive. :func:`list_archives` says what can be restored, and
:func:`archived_usage` what the archived sessions cost (``stats`` adds it to its totals).
:func:`parse_duration` reads ``--older-than`` as people type it (``30d``, ``1d12h``).

**Order, so that no kill loses anything.** For each session, :func:`prune`:

1. takes the session's exclusive lock (``core.transaction.Transaction``): every writer of the
   session and of its sidecars holds it, so nothing changes while we copy;
2. looks again under the lock: if any file changed since the folder was listed (size, inode or
   time), or is now younger than the cutoff, the session was written while pruning and is
   skipped. Comparing with the listing as well as the cutoff matters: file times are coarse
   (a jiffy), so a write just after the cutoff may carry a time just before it;
3. writes the archive (a locked temporary file, fsynced, renamed, folder fsynced) and reads
   it back whole, checking every byte against what it read under the lock;
4. only then deletes the sidecars, then the session file (as ``rm`` does: never metadata a
   new session of the same id would inherit), and fsyncs the folder.

A kill before 3 ends leaves the session as it was (and perhaps a temporary file, which the
next run removes once no live process holds it). A kill after 3 leaves the session *and* its
archive: the next run finds that the newest archive of the session already holds every file
still there, byte for byte, so it verifies that archive and finishes the deletion instead of
archiving twice. :func:`restore` writes the sidecars, then the session file (each an atomic
replace, under the session's lock), then deletes the archive; a re-run after a kill finds
an empty session file or files identical to the archive's and finishes.

A session written after it was archived gets a new file (the writer that waited for the lock
sees the file gone and creates it): nothing is lost, the old items are in the archive, and
``restore`` refuses to overwrite the new file.

Example:
    >>> for outcome in prune("sessions", parse_duration("30d"), dry_run=False):   # doctest: +SKIP
    ...     print(outcome.session_id, outcome.action, outcome.reason or "")
    convo_12 archived
    >>> restore("sessions", "convo_12").files                                    # doctest: +SKIP
    ('convo_12.jsonl', 'convo_12.jsonl.usage')
"""

from __future__ import annotations

import os
import re
import stat
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from ..core import errors, reads, sidecar_files, storage, temp_files
from ..core.errors import JSONLSessionError, SessionExistsError, SessionFileError, SessionNotFoundError
from ..core.locking import fsync_directory
from ..core.names import TORN_SUFFIX
from ..core.transaction import Transaction
from ..history.usage import session_usage
from ..session.folder import SessionDirectory
from . import archive_files
from .archive_files import Member
from .archive_listing import ArchivedSession, archived_usage, list_archives

# What belongs to a session besides its file: the sidecars ``rm`` removes (so a new kind added
# there is archived too) and the ``.torn`` fragments of the session and of its usage log.
_SIDECARS = (
    *sidecar_files.KINDS,
    TORN_SUFFIX,
    *(kind + TORN_SUFFIX for kind in sidecar_files.KINDS),
)
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")

ARCHIVED = "archived"
WOULD_ARCHIVE = "would archive"
SKIPPED = "skipped"


@dataclass(frozen=True)
class PruneOutcome:
    """What :func:`prune` did, or would do (``dry_run``), with one old session.

    ``action`` is ``"archived"``, ``"would archive"`` or ``"skipped"`` (then ``reason`` says
    why: written while pruning, being edited, a lock held too long, an unreadable file...).
    """

    session_id: str
    action: str
    last_written: float
    """When the session or a sidecar was last written, seconds since the epoch."""
    files: tuple[str, ...]
    """The session file and its sidecars, by name in the folder."""
    size: int
    """Bytes in those files."""
    archive: Path | None = None
    """The archive that now holds the session (``archived`` only)."""
    reason: str | None = None
    failed: bool = False
    """Skipped because of an error (a lock held too long, an unreadable file, a full disk), not
    because the session was in use: the CLI's exit code is 1."""


@dataclass(frozen=True)
class RestoreOutcome:
    """What :func:`restore` put back: the files (by name), from which archive (now deleted)."""

    session_id: str
    archive: Path
    files: tuple[str, ...]
    already_restored: bool = False
    """A killed restore had put every file back already; only the archive was left to delete."""


def parse_duration(text: str) -> timedelta:
    """A duration as ``prune --older-than`` takes it: ``90m``, ``12h``, ``30d``, ``2w``, ``1d12h``.

    Units: ``s``, ``m`` (minutes), ``h``, ``d``, ``w``; a bare number is refused (which unit?).

    Example:
        >>> parse_duration("1d12h")
        datetime.timedelta(days=1, seconds=43200)

    Raises:
        ValueError: not such a duration.
    """
    cleaned = text.strip().lower().replace(" ", "")
    parts = _DURATION.findall(cleaned)
    if not cleaned or "".join(number + unit for number, unit in parts) != cleaned:
        raise ValueError(f"not a duration: {text!r} (examples: 90m, 12h, 30d, 2w, 1d12h)")
    return timedelta(seconds=sum(float(number) * _UNITS[unit] for number, unit in parts))


def prune(
    directory: SessionDirectory | str | os.PathLike[str],
    older_than: timedelta | float,
    *,
    dry_run: bool = True,
    now: float | None = None,
) -> list[PruneOutcome]:
    """Archive and delete every session of ``directory`` not written for ``older_than``.

    ``older_than`` is a ``timedelta`` or seconds. With ``dry_run`` (the default) nothing is
    touched: the outcomes say what would be archived. Sessions are taken in id order; one
    that cannot be archived is skipped with its reason and the others go on.

    Raises:
        UnsafePathError: ``<dir>/.archive`` is a symlink (or not a folder): nothing is archived.

    Example:
        >>> [o.session_id for o in prune("sessions", timedelta(days=30))]   # doctest: +SKIP
        ['convo_12', 'support-7']
    """
    folder = _folder(directory)
    seconds = older_than.total_seconds() if isinstance(older_than, timedelta) else float(older_than)
    if not seconds >= 0:
        raise ValueError(f"older_than must be >= 0, not {older_than!r}")
    cutoff = (time.time() if now is None else now) - seconds
    archive_folder = archive_files.checked_folder(folder.directory / archive_files.FOLDER)
    if not dry_run:
        for leftover in archive_files.temp_leftovers(archive_folder):
            temp_files.remove_if_orphaned(leftover)  # a killed prune's half-written archive
    outcomes = []
    for session_id in folder.ids():
        path = Path(folder.session_path(session_id))
        try:
            seen = _snapshot(path)
        except (OSError, JSONLSessionError) as exc:
            outcomes.append(
                PruneOutcome(session_id, SKIPPED, 0.0, (), 0, reason=errors.describe_error(exc), failed=True)
            )
            continue
        if seen is None or _last_written(seen) > cutoff:
            continue
        if dry_run:
            outcomes.append(_outcome(session_id, WOULD_ARCHIVE, seen))
        else:
            outcomes.append(_prune_one(folder, session_id, path, seen, cutoff, archive_folder))
    return outcomes


def _prune_one(
    folder: SessionDirectory,
    session_id: str,
    path: Path,
    seen: dict[str, os.stat_result],
    cutoff: float,
    archive_folder: Path,
) -> PruneOutcome:
    edits = [temp for temp in temp_files.temp_files_of(path) if temp_files.is_edit_copy(temp)]
    if any(not temp_files.is_orphaned(edit) for edit in edits):
        return _outcome(session_id, SKIPPED, seen, reason="being edited (jsonl-session edit is open)")
    try:
        with Transaction(path, write=True, timeout=folder.lock_timeout) as file:
            if not file.exists:
                return _outcome(session_id, SKIPPED, seen, reason="deleted while pruning")
            now_seen = _snapshot(path)
            if now_seen is None or _changed(seen, now_seen) or _last_written(now_seen) > cutoff:
                return _outcome(session_id, SKIPPED, now_seen or seen, reason="written while pruning")
            members = [_member(path.name, reads.read_range(file.fd, 0, file.size), now_seen[path.name])]
            members += [
                _read_sidecar(path.with_name(name), now_seen[name]) for name in now_seen if name != path.name
            ]
            archive = _archive(session_id, path, file.fd, members, now_seen, archive_folder)
            # The archive is durable and verified: only now does anything go.
            for member in members[1:]:
                os.unlink(path.with_name(member.name))
            os.unlink(path)
            file.replaced()
            fsync_directory(path.parent)
    except (OSError, JSONLSessionError) as exc:
        return _outcome(session_id, SKIPPED, seen, reason=errors.describe_error(exc), failed=True)
    return _outcome(session_id, ARCHIVED, now_seen, archive=archive)


def _archive(
    session_id: str,
    path: Path,
    fd: int,
    members: list[Member],
    seen: dict[str, os.stat_result],
    archive_folder: Path,
) -> Path:
    """The verified archive of ``members``: the newest one already holding them (a re-run after a
    kill between archiving and deleting), or a new one."""
    mine = [archive for archive in archive_files.archives(archive_folder) if _file_of(archive) == path.name]
    if mine and archive_files.holds(mine[-1], members):
        return mine[-1]
    when = time.time()
    archive = archive_folder / archive_files.next_archive_name(path.name, when, mine[-1] if mine else None)
    usage_log = path.with_name(path.name + sidecar_files.USAGE)
    records = sidecar_files.read_lines(usage_log, timeout=0) if usage_log.name in seen else []
    manifest = archive_files.manifest_for(
        session_id,
        members,
        archived_at=_iso(when),
        last_written=_iso(_last_written(seen)),
        items=reads.count_items(fd),
        usage=session_usage(records),
    )
    archive_files.write_archive(archive, manifest, members)
    try:
        if not archive_files.holds(archive, members, exactly=True):  # read back: every byte as locked
            raise SessionFileError(archive, "reads back different from what was archived")
    except BaseException:
        _delete(archive)  # the session stays; no archive that does not hold it
        raise
    return archive


def restore(directory: SessionDirectory | str | os.PathLike[str], session_id: str) -> RestoreOutcome:
    """Bring back the newest archive of ``session_id``, byte-identical, sidecars included.

    The files are written under the session's exclusive lock (the session file last), owner-only
    like every file the library makes (an archive's modes are not trusted), then the archive is
    deleted. Nothing is ever overwritten: a session that has items (or sidecars that differ
    from the archive's) makes it refuse. An archive is input: it may hold only the session's
    own file and sidecars (``.meta`` and ``.lineage`` within their limits), regular files all.

    Raises:
        SessionNotFoundError: no archive of that session (a FileNotFoundError).
        SessionExistsError: the session exists again (a FileExistsError); ``rm`` it first.
        SessionFileError: the archive is damaged, or holds anything else (nothing is written).
        UnsafePathError: ``<dir>/.archive`` is a symlink.

    Example:
        >>> restore("sessions", "convo_12").files      # doctest: +SKIP
        ('convo_12.jsonl', 'convo_12.jsonl.usage')
    """
    folder = _folder(directory)
    path = Path(folder.session_path(session_id))
    archive_folder = folder.directory / archive_files.FOLDER
    mine = [archive for archive in archive_files.archives(archive_folder) if _file_of(archive) == path.name]
    if not mine:
        raise SessionNotFoundError(path, f"no archive of this session in {archive_folder}")
    archive = mine[-1]
    # every member checked before anything is written
    _, members = archive_files.read_archive(archive, allowed=_own_files(path))
    if members[0].name != path.name:
        raise SessionFileError(archive, f"holds {members[0].name}, not {path.name}")
    session, sidecars = members[0], members[1:]
    names = tuple(member.name for member in members)
    with Transaction(path, write=True, create=True, timeout=folder.lock_timeout) as file:
        if file.size:
            if reads.read_range(file.fd, 0, file.size) == session.data and _same_sidecars(path, sidecars):
                _delete(archive)  # a killed restore had finished writing
                return RestoreOutcome(session_id, archive, names, already_restored=True)
            raise SessionExistsError(path, "exists and has items; restore never overwrites (rm it first)")
        # The file is empty: just made by this lock, or left so by a killed restore, whose
        # temporary files (``.<name>.<8 hex>.tmp``, locked while alive) go first.
        for leftover in temp_files.temp_files_of(path):  # the session's and its sidecars'
            if not temp_files.is_edit_copy(leftover):  # a kept edit is a person's, never removed here
                temp_files.remove_if_orphaned(leftover)
        present = _existing_sidecars(path)
        wanted = {member.name: member.data for member in sidecars}
        for name in present:
            if name not in wanted or _read_sidecar(path.with_name(name), None).data != wanted[name]:
                raise SessionExistsError(path.with_name(name), "exists and differs from the archive's")
        for member in sidecars:
            storage.replace_file(path.with_name(member.name), member.data, durable=True)
        file.replaced()
        storage.replace(file.fd, path, session.data, durable=True)
    _delete(archive)
    return RestoreOutcome(session_id, archive, names)


def _snapshot(path: Path) -> dict[str, os.stat_result] | None:
    """The session file's and its sidecars' ``lstat``, by name; None if the session file is gone."""
    found = {}
    for name in (path.name, *(path.name + suffix for suffix in _SIDECARS)):
        try:
            info = os.lstat(path.with_name(name))
        except FileNotFoundError:
            if name == path.name:
                return None
            continue
        if not stat.S_ISREG(info.st_mode):
            raise SessionFileError(path.with_name(name), "is not a regular file; not archived")
        found[name] = info
    return found


def _own_files(path: Path) -> dict[str, int | None]:
    """The names an archive of the session at ``path`` may hold, with the most bytes each may
    (a sidecar kind's limit, ``core.sidecar_files.LIMITS``; None: none)."""
    limits: dict[str, int | None] = {path.name: None}
    for suffix in _SIDECARS:
        limits[path.name + suffix] = sidecar_files.LIMITS.get(suffix)
    return limits


def _existing_sidecars(path: Path) -> list[str]:
    return [path.name + suffix for suffix in _SIDECARS if os.path.lexists(path.with_name(path.name + suffix))]


def _changed(before: dict[str, os.stat_result], after: dict[str, os.stat_result]) -> bool:
    def key(info: os.stat_result) -> tuple[int, int, int, int]:
        return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns

    return before.keys() != after.keys() or any(key(before[name]) != key(after[name]) for name in before)


def _last_written(seen: dict[str, os.stat_result]) -> float:
    return max(info.st_mtime for info in seen.values())


def _outcome(
    session_id: str,
    action: str,
    seen: dict[str, os.stat_result],
    *,
    archive: Path | None = None,
    reason: str | None = None,
    failed: bool = False,
) -> PruneOutcome:
    size = sum(info.st_size for info in seen.values())
    return PruneOutcome(session_id, action, _last_written(seen), tuple(seen), size, archive, reason, failed)


def _member(name: str, data: bytes, info: os.stat_result) -> Member:
    return Member(name, data, stat.S_IMODE(info.st_mode), info.st_mtime)


def _read_sidecar(path: Path, info: os.stat_result | None) -> Member:
    """A sidecar's bytes (never through a symlink); read whole: it is small, and unchanging under
    the session's lock."""
    fd = os.open(path, _READ_FLAGS)
    try:
        held = os.fstat(fd)
        if not stat.S_ISREG(held.st_mode):
            raise SessionFileError(path, "is not a regular file; not archived")
        return _member(path.name, reads.read_range(fd, 0, held.st_size), info or held)
    finally:
        os.close(fd)


def _same_sidecars(path: Path, sidecars: list[Member]) -> bool:
    wanted = {member.name: member.data for member in sidecars}
    present = _existing_sidecars(path)
    return set(present) == set(wanted) and all(
        _read_sidecar(path.with_name(name), None).data == wanted[name] for name in present
    )


def _delete(archive: Path) -> None:
    try:
        os.unlink(archive)
    except FileNotFoundError:
        return
    fsync_directory(archive.parent)


def _file_of(archive: Path) -> str | None:
    return archive_files.session_file_of(archive.name)


def _folder(directory: SessionDirectory | str | os.PathLike[str]) -> SessionDirectory:
    return directory if isinstance(directory, SessionDirectory) else SessionDirectory(directory)


def _iso(when: float) -> str:
    return datetime.fromtimestamp(when, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


__all__ = [
    "ArchivedSession",
    "PruneOutcome",
    "RestoreOutcome",
    "archived_usage",
    "list_archives",
    "parse_duration",
    "prune",
    "restore",
]
