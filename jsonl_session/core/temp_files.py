"""Temporary files of rewrites and edits: how they are named and made, and how a dead process's are removed.

A rewrite writes the new content to ``.<name>.<8 hex>.tmp`` next to the session and renames
it over the session. A process killed before the rename leaves that file behind, a full copy
of the conversation, forever (tests/core/test_leftovers.py). ``jsonl-session edit`` puts the copy
a person edits next to the session too, as ``.#<name>.edit-<pid>-<8 hex>.jsonl`` (not in the
shared temp folder, where a killed edit would leave the conversation). So:

* the writer holds an exclusive ``flock`` on its temporary file from the moment it exists
  until it is renamed or removed; a lock dies with its process, so a temporary file that
  can be locked has no live writer;
* rewrites also hold the session's exclusive lock, so ``check --fix``, which takes that lock,
  never races a rewrite of the same session; the temporary file's own lock covers a session
  that no longer exists;
* an editor may save by renaming a new file over the copy, which has no lock, so an edit copy
  also counts as held while the process named in it is alive.
"""

from __future__ import annotations

import fcntl
import os
import re
import stat

from .names import KINDS, TORN_SUFFIX

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from pathlib import Path

# Patterns, compiled (and cached by ``re``) on first use: compiling both at import was ~0.3 ms
# of every command's start-up, and most commands never look for leftovers.
# The one definition of a replace's temporary name: ``storage.replace_file`` makes every one
# with :func:`create_temp`, the session's and every sidecar's (``.meta``, ``.times``, ``.run``...:
# all of ``names.KINDS``, and the ``.torn`` fragments a restore puts back), so each belongs to
# its session and ``check`` finds a killed writer's.
_SUFFIXES = (*KINDS, TORN_SUFFIX, *(kind + TORN_SUFFIX for kind in KINDS))
_TEMP_NAME = (
    r"\.(?P<session>.+\.jsonl)(?:" + "|".join(re.escape(kind) for kind in _SUFFIXES) + r")?\.[0-9a-f]{8}\.tmp"
)
_EDIT_NAME = r"\.#(?P<session>.+\.jsonl)\.edit-(?P<pid>[0-9]+)-[0-9a-f]{8}\.jsonl"
_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def create_temp(path: Path) -> tuple[Path, int]:
    """Create ``path``'s temporary file (0600, new, never through a symlink), locked; return it and its fd.

    Example:
        >>> temp, fd = create_temp(Path("sessions/convo_123.jsonl"))   # doctest: +SKIP
        >>> temp.name                                                  # doctest: +SKIP
        '.convo_123.jsonl.5f0c9a21.tmp'
    """
    return _create_locked(path.with_name(f".{path.name}.{os.urandom(4).hex()}.tmp"))


def create_edit_copy(path: Path) -> tuple[Path, int]:
    """Create the copy of ``path`` that ``jsonl-session edit`` hands to the editor, locked, 0600.

    Example:
        >>> copy, fd = create_edit_copy(Path("sessions/convo_123.jsonl"))   # doctest: +SKIP
        >>> copy.name                                                       # doctest: +SKIP
        '.#convo_123.jsonl.edit-4242-5f0c9a21.jsonl'
    """
    return _create_locked(path.with_name(f".#{path.name}.edit-{os.getpid()}-{os.urandom(4).hex()}.jsonl"))


def is_edit_copy(temp: Path) -> bool:
    """True for an edit's copy, False for a rewrite's temporary file."""
    return re.fullmatch(_EDIT_NAME, temp.name) is not None


def _create_locked(temp: Path) -> tuple[Path, int]:
    fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_EXCL | _FLAGS, 0o600)
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
        >>> from pathlib import Path
        >>> session_of(Path("sessions/.convo_123.jsonl.5f0c9a21.tmp"))
        PosixPath('sessions/convo_123.jsonl')
        >>> session_of(Path("sessions/.convo_123.jsonl.meta.58e506c5.tmp"))
        PosixPath('sessions/convo_123.jsonl')
    """
    match = re.fullmatch(_TEMP_NAME, temp.name) or re.fullmatch(_EDIT_NAME, temp.name)
    return temp.with_name(match["session"]) if match else None


def temp_files(directory: Path) -> list[Path]:
    """Every rewrite temporary file and edit copy in ``directory``, sorted (live or left over)."""
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(
        directory / name for name in names if re.fullmatch(_TEMP_NAME, name) or re.fullmatch(_EDIT_NAME, name)
    )


def temp_files_of(path: Path) -> list[Path]:
    """The temporary files of one session file."""
    return [temp for temp in temp_files(path.parent) if session_of(temp) == path]


def is_orphaned(temp: Path) -> bool:
    """True if no live process holds the temporary file's lock (its writer died); False if one does.

    Also False for anything that is not a regular file (never touched), and for an edit copy
    whose process is alive.
    """
    if _editor_alive(temp):
        return False
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
    if _editor_alive(temp):
        return False
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


def _editor_alive(temp: Path) -> bool:
    """For an edit copy: is the ``jsonl-session edit`` process named in it still running?

    A reused pid only makes us keep a dead edit's copy a while longer, never remove a live one.
    """
    match = re.fullmatch(_EDIT_NAME, temp.name)
    if match is None:
        return False
    try:
        os.kill(int(match["pid"]), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True
