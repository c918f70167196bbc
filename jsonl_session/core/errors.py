"""Every error jsonl-session raises, under one base you can catch.

    JSONLSessionError
    ├── InvalidSessionId        (also ValueError)  the id cannot name a file
    ├── ItemNotStorableError    (also ValueError, TypeError) an item would not round-trip exactly
    ├── InvalidBackendURL       (also ValueError)  export/import: not a backend URL
    ├── BackendUnavailable      (also ImportError) export/import: the backend's package is missing
    ├── SessionFileError                           something is wrong with a file on disk
    │   ├── MalformedLineError  (also ValueError)  a line is not a JSON object
    │   ├── UnsafePathError     (also PermissionError) a symlink where a session file belongs
    │   ├── OwnershipError      (also PermissionError) a rewrite could not keep the file's owner
    │   ├── OwnerMismatchError  (also PermissionError) a routed run reached another owner's session
    │   ├── SessionNotFoundError (also FileNotFoundError) no such session (a fork's source, a grep's)
    │   └── SessionExistsError  (also FileExistsError) fork: the target already has items
    ├── ReadOnlySessionError    (also PermissionError) a write to a read-only test fixture
    ├── LockTimeout             (also TimeoutError) another process held the lock too long
    └── LockReentryError        (also RuntimeError) this thread already holds the lock

    TornTailWarning (UserWarning): a crashed writer's partial line was moved to a sidecar file
    (issued at the user's line: ``warn_at_caller``).
    SkippedSessionWarning (UserWarning): a folder listing skipped a session it could not read.

Each error inherits the matching builtin so ``except ValueError`` keeps working, carries the
file path (and line) it is about, and pickles across processes.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from os import PathLike
    from pathlib import Path

__all__ = [
    "BackendUnavailable",
    "InvalidBackendURL",
    "InvalidSessionId",
    "ItemNotStorableError",
    "JSONLSessionError",
    "LockReentryError",
    "LockTimeout",
    "MalformedLineError",
    "OwnerMismatchError",
    "OwnershipError",
    "ReadOnlySessionError",
    "SessionExistsError",
    "SessionFileError",
    "SessionNotFoundError",
    "SkippedSessionWarning",
    "TornTailWarning",
    "UnsafePathError",
]


class JSONLSessionError(Exception):
    """Base class of every error raised by jsonl-session."""


class InvalidSessionId(JSONLSessionError, ValueError):
    """The session id cannot be turned into a file name inside the directory."""


class ItemNotStorableError(JSONLSessionError, ValueError, TypeError):
    """An item cannot be stored so that it reads back exactly (NaN, huge int, non-JSON type).

    Raised before anything is written, so the file is untouched. It is a ``TypeError`` as
    ``json.dumps`` and the SDK's ``SQLiteSession`` raise for such items, so code written for the
    SDK catches it, and a ``ValueError`` as it always was here.

    Example:
        >>> try:
        ...     JSONLSession("s").add_items_sync([{"content": object()}])  # doctest: +SKIP
        ... except TypeError as exc:
        ...     print(exc)
        item 0 cannot be stored faithfully: ...
    """

    def __init__(self, index: int, reason: str) -> None:
        self.index = index
        self.reason = reason
        super().__init__(f"item {index} cannot be stored faithfully: {reason}")

    def __reduce__(self) -> tuple[type, tuple[int, str]]:
        return (type(self), (self.index, self.reason))


class SessionFileError(JSONLSessionError):
    """A problem with a session file on disk; ``path`` (and ``line`` where known) say where."""

    def __init__(self, path: str | PathLike[str], message: str, line: int | None = None) -> None:
        self.path = _as_path(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line is not None else str(self.path)
        super().__init__(f"{where}: {message}")

    def __reduce__(self) -> tuple[type, tuple[Path, str, int | None]]:
        return (type(self), (self.path, self.message, self.line))


class MalformedLineError(SessionFileError, ValueError):
    """A complete line is not a JSON object. The file is left untouched; fix the line by hand."""


class UnsafePathError(SessionFileError, PermissionError):
    """A symlink (or other non-regular file) sits where a session file or sidecar belongs."""


class OwnershipError(SessionFileError, PermissionError):
    """A rewrite would give the session file to another owner, and we may not give it back.

    A rewrite writes a new file and renames it over the old one; the new file belongs to
    whoever runs the rewrite. Root gives it back to the old owner (``fchown``); anyone else
    gets this error before anything changes. Run the rewrite as the file's owner.
    """


class OwnerMismatchError(SessionFileError, PermissionError):
    """A run routed to one owner (``JSONLSession(route=...)``) reached a session it may not use.

    The session's ``.meta`` names another owner, or it has items and no owner. Nothing was read
    or written; the message does not say whose it is.
    """


class SessionNotFoundError(SessionFileError, FileNotFoundError):
    """The session to read or copy has no file (``SessionDirectory.fork``'s source, a session
    deleted while ``grep`` ran).

    Example:
        >>> try:
        ...     SessionDirectory("sessions").fork("no-such-id", "copy")  # doctest: +SKIP
        ... except FileNotFoundError as exc:
        ...     print(exc)
        sessions/no-such-id.jsonl: no such session
    """


class SessionExistsError(SessionFileError, FileExistsError):
    """The session to create already has items; nothing was overwritten (``fork``'s target)."""


class InvalidBackendURL(JSONLSessionError, ValueError):
    """``open_url`` (``export --to``, ``import``) was given something that is not a backend URL.

    Example:
        >>> async with open_url("chats.db", "c1"):  # doctest: +SKIP
        ...     pass
        InvalidBackendURL: 'chats.db' is not a backend URL; use sqlite:///path.db, ...
    """


class BackendUnavailable(JSONLSessionError, ImportError):
    """The backend named by a URL needs a package that is not installed (the message says which)."""


class ReadOnlySessionError(JSONLSessionError, PermissionError):
    """A test tried to change a session opened with ``open_session_fixture(..., mode="readonly")``."""


class LockTimeout(JSONLSessionError, TimeoutError):
    """Another process held the session's lock longer than ``lock_timeout`` seconds."""

    def __init__(self, path: str | PathLike[str], timeout: float) -> None:
        self.path = _as_path(path)
        self.timeout = timeout
        super().__init__(
            f"{self.path}: lock not acquired within {timeout:g}s; another process is writing "
            "or editing this session (raise lock_timeout, or find the process holding it)"
        )

    def __reduce__(self) -> tuple[type, tuple[Path, float]]:
        return (type(self), (self.path, self.timeout))


class LockReentryError(JSONLSessionError, RuntimeError):
    """This thread already holds the session's lock, so waiting for it would deadlock.

    Typically a call on the session inside its own ``rewrite()`` block: change ``Draft.items``
    there instead.
    """

    def __init__(self, path: str | PathLike[str]) -> None:
        self.path = _as_path(path)
        super().__init__(
            f"{self.path}: this thread already holds the session's lock (a call inside "
            "session.rewrite()?); waiting for it would deadlock"
        )

    def __reduce__(self) -> tuple[type, tuple[Path]]:
        return (type(self), (self.path,))


class TornTailWarning(UserWarning):
    """A partial last line (left by a killed writer) was moved to the session's sidecar file."""


def warn_at_caller(warning: Warning) -> None:
    """Issue ``warning`` at the first line outside this package: the user's call.

    The public calls that can move a torn tail reach it at different depths (``add_items_sync``,
    ``clear_session_sync``, a rewrite...), so no fixed ``stacklevel`` names the user's line for
    all of them; the one that was there named a line of ``session/store.py``.
    """
    import os
    import sys
    import warnings

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frame, level = sys._getframe(1), 2  # level 2: warn_at_caller's caller
    while frame.f_back is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    warnings.warn(warning, stacklevel=level)


class SkippedSessionWarning(UserWarning):
    """``SessionDirectory.list()`` skipped a session it could not read (permissions, a lock held too long).

    One bad file must not stop the whole listing: it is named in this warning and the
    others are listed (pass ``on_error`` to handle it yourself).
    """


def _as_path(path: str | PathLike[str]) -> Path:
    """``path`` as a ``Path``, importing pathlib only once an error is made.

    With pathlib (it brings ``urllib.parse`` and ``ipaddress``), ``import jsonl_session`` and
    ``jsonl-session ls`` took ~6 ms longer in a regular install (``tests/project/test_startup.py``).
    """
    from pathlib import Path

    return Path(path)


def describe_error(exc: BaseException) -> str:
    """One line for a skipped file's error: ``path: reason`` for an ``OSError`` that names its file."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc) or type(exc).__name__
