"""The small files that sit next to a session: one design for every kind of metadata.

A session ``<dir>/<file>.jsonl`` holds only the SDK's items. What we know *about* it lives in
sidecars named ``<file>.jsonl.<kind>``, so no ``sessions/*.jsonl`` glob (git attributes,
``check``, shell loops) ever picks one up as a session, and ``ls sessions/convo_1.jsonl*``
shows a session with everything that belongs to it:

* ``.torn``: fragments of lines cut by a killed writer (see ``storage``);
* ``.lineage``: where a fork came from, one JSON object (see ``history.lineage``);
* ``.usage``: token usage per run, JSON Lines, append-only (see ``history.usage``);
* ``.run``: a run paused for a tool approval, one JSON object (see ``history.paused_runs``);
* ``.meta``: title, tags, owner and a free-form mapping, one JSON object (``history.metadata``);
* ``.times``: when each item was added, one record per item (``item_times``);
* ``.dropped``: what ``check --fix`` dropped, JSON Lines, append-only (``tools.resend_fix``).

Two ways of writing, both with rules the session file already follows:

* whole-object sidecars (``.lineage``, ``.run``, ``.meta``) are replaced atomically by the same
  ``storage.replace_file`` as sessions: a locked temporary file (``.<name>.<random>.tmp``,
  0600, see ``temp_files``), fsynced, renamed over the old one, directory fsynced.
  A reader sees the old object or the new one, never half of either, and needs no lock;
* the logs (``.usage``, ``.dropped``) are appended by ``storage.append`` under a ``FileHandle``
  lock on the log itself, with the torn-tail rule of sessions (fragments go to ``.usage.torn``).

Sidecars are input, read bounded: a whole-object sidecar with a size limit (:data:`LIMITS`:
``.meta``, ``.lineage``) is read to at most one byte past it and refused beyond, so a hostile
300 MB file costs a reader 64 KiB, not its size. A paused run (``.run``) has no limit (its state
grows with the run): what listings need of it is read from its head (:func:`read_head`). A log's
lines are checked a piece at a time before any is parsed: one longer than :data:`RECORD_BYTES`
is refused, so a log that is one endless line is never held whole.

Every change to a sidecar happens while the *session's* lock is held exclusively, so ``rm``,
``fork`` and ``rewind`` never interleave with one; the usage log is read under it, shared, so
its own lock is always free when taken. Bytes are stable: keys sorted, one trailing newline.
"""

from __future__ import annotations

import os
from collections.abc import Collection

from . import reads, storage
from .deferred_imports import OnFirstUse
from .errors import SessionFileError, SkippedSessionWarning
from .locking import fsync_directory, make_private_directories
from .names import KINDS, LINEAGE, META, RUN, USAGE
from .safe_open import open_regular
from .transaction import Transaction

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    import orjson
else:  # imported on first use: `jsonl-session ls` reads no sidecar (see core/deferred_imports.py)
    orjson = OnFirstUse("orjson", globals())


# The sidecar kinds are names (``names``); they are used as ``sidecar_files.RUN`` and so on.
__all__ = [
    "KINDS",
    "LIMITS",
    "LINEAGE",
    "RECORD_BYTES",
    "RUN",
    "USAGE",
    "UnreadableSidecarWarning",
    "append_line",
    "held_back",
    "present",
    "read_head",
    "read_json",
    "read_lines",
    "remove",
    "sidecar",
    "stable_json",
    "write_json",
]


LIMITS = {META: 64 * 1024, LINEAGE: 64 * 1024}
RECORD_BYTES = 64 * 1024
"""The longest line a JSON Lines sidecar may hold (a usage record takes a few hundred bytes)."""
"""The most bytes a whole-object sidecar of each kind may hold (``.meta``: docs/metadata.md; a
``.lineage`` is a few hundred). ``.run`` has none: it holds the SDK's run state, which grows
with the run."""


class UnreadableSidecarWarning(SkippedSessionWarning):
    """A session was listed without what one of its sidecars says (too big, malformed, not a file).

    A subclass of ``SkippedSessionWarning``: what was skipped is the sidecar, not the session.
    """


def sidecar(session_path: Path, kind: str) -> Path:
    """The path of one sidecar of a session file.

    Example:
        >>> from pathlib import Path
        >>> sidecar(Path("sessions/convo_1.jsonl"), LINEAGE).name
        'convo_1.jsonl.lineage'
    """
    return session_path.with_name(session_path.name + kind)


def present(file_name: str, names: Collection[str]) -> frozenset[str]:
    """Which sidecar kinds a session file has, judged from a folder listing already in hand (no system call).

    ``SessionDirectory.list`` lists the folder once and asks this for every session, so a
    thousand sessions cost no extra ``stat``.
    """
    return frozenset(kind for kind in KINDS if file_name + kind in names)


