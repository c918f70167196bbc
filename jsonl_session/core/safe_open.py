"""Opening and creating session files safely: no symlinks, no FIFOs, owner-only, durable names.

Split from ``locking`` so that the lock protocol reads on its own; everything here runs
with no lock held, or under the lock the caller took.
"""

from __future__ import annotations

import errno
import os
import stat

from .errors import UnsafePathError
from .names import KINDS

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from os import PathLike
    from pathlib import Path
    from typing import TypeAlias

    StrPath: TypeAlias = "str | PathLike[str]"
    """A file's path as ``os`` takes it: listing and searching pass ``str`` and never import pathlib."""

_OPEN_FLAGS = os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK  # NONBLOCK: never hang on a FIFO
_WRITE_FLAGS = _OPEN_FLAGS | os.O_RDWR | os.O_APPEND
_READ_FLAGS = _OPEN_FLAGS | os.O_RDONLY

MISSING = -2
"""Returned instead of a descriptor when the file does not exist and ``create`` is false."""


def fsync_directory(directory: StrPath) -> None:
    """Make a file's creation, rename or removal durable (its directory entry lives here)."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def open_regular(path: StrPath) -> tuple[int, os.stat_result] | None:
    """A read-only descriptor of the regular file at ``path`` and its ``fstat``, or None if there is none.

    For the small files beside a session, read without a lock of their own: a symlink or a
    FIFO put there is refused, never followed or waited on.

    Raises:
        UnsafePathError: a symlink or other non-regular file sits at ``path``.
    """
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePathError(path, "is a symlink; refusing to follow it") from None
        raise
    try:
        held = os.fstat(fd)
        if not stat.S_ISREG(held.st_mode):
            raise UnsafePathError(path, "is not a regular file; refusing to read it")
    except BaseException:
        os.close(fd)
        raise
    return fd, held


def open_file(path: StrPath, *, write: bool, create: bool, durable: bool) -> tuple[int, bool, bool]:
    """Open for reading and writing if we may (read-only files still read); create if asked.

    Returns:
        ``(descriptor, writable, created)``, or ``(MISSING, False, False)`` when the file does
        not exist and ``create`` is false. A file created here had its folder fsynced if ``durable``.
    """
    created = False
    try:
        try:
            fd, writable = os.open(path, _WRITE_FLAGS), True
        except OSError as exc:
            # A read-only file, folder or file system still reads.
            if write or exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise
            fd, writable = os.open(path, _READ_FLAGS), False
    except FileNotFoundError:
        if not create:
            return MISSING, False, False
        fd = _create(path, durable=durable)
        if fd == MISSING:  # someone else created it first: open theirs
            return open_file(path, write=write, create=create, durable=durable)
        writable = created = True
    except OSError as exc:
        raise _explain_open_error(path, exc) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafePathError(path, "is not a regular file; refusing to use it as a session")
    except BaseException:
        os.close(fd)
        raise
    return fd, writable, created


def _create(path: StrPath, *, durable: bool) -> int:
    """Create the file owner-only (and its directory, 0700), or return MISSING if it now exists."""
    fd = _open_new(path, durable=durable)
    if fd == MISSING:
        return MISSING
    try:
        # A new session never inherits what a deleted one of its name left; the
        # folder fsync below covers these unlinks too.
        forget_previous_owner(path)
    except BaseException:
        os.close(fd)
        raise
    if durable:
        try:
            fsync_directory(os.path.dirname(path) or ".")
        except BaseException:
            # Opening the folder can fail with EMFILE when our own descriptor took the
            # last slot: do not leak it (tests/core/test_locking.py::
            # test_a_failed_directory_fsync_after_creating_leaks_no_descriptor).
            os.close(fd)
            raise
    return fd


def _open_new(path: StrPath, *, durable: bool) -> int:
    """Open ``path`` as a new file, owner-only (its folder made 0700 if missing, durable if
    ``durable``); MISSING if a file is there already."""
    flags = _WRITE_FLAGS | os.O_CREAT | os.O_EXCL
    try:
        try:
            return os.open(path, flags, 0o600)
        except FileNotFoundError:  # no folder yet
            from pathlib import Path  # here: reading and listing (``jsonl-session ls``) never need pathlib

            make_private_directories(Path(path).parent, durable=durable)
            return os.open(path, flags, 0o600)
    except FileExistsError:
        return MISSING
    except OSError as exc:
        raise _explain_open_error(path, exc) from None


def create_new(path: StrPath, *, durable: bool) -> bool:
    """Create the session file at ``path``, owner-only and empty (its folder too, if missing),
    for a caller whose listing of the folder, a moment before, found neither it nor any sidecar
    of its name; False, and nothing done, if the file is there by now.

    No sidecar is unlinked (:func:`forget_previous_owner`: an ``unlink`` per kind, each taking
    the folder's lock, which every create in the folder waits for): a sidecar made since that
    listing comes from a writer of this very session, as if made after this call, or from a
    namesake made and removed by hand within that moment, whose leftovers this file then
    finds (the narrower promise of a whole-folder import, docs/backends.md). The file's
    name is not fsynced here: the first durable write does it (``FileHandle.sync_folder_once``:
    the handle opens a file it did not create), and a caller that writes nothing syncs it
    itself (:func:`fsync_directory`). A folder made here is durable if ``durable``.
    """
    fd = _open_new(path, durable=durable)
    if fd == MISSING:
        return False
    os.close(fd)
    return True


def make_private_directories(directory: Path, *, durable: bool) -> None:
    """Create ``directory`` and any missing parents, each 0700, and make their entries durable.

    ``os.makedirs(mode=...)`` applies the mode to the last folder only.
    """
    missing = []
    current = directory
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            continue  # another process made it first
        if durable:
            fsync_directory(folder.parent)


def _explain_open_error(path: StrPath, exc: OSError) -> Exception:
    if exc.errno == errno.ELOOP:
        return UnsafePathError(path, "is a symlink; refusing to follow it out of the sessions folder")
    return exc


def forget_previous_owner(session_path: str | os.PathLike[str]) -> None:
    """Remove the sidecars a deleted session of the same name left; called as a session file is created.

    ``rm sessions/x.jsonl`` by hand leaves ``x.jsonl.run`` and ``x.jsonl.usage`` behind, and a
    new session ``x`` would be born "paused" with the old tokens in ``stats``. A file the
    library creates (``O_CREAT | O_EXCL``, so it is ours and new) therefore starts with no
    metadata; a file that comes back otherwise (``git checkout``, ``mv``) keeps its sidecars.
    The caller fsyncs the folder afterwards (a durable create does anyway). ``.torn`` stays:
    it holds bytes nobody has looked at (see ``KINDS``).
    """
    name = os.fspath(session_path)
    if not name.endswith(".jsonl"):
        return  # a sidecar's own file (the .usage log), or not a session at all
    for kind in KINDS:
        try:
            os.unlink(name + kind)
        except FileNotFoundError:
            pass
