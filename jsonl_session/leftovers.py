"""Temporary files of rewrites: how they are named and made, and how a crashed writer's are found and removed.

A rewrite writes the new content to ``.<name>.<8 hex>.tmp`` next to the session and renames
it over the session. A process killed before the rename leaves that file behind, a full copy
of the conversation, forever (tests/test_leftovers.py). So:

* the writer holds an exclusive ``flock`` on its temporary file from the moment it exists
  until it is renamed or removed; a lock dies with its process, so a temporary file that
  can be locked has no live writer;
* rewrites also hold the session's exclusive lock, so ``check --fix``, which takes that lock,
  never races a rewrite of the same session; the temporary file's own lock covers a session
  that no longer exists.
"""

from __future__ import annotations

import fcntl
import os
import re
import secrets
import stat
from pathlib import Path

_TEMP_NAME = re.compile(r"\.(?P<session>.+\.jsonl)\.[0-9a-f]{8}\.tmp")
_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def create_temp(path: Path) -> tuple[Path, int]:
    """Create ``path``'s temporary file (0600, new, never through a symlink), locked; return it and its fd.

    Example:
        >>> temp, fd = create_temp(Path("sessions/convo_123.jsonl"))   # doctest: +SKIP
        >>> temp.name                                                  # doctest: +SKIP
        '.convo_123.jsonl.5f0c9a21.tmp'
    """
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _FLAGS, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # new file, nobody else can hold it: does not wait
    except BaseException:
        os.close(fd)
        os.unlink(temp)
        raise
    return temp, fd


def session_of(temp: Path) -> Path | None:
    """The session file a temporary file belongs to, or None if the name is not one of ours.

    Example:
        >>> session_of(Path("sessions/.convo_123.jsonl.5f0c9a21.tmp"))
        PosixPath('sessions/convo_123.jsonl')
    """
    match = _TEMP_NAME.fullmatch(temp.name)
    return temp.with_name(match["session"]) if match else None


def temp_files(directory: Path) -> list[Path]:
    """Every rewrite temporary file in ``directory``, sorted (live or left over)."""
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(directory / name for name in names if _TEMP_NAME.fullmatch(name))


def temp_files_of(path: Path) -> list[Path]:
    """The temporary files of one session file."""
    return [temp for temp in temp_files(path.parent) if session_of(temp) == path]


def is_orphaned(temp: Path) -> bool:
    """True if no live process holds the temporary file's lock (its writer died); False if one does.

    Also False for anything that is not a regular file (never touched).
    """
    try:
        fd = os.open(temp, os.O_RDONLY | _FLAGS)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    finally:
        os.close(fd)


def remove_if_orphaned(temp: Path) -> bool:
    """Remove a temporary file no live writer owns; True if removed.

    The file is removed while we hold its lock, and only if the name still names the file we
    locked, so a writer that starts meanwhile is never robbed of its file.
    """
    try:
        fd = os.open(temp, os.O_RDONLY | _FLAGS)
    except OSError:
        return False
    try:
        held = os.fstat(fd)
        if not stat.S_ISREG(held.st_mode):
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        try:
            now = os.lstat(temp)
        except FileNotFoundError:
            return False
        if (now.st_dev, now.st_ino) != (held.st_dev, held.st_ino):
            return False
        os.unlink(temp)
        return True
    finally:
        os.close(fd)
