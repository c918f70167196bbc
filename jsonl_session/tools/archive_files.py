"""One archived session as a file: a ``.tar.gz`` holding a manifest, the session and its sidecars.

``<dir>/.archive/<file>.<UTC time>.tar.gz`` (``convo_1.jsonl.20260102T030405.123456Z.tar.gz``)
is a plain POSIX (pax) tar, gzip-compressed, that ``tar xzf`` opens by hand. Its first member
is ``jsonl-session-archive.json``, the manifest (see ``docs/format.md``)::

    {"files": [{"mode": 384, "mtime": 1767322245.0, "name": "convo_1.jsonl",
                "sha256": "5d41...", "size": 812}, ...],
     "format": "jsonl-session-archive", "version": 1, "session_id": "convo_1",
     "archived_at": "2026-01-02T03:04:05Z", "last_written": "2025-11-30T08:00:00Z",
     "items": 14, "usage": {"input_tokens": 812, ...} or null}

then every file of the session byte for byte, under its own name (no folders). The manifest
comes first so that ``stats`` and ``restore --list`` read it and stop: the rest of the
archive is never decompressed for them. ``usage`` is the session's usage totals
(``history.usage.session_usage``), so archived tokens stay counted.

An archive is written once through ``core.storage.replace_file`` (a locked temporary file,
fsynced, renamed, folder fsynced) and read back whole with :func:`read_archive`, which checks
every member against the manifest's sizes and SHA-256 sums; names with a separator are refused,
so a hand-made archive cannot write outside the folder on restore.
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import storage
from ..core.errors import SessionFileError
from ..core.locking import make_private_directories
from ..core.sidecar_files import stable_json

FOLDER = ".archive"
"""The archive folder inside a sessions folder: a dot folder, so no ``sessions/*.jsonl`` glob and
no folder listing (``ls``, ``SessionDirectory.list``) ever takes what it holds for a session."""
MANIFEST = "jsonl-session-archive.json"
FORMAT = "jsonl-session-archive"
VERSION = 1
_STAMP = "%Y%m%dT%H%M%S.%fZ"
_NAME = re.compile(r"(?P<file>.+\.jsonl)\.(?P<stamp>\d{8}T\d{6}\.\d{6}Z)\.tar\.gz")
# What replace_file leaves when killed before its rename: ``.<archive name>.<8 hex>.tmp``.
_TEMP = re.compile(r"\..+\.jsonl\.\d{8}T\d{6}\.\d{6}Z\.tar\.gz\.[0-9a-f]{8}\.tmp")
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass(frozen=True)
class Member:
    """One file of an archived session: its name in the sessions folder, bytes, mode and time."""

    name: str
    data: bytes
    mode: int
    mtime: float


def archive_name(file_name: str, when: float) -> str:
    """The archive's file name for session file ``file_name`` archived at ``when`` (epoch seconds).

    Example:
        >>> archive_name("convo_1.jsonl", 0.25)
        'convo_1.jsonl.19700101T000000.250000Z.tar.gz'
    """
    from datetime import datetime, timezone

    return f"{file_name}.{datetime.fromtimestamp(when, timezone.utc).strftime(_STAMP)}.tar.gz"


def session_file_of(archive: str) -> str | None:
    """The session file name an archive's name holds, or None if it is not an archive's name.

    Example:
        >>> session_file_of("convo_1.jsonl.19700101T000000.250000Z.tar.gz")
        'convo_1.jsonl'
    """
    match = _NAME.fullmatch(archive)
    return match["file"] if match else None


def archives(folder: Path) -> list[Path]:
    """Every archive in the archive folder ``folder``, oldest first per session file."""
    try:
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []
    # the stamp sorts as the time it names; sort by session file first, then by time
    found = [(match["file"], match["stamp"], name) for name in names if (match := _NAME.fullmatch(name))]
    return [folder / name for _, _, name in sorted(found)]


def temp_leftovers(folder: Path) -> list[Path]:
    """Temporary files of archive writes in ``folder`` (live or left by a killed prune)."""
    try:
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(folder / name for name in names if _TEMP.fullmatch(name))


def manifest_for(
    session_id: str, members: list[Member], *, archived_at: str, last_written: str, items: int, usage: Any
) -> dict[str, Any]:
    """The manifest of an archive of ``members`` (the session file first)."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "session_id": session_id,
        "archived_at": archived_at,
        "last_written": last_written,
        "items": items,
        "usage": usage,
        "files": [
            {
                "name": member.name,
                "size": len(member.data),
                "sha256": hashlib.sha256(member.data).hexdigest(),
                "mode": member.mode,
                "mtime": member.mtime,
            }
            for member in members
        ],
    }


def write_archive(path: Path, manifest: dict[str, Any], members: list[Member]) -> None:
    """Write the archive durably and atomically (the folder is made 0700 if missing)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT, compresslevel=6) as tar:
        _add(tar, Member(MANIFEST, stable_json(manifest), 0o600, float(manifest_time(manifest))))
        for member in members:
            _add(tar, member)
    if not path.parent.is_dir():
        make_private_directories(path.parent, durable=True)
    # Durable whatever the folder's setting: the session is deleted only once this is on disk.
    storage.replace_file(path, buffer.getvalue(), durable=True)


def manifest_time(manifest: dict[str, Any]) -> int:
    """The archive time as seconds since the epoch (the manifest member's time in the tar)."""
    from datetime import datetime

    return int(datetime.fromisoformat(str(manifest["archived_at"]).replace("Z", "+00:00")).timestamp())


def _add(tar: tarfile.TarFile, member: Member) -> None:
    info = tarfile.TarInfo(member.name)
    info.size = len(member.data)
    info.mode = member.mode & 0o777
    info.mtime = int(member.mtime)
    tar.addfile(info, io.BytesIO(member.data))


def read_manifest(path: Path) -> dict[str, Any]:
    """The manifest of the archive at ``path``, reading only its first member.

    Raises:
        SessionFileError: not an archive of ours (or damaged).
    """
    with _ArchiveFile(path) as raw:
        try:
            with tarfile.open(fileobj=raw, mode="r|gz") as tar:
                first = tar.next()
                return _parse_manifest(path, tar, first)
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise SessionFileError(path, f"not a readable archive ({exc})") from None


def read_archive(path: Path) -> tuple[dict[str, Any], list[Member]]:
    """The manifest and every member of the archive at ``path``, each checked against the manifest.

    Raises:
        SessionFileError: damaged, or not an archive of ours: a member missing, extra, of
            another size or SHA-256 than the manifest says, or named with a path separator.
    """
    members: list[Member] = []
    with _ArchiveFile(path) as raw:
        try:
            with tarfile.open(fileobj=raw, mode="r|gz") as tar:
                manifest = _parse_manifest(path, tar, tar.next())
                # tar.next(), not iteration: iterating a stream starts again from the manifest
                while (info := tar.next()) is not None:
                    if not info.isreg():
                        raise SessionFileError(path, f"member {info.name!r} is not a regular file")
                    extracted = tar.extractfile(info)
                    assert extracted is not None
                    members.append(Member(info.name, extracted.read(), info.mode, float(info.mtime)))
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise SessionFileError(path, f"not a readable archive ({exc})") from None
    listed = manifest.get("files")
    if not isinstance(listed, list) or len(listed) != len(members) or not members:
        raise SessionFileError(path, "its members do not match its manifest")
    for index, (entry, member) in enumerate(zip(listed, members)):
        name = member.name
        if (
            not isinstance(entry, dict)
            or entry.get("name") != name
            or "/" in name
            or name in (".", "..")
            or entry.get("size") != len(member.data)
            or entry.get("sha256") != hashlib.sha256(member.data).hexdigest()
        ):
            raise SessionFileError(path, f"member {name!r} does not match its manifest (damaged archive)")
        # the manifest keeps the exact time (the tar header only whole seconds)
        exact = entry.get("mtime")
        if isinstance(exact, (int, float)):
            members[index] = Member(name, member.data, member.mode, float(exact))
    return manifest, members


def _parse_manifest(path: Path, tar: tarfile.TarFile, first: tarfile.TarInfo | None) -> dict[str, Any]:
    import orjson

    if first is None or first.name != MANIFEST or not first.isreg():
        raise SessionFileError(path, f"not a jsonl-session archive (no {MANIFEST} first)")
    extracted = tar.extractfile(first)
    assert extracted is not None
    try:
        manifest = orjson.loads(extracted.read())
    except orjson.JSONDecodeError as exc:
        raise SessionFileError(path, f"its manifest is not valid JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise SessionFileError(path, "not a jsonl-session archive (unknown manifest)")
    if manifest.get("version") != VERSION:
        raise SessionFileError(
            path, f"archive version {manifest.get('version')!r}: this release reads {VERSION}"
        )
    return manifest


class _ArchiveFile:
    """The archive file, opened without following a symlink, as a binary file object."""

    def __init__(self, path: Path) -> None:
        try:
            self.fd = os.open(path, _READ_FLAGS)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise SessionFileError(path, "is a symlink; refusing to read it") from None
            raise
        self.file = os.fdopen(self.fd, "rb")

    def __enter__(self) -> io.BufferedReader:
        return self.file

    def __exit__(self, *exc: object) -> None:
        self.file.close()
