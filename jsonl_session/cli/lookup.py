"""From the command line's names to the library's objects: the folder, a session, session files.

A session named on the command line must exist (``show``, ``pop``, ``rm``...), except where a
command creates it (``add``, ``import``); ``check`` and ``redact`` also take the file paths
the pre-commit hook passes and messages print.
"""

from __future__ import annotations

import os

from ..session.folder import SessionDirectory
from .output import Failure, UsageError
from .parser import DIR_ENV

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    import argparse
    from pathlib import Path

    from ..session.store import JSONLSession


def missing_folder(folder: str) -> str | None:
    """Why ``folder`` cannot be the sessions folder (one line, the same for every command), or None.

    A typo in ``--dir`` must not read as an empty folder: ``check`` saying ``0 problems`` or
    ``grep`` finding nothing there would hide it.
    """
    if os.path.isdir(folder):
        return None
    what = "not a folder" if os.path.lexists(folder) else "no such folder"
    return f"{folder}: {what} (name the sessions folder with --dir or ${DIR_ENV})"


def need_folder(args: argparse.Namespace) -> None:
    """Refuse (exit 2) unless ``--dir`` names a folder; every command reading the folder calls it."""
    why = missing_folder(args.dir)
    if why is not None:
        raise UsageError(why)


def directory(args: argparse.Namespace) -> SessionDirectory:
    """The folder ``--dir`` names, with ``--lock-timeout``."""
    return SessionDirectory(args.dir, lock_timeout=args.lock_timeout)


def open_session(args: argparse.Namespace, session_id: str) -> JSONLSession:
    """The session ``session_id`` of ``--dir``, whether or not it has a file yet."""
    return directory(args).open(session_id)


def existing(args: argparse.Namespace, session_id: str) -> JSONLSession:
    """The session ``session_id`` of ``--dir``, which must have a file (not a symlink)."""
    from .. import UnsafePathError

    session = open_session(args, session_id)
    if not directory(args).exists(session_id):  # lstat: a symlink is not a session
        if os.path.lexists(session.path):
            # `check --secrets ID` read through a symlink out of the folder; every command
            # that takes an id refuses here, as the lock would (tests/core/test_symlinks.py).
            from ..tools.leftovers import not_a_file

            what = not_a_file(session.path) or "not a regular file"
            raise UnsafePathError(session.path, f"is {what}, not a session file; refusing to use it")
        raise Failure(f"{session_id}: no such session in {args.dir}")
    return session


def session_named(args: argparse.Namespace, name: str) -> JSONLSession:
    """The session ``name`` means: an id in ``--dir``, or a file path like those ``check`` prints."""
    if not is_path(name):
        return existing(args, name)
    from pathlib import Path

    from ..core.names import id_for

    path = Path(name)
    session_id = id_for(path.name)
    if session_id is None:
        raise UsageError(f"{name}: not a session file (a session file is named <id>.jsonl)")
    if not path.is_file():
        from ..tools.leftovers import not_a_file

        what = not_a_file(path)  # an lstat: a FIFO is never opened, so never waited on
        raise Failure(f"{name}: no such file" if what is None else f"{name}: is {what}, not a session file")
    from ..session.store import JSONLSession

    return JSONLSession(session_id, path.parent, lock_timeout=args.lock_timeout)


def is_path(name: str) -> bool:
    """A path (as pre-commit passes, and as messages print), not an id: has a folder, or is a file."""
    return name.endswith(".jsonl") and (os.sep in name or os.path.isfile(name))


def targets(args: argparse.Namespace, names: list[str]) -> list[Path]:
    """Session files named by id, or by path (as pre-commit passes them); all sessions if none."""
    if not names:
        return [open_session(args, session_id).path for session_id in directory(args).ids()]
    return [session_named(args, name).path for name in names]
