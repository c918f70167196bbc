"""What a session leaves next to it once it is gone, and the edits ``jsonl-session edit`` kept.

``check`` reports both (``tools.check``); this module only finds and names them:

* *orphaned sidecars*: a ``<file>.jsonl.lineage``, ``.usage`` or ``.run`` whose
  ``<file>.jsonl`` no longer exists, because someone removed the session with ``rm``
  (``SessionDirectory.delete`` removes them with it). A session the library creates anew
  never inherits them (``core.safe_open.forget_previous_owner``), and ``check --fix``
  removes them, except a ``.dropped``: what ``check --fix`` dropped, named and kept.
  ``.torn`` is not one: it holds bytes nobody has looked at, and ``rm`` keeps it;
* *not files*: something named like a session that is not a regular file (a FIFO, a folder,
  a socket, a symlink): no command reads it (a FIFO would block the reader), and each says what
  it is rather than "no such file" (:func:`not_a_file`);
* *kept edits*: when ``jsonl-session edit`` cannot save (the session changed meanwhile), it
  tells the person that their edit is kept, and renames the copy to
  ``.#<file>.jsonl.kept-<8 hex>.jsonl``. Under its first name (``.#<file>.jsonl.edit-<pid>-...``)
  the copy looks like a dead edit's once the process exits, and ``check --fix`` would remove
  it. Under this one ``check`` names it and never removes it.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from ..core.names import SUFFIX
from ..core.sidecar_files import KINDS

_KEPT_NAME = r"\.#(?P<session>.+\.jsonl)\.kept-[0-9a-f]{8}\.jsonl"


def orphaned_sidecars(directory: Path, *, of: Path | None = None) -> list[tuple[Path, str]]:
    """Each sidecar in ``directory`` whose session file is gone, with its kind (``usage``...), sorted.

    Example:
        >>> orphaned_sidecars(Path("sessions"))                              # doctest: +SKIP
        [(PosixPath('sessions/old.jsonl.usage'), 'usage')]
    """
    found = []
    for name in _names(directory):
        kind = next((kind for kind in KINDS if name.endswith(kind)), None)
        if kind is None or name.startswith(".") or not name[: -len(kind)].endswith(".jsonl"):
            continue
        session = directory / name[: -len(kind)]
        if (of is None or session == of) and not os.path.lexists(session):
            found.append((directory / name, kind[1:]))
    return found


_KINDS_OF_FILE = (
    (stat.S_ISLNK, "a symlink"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def not_a_file(path: str | os.PathLike[str]) -> str | None:
    """What sits at ``path`` when it is not a regular file (``"a FIFO (named pipe)"``...); None
    when it is one, or when nothing is there. An ``lstat``: nothing is opened, so a FIFO never blocks.

    Example:
        >>> not_a_file("/")
        'a directory'
    """
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISREG(mode):
        return None
    return next((what for test, what in _KINDS_OF_FILE if test(mode)), "not a regular file")


def not_files(directory: Path) -> list[tuple[Path, str]]:
    """Each entry of ``directory`` named like a session (``*.jsonl``, not hidden) that is not a
    regular file, with what it is, sorted."""
    found = []
    for name in _names(directory):
        if name.endswith(SUFFIX) and not name.startswith("."):
            what = not_a_file(directory / name)
            if what is not None:
                found.append((directory / name, what))
    return found


def kept_edit_name(session_path: Path) -> Path:
    """A new name, next to its session, for an edit kept after a conflict.

    Example:
        >>> kept_edit_name(Path("sessions/c.jsonl")).name.startswith(".#c.jsonl.kept-")
        True
    """
    return session_path.with_name(f".#{session_path.name}.kept-{os.urandom(4).hex()}.jsonl")


def kept_edits(directory: Path, *, of: Path | None = None) -> list[Path]:
    """The kept edits in ``directory`` (those of the session ``of`` only, if given), sorted."""
    kept = sorted(directory / name for name in _names(directory) if re.fullmatch(_KEPT_NAME, name))
    return kept if of is None else [copy for copy in kept if session_of_kept(copy) == of]


def session_of_kept(copy: Path) -> Path:
    """The session file a kept edit belongs to.

    Example:
        >>> session_of_kept(Path("sessions/.#c.jsonl.kept-5f0c9a21.jsonl"))
        PosixPath('sessions/c.jsonl')
    """
    match = re.fullmatch(_KEPT_NAME, copy.name)
    if match is None:
        raise ValueError(f"{copy}: not the name of a kept edit")
    return copy.with_name(match["session"])


def _names(directory: Path) -> list[str]:
    try:
        return sorted(os.listdir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return []