def stable_json(value: Any, *, indent: bool = True) -> bytes:
    """``value`` as stable bytes: keys sorted, UTF-8 as-is, one trailing newline.

    Example:
        >>> stable_json({"b": 1, "a": "é"}, indent=False)
        b'{"a":"\\xc3\\xa9","b":1}\\n'
    """
    option = orjson.OPT_SORT_KEYS | (orjson.OPT_INDENT_2 if indent else 0)
    return orjson.dumps(value, option=option) + b"\n"


def write_json(path: Path, value: Any, *, durable: bool) -> None:
    """Replace ``path`` with ``value`` atomically (temporary file, fsync, rename, directory fsync)."""
    payload = stable_json(value)
    if not path.parent.is_dir():
        make_private_directories(path.parent, durable=durable)
    storage.replace_file(path, payload, durable=durable)


def read_json(path: Path) -> Any:
    """The object stored at ``path``, or None if there is no such file.

    A kind with a limit (:data:`LIMITS`) is read to one byte past it at most: a file that
    grows while it is read is caught too.

    Raises:
        UnsafePathError: a symlink or other non-regular file sits at ``path``.
        SessionFileError: the file is over its kind's limit, or not valid JSON (say which file;
            it is not touched).
    """
    limit = next((most for kind, most in LIMITS.items() if path.name.endswith(kind)), None)
    opened = open_regular(path)
    if opened is None:
        return None
    fd, held = opened
    try:
        size = held.st_size
        if limit is not None and size > limit:
            raise SessionFileError(
                path, f"{size} bytes, over the {limit}-byte limit; fix or delete this file"
            )
        data = reads.read_range(fd, 0, size if limit is None else limit + 1)
        if limit is not None and len(data) > limit:
            raise SessionFileError(
                path, f"grew over the {limit}-byte limit while read; fix or delete this file"
            )
    finally:
        os.close(fd)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise SessionFileError(path, f"not valid JSON ({exc}); fix or delete this file") from None


def remove(path: Path, *, durable: bool) -> bool:
    """Delete a sidecar if it exists; True if there was one."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    if durable:
        fsync_directory(path.parent)
    return True


def append_line(path: Path, record: dict[str, Any], *, durable: bool, timeout: float) -> None:
    """Append one record to a JSON Lines sidecar, under that file's lock, as sessions are appended."""
    with Transaction(path, write=True, create=True, timeout=timeout, durable=durable) as file:
        storage.append(file.fd, path, stable_json(record, indent=False), durable=durable, size=file.size)


def read_lines(path: Path, *, timeout: float) -> list[Any]:
    """Every record of a JSON Lines sidecar (a torn tail is skipped, as in sessions).

    Raises:
        SessionFileError: a line is longer than :data:`RECORD_BYTES` (found a piece at a time,
            before anything is parsed), or is not a JSON object.
    """
    with Transaction(path, write=False, timeout=timeout) as file:
        if not file.exists:
            return []
        line = _first_line_longer_than(file.fd, file.size, RECORD_BYTES)
        if line is not None:
            raise SessionFileError(
                path,
                f"line {line} is longer than {RECORD_BYTES} bytes: not a log of records; fix or delete it",
            )
        return reads.read_items(file.fd, path, size=file.size)


def _first_line_longer_than(fd: int, size: int, limit: int) -> int | None:
    """The number of the first line (or unterminated tail) over ``limit`` bytes, read 1 MB at a time."""
    line, run, position = 1, 0, 0  # run: bytes since the last newline
    while position < size:
        piece = reads.read_range(fd, position, min(size, position + (1 << 20)))
        if not piece:
            break
        position += len(piece)
        start = 0
        while (newline := piece.find(b"\n", start)) >= 0:
            if run + newline - start > limit:
                return line
            line, run, start = line + 1, 0, newline + 1
        run += len(piece) - start
        if run > limit:
            return line
    return None


def held_back(session_path: str | os.PathLike[str]) -> int:
    """How many items the session's paused run holds back from its history (0: none, no run, or
    a ``.run`` that does not start as ``history.paused_runs.write`` writes it).

    ``write`` sorts keys, so ``"held"`` comes first: its first bytes say it, without a JSON
    parser, which ``ls`` never imports.
    """
    import re

    try:
        head = read_head(os.fspath(session_path) + RUN, 64)
    except (OSError, SessionFileError):
        return 0
    found = re.match(rb'\{\s*"held":\s*(\d{1,9})\s*[,}]', head or b"")
    return int(found.group(1)) if found else 0


def read_head(path: str | os.PathLike[str], limit: int) -> bytes | None:
    """The first ``limit`` bytes of the sidecar at ``path`` (fewer if it is shorter); None without one.

    Raises:
        UnsafePathError: a symlink or other non-regular file sits at ``path``.
    """
    opened = open_regular(path)
    if opened is None:
        return None
    fd, held = opened
    try:
        return reads.read_range(fd, 0, min(held.st_size, limit))
    finally:
        os.close(fd)
