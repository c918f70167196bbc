"""What a backend's own tables cannot hold, kept next to them: the companion table and key space.

The SDK's sessions store items only. What a folder also knows about a session travels with it
in a *companion* in the same database, written by jsonl-session alone (the SDK never reads it):

* the session file's mode and modification time (kind ``.jsonl``; its content is the number
  and SHA-256 of the items exported, ``{"items":N,"sha256":"..."}``, see ``items_digest``);
* every sidecar of ``core.names.KINDS`` (lineage, usage log, paused run, and any kind added
  there), byte for byte, with its mode and modification time (kind ``.jsonl.usage`` and so on:
  the kind is what follows the session id in the file's name).

SQL (PostgreSQL, SQLite, any SQLAlchemy database), one row per session and kind::

    CREATE TABLE jsonl_session_metadata (
        session_id VARCHAR NOT NULL,    -- as in agent_sessions
        kind       VARCHAR NOT NULL,    -- '.jsonl', '.jsonl.lineage', '.jsonl.usage', ...
        content    BYTEA/BLOB NOT NULL, -- the file's bytes ('.jsonl': count and SHA-256 of the items)
        mode       INTEGER NOT NULL,    -- permission bits (0o600 = 384)
        mtime_ns   BIGINT NOT NULL,     -- modification time, nanoseconds since the epoch
        updated_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
        PRIMARY KEY (session_id, kind))

Redis, one hash per session, ``jsonl-session:meta:<id>``, three fields per kind: ``<kind>``
(the bytes), ``<kind>:mode`` and ``<kind>:mtime_ns`` (decimal). A session has companion
metadata once exported by jsonl-session: its ``.jsonl`` entry is always there, and a kind
without an entry is a sidecar the session did not have.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import reads, scanner, sidecar_files, storage
from ..core.names import KINDS, SUFFIX, TIMES
from ..core.safe_open import open_regular

__all__ = [
    "FILE",
    "REDIS_PREFIX",
    "TABLE",
    "Entry",
    "Metadata",
    "apply_locally",
    "from_redis",
    "items_digest",
    "read_locally",
    "restore_times",
    "set_mode",
    "sidecar_kinds",
    "to_redis",
]

TABLE = "jsonl_session_metadata"
REDIS_PREFIX = "jsonl-session:meta:"
FILE = SUFFIX
"""The kind of the session file itself: its mode and time (the items are in the SDK's tables)."""


@dataclass(frozen=True)
class Entry:
    """One file of a session as the companion keeps it."""

    content: bytes
    mode: int
    mtime_ns: int


Metadata = dict[str, Entry]
"""A session's companion entries by kind; empty when it has none (never exported by us)."""


def sidecar_kinds() -> tuple[str, ...]:
    """The kinds of the sidecars that travel (``.jsonl.lineage``, ...), from ``core.names.KINDS``."""
    return tuple(SUFFIX + kind for kind in KINDS)


def read_locally(path: Path, fd: int, payload: bytes) -> Metadata:
    """The session's file (held open as ``fd``, under its lock, its items encoded as ``payload``)
    and sidecars, as companion entries."""
    held = os.fstat(fd)
    found = {FILE: Entry(items_digest(payload), stat.S_IMODE(held.st_mode), held.st_mtime_ns)}
    for kind in KINDS:
        entry = _read(sidecar_files.sidecar(path, kind))
        if entry is not None:
            found[SUFFIX + kind] = entry
    return found


def items_digest(payload: bytes, count: int | None = None) -> bytes:
    """The ``.jsonl`` entry's content: how many items were exported and their SHA-256 as JSON Lines,
    so that an import knows whether the items it writes are exactly those (then the file gets
    its recorded time back) or newer ones (then it keeps the time of the import). ``count``:
    the number of items, when the caller knows it (else counted in ``payload``).

    Example:
        >>> items_digest(b'{"n":1}\\n')[:12]
        b'{"items":1,"'
    """
    import hashlib

    digest = hashlib.sha256(payload).hexdigest()
    if count is None:
        count = len(scanner.scan_lines(payload).lines)
    return b'{"items":%d,"sha256":"%s"}' % (count, digest.encode())


def apply_locally(
    path: Path,
    fd: int,
    metadata: Metadata,
    *,
    durable: bool,
    only_missing: bool = False,
    keep_grown: bool = False,
    listed: Collection[str] | None = None,
) -> tuple[str, ...]:
    """Make the session's sidecars those of ``metadata`` (written, replaced or removed), under
    the session's exclusive lock (held as ``fd``) and after its items are written (a rewrite of
    the items rewrites some sidecars, ``.times``); return the sidecar kinds written. With
    ``only_missing``, only sidecars the session lacks are written. With ``keep_grown`` (the
    items written are newer than those exported), a sidecar here that begins with the
    companion's bytes and goes on is kept: a log that the items' write extended (``.times``
    stamps the new items) says more than the companion. Times are set by :func:`restore_times`
    after. ``listed``: the sidecar kinds (``core.names.KINDS``) a listing of the folder found
    before the lock was taken; one the companion lacks and the listing did not find is not
    looked for (one made since comes from a writer of this session, as if after this call),
    except ``.times``, which the items' own write may have just made.

    Nothing is done without ``metadata`` (a session jsonl-session never exported: nothing is
    known about its sidecars, so the ones here stay).
    """
    if not metadata:
        return ()
    wrote = []
    for kind in KINDS:
        entry = metadata.get(SUFFIX + kind)
        if entry is None and listed is not None and kind not in listed and kind != TIMES:
            continue  # (a .times may be new: the items' write just stamped one)
        target = sidecar_files.sidecar(path, kind)
        if kind == TIMES and entry is not None and _write_new_times(target, entry):
            wrote.append(SUFFIX + kind)  # there was none (the usual import): no read first
            continue
        current = _read(target)
        if only_missing and current is not None:
            continue
        if keep_grown and current is not None and entry is not None and _grown(current, entry):
            continue
        if entry is None:
            if current is not None:
                sidecar_files.remove(target, durable=durable)
        elif current is None and kind == TIMES and _write_new_times(target, entry):
            wrote.append(SUFFIX + kind)
        elif current is None or current.content != entry.content or current.mode != entry.mode:
            storage.replace_file(target, entry.content, durable=durable, prepare=_chmod(entry.mode))
            wrote.append(SUFFIX + kind)
        elif current.mtime_ns != entry.mtime_ns:
            wrote.append(SUFFIX + kind)  # the same bytes: only its time to restore
    return tuple(wrote)


def _write_new_times(target: Path, entry: Entry) -> bool:
    """Write a ``.times`` where there was none, in place and unsynced; False if something is
    there after all (the atomic replace then deals with it).

    Times are advisory and the core never syncs them (``core/item_times.py``): a crash may lose
    them, or leave a torn record that readers skip, never the items. So the one replace kept for
    a sidecar that replaces another is not needed here, and neither is its sync, which made an
    import of an exported session sync three files where the SDK's own copy syncs one.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    mode = entry.mode & 0o777
    try:
        fd = os.open(target, flags, mode)  # created with its mode: no fchmod, a journaled change
    except FileExistsError:
        return False
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) != mode:  # the umask took bits away: put them back
            os.fchmod(fd, mode)
        storage.write_at_end(fd, entry.content, 0, durable=False)
    except BaseException:
        os.unlink(target)
        raise
    finally:
        os.close(fd)
    return True


def _grown(current: Entry, entry: Entry) -> bool:
    return len(current.content) > len(entry.content) and current.content.startswith(entry.content)


def set_mode(fd: int, metadata: Metadata, current: int) -> None:
    """Give the session file held as ``fd`` (its mode now ``current``) its recorded mode, before
    a rewrite's rename (which gives the new file the held one's mode)."""
    own = metadata.get(FILE)
    if own is not None and own.mode & 0o777 != current & 0o777:
        os.fchmod(fd, own.mode & 0o777)


def restore_times(path: Path, metadata: Metadata, kinds: Iterable[str]) -> None:
    """Give the session file and the sidecars of ``kinds`` their recorded modification times."""
    for kind in kinds:
        entry = metadata.get(kind)
        if entry is None:
            continue
        target = path.with_name(path.name + kind[len(SUFFIX) :])
        try:
            os.utime(target, ns=(entry.mtime_ns, entry.mtime_ns), follow_symlinks=False)
        except FileNotFoundError:
            pass


def to_redis(metadata: Metadata) -> dict[str, bytes]:
    """The companion hash's fields for ``metadata``."""
    fields: dict[str, bytes] = {}
    for kind, entry in metadata.items():
        fields[kind] = entry.content
        fields[f"{kind}:mode"] = str(entry.mode).encode()
        fields[f"{kind}:mtime_ns"] = str(entry.mtime_ns).encode()
    return fields


def from_redis(fields: dict[Any, Any]) -> Metadata:
    """The entries of a companion hash (as ``HGETALL`` returns it: bytes keys and values)."""
    text = {(key.decode() if isinstance(key, bytes) else key): value for key, value in fields.items()}
    found = {}
    for kind, content in text.items():
        if ":" in kind:
            continue
        try:
            mode = int(text[f"{kind}:mode"])
            mtime_ns = int(text[f"{kind}:mtime_ns"])
        except (KeyError, ValueError):
            continue  # not one we wrote whole: ignored
        found[kind] = Entry(bytes(content), mode, mtime_ns)
    return found


def _read(path: Path) -> Entry | None:
    opened = open_regular(path)
    if opened is None:
        return None
    fd, held = opened
    try:
        return Entry(reads.read_range(fd, 0, held.st_size), stat.S_IMODE(held.st_mode), held.st_mtime_ns)
    finally:
        os.close(fd)


def _chmod(mode: int) -> Any:
    def prepare(fd: int) -> None:
        os.fchmod(fd, mode & 0o777)

    return prepare
