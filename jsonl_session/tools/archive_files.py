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
fsynced, renamed, folder fsynced) and checked back with :func:`holds`. Reading one, whoever
made it, is bounded as it decompresses (``_TarStream``): the manifest to :data:`MANIFEST_LIMIT`,
an extended header to :data:`HEADER_LIMIT`, each member to the size its manifest entry gives
it (refused at its header if that says more), and only regular members under the plain names
the manifest lists; :func:`read_archive` then checks every member's SHA-256.
"""

from __future__ import annotations

import errno
import gzip
import hashlib
import io
import os
import re
import stat
import tarfile
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import storage
from ..core.errors import SessionFileError, UnsafePathError
from ..core.locking import make_private_directories
from ..core.safe_open import open_regular
from ..core.sidecar_files import stable_json

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from datetime import datetime

    from typing_extensions import Self

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

# Archives are input (a hand-made one, or any file named like one), read bounded as they
# decompress: see docs/retention.md, "Reading an archive".
MANIFEST_LIMIT = 1024 * 1024
"""The most bytes a manifest may hold (ours are a few hundred: a dozen file entries and usage totals)."""
HEADER_LIMIT = 64 * 1024
"""The most bytes of one extended tar header (a pax record set, a GNU long name)."""
MAX_MEMBERS = 64
"""The most files an archive may list (a session and its sidecars are at most a dozen)."""
_BLOCK = tarfile.BLOCKSIZE
_CHUNK = 1024 * 1024
_LONG_NAMES = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK)


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


def next_archive_name(file_name: str, when: float, newest: Path | None) -> str:
    """The name of a new archive of ``file_name`` made at ``when``: its time, or one microsecond
    after ``newest`` (the session's newest archive) if that is stamped later, so that the new
    one is always the newest. One step, whatever a clock or a copied file put in the folder.

    Raises:
        SessionFileError: ``newest`` is stamped at the last microsecond a name can hold.

    Example:
        >>> next_archive_name("a.jsonl", 0.25, Path("a.jsonl.29991231T235959.999999Z.tar.gz"))
        'a.jsonl.30000101T000000.000000Z.tar.gz'
    """
    from datetime import timedelta

    name = archive_name(file_name, when)
    if newest is None or name > newest.name:
        return name
    stamp = _stamp(newest.name)
    assert stamp is not None  # archives() lists only names with a real time
    try:
        later = stamp + timedelta(microseconds=1)
    except OverflowError:
        raise SessionFileError(
            newest, "is stamped at the end of time: no later archive name exists (move it out of the folder)"
        ) from None
    return f"{file_name}.{later.strftime(_STAMP)}.tar.gz"


def checked_folder(folder: Path) -> Path:
    """``folder`` (an archive folder), refused if it is a symlink or not a folder: archives are
    written, read and deleted only inside the sessions folder.

    Raises:
        UnsafePathError: a symlink or another kind of file sits there.
    """
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        return folder
    if stat.S_ISLNK(info.st_mode):
        raise UnsafePathError(folder, "is a symlink; refusing to follow it out of the sessions folder")
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafePathError(folder, "is not a folder; refusing to use it for archives")
    return folder


def archives(folder: Path) -> list[Path]:
    """Every archive in the archive folder ``folder``, oldest first per session file.

    Raises:
        UnsafePathError: the folder is a symlink (see :func:`checked_folder`).
    """
    try:
        names = os.listdir(checked_folder(folder))
    except FileNotFoundError:
        return []
    # the stamp sorts as the time it names; sort by session file first, then by time. A name
    # whose stamp is no real time (month 13) is not an archive's: nothing of ours makes one
    found = [
        (match["file"], match["stamp"], name)
        for name in names
        if (match := _NAME.fullmatch(name)) and _stamp(name) is not None
    ]
    return [folder / name for _, _, name in sorted(found)]


def temp_leftovers(folder: Path) -> list[Path]:
    """Temporary files of archive writes in ``folder`` (live or left by a killed prune)."""
    try:
        names = os.listdir(checked_folder(folder))
    except FileNotFoundError:
        return []
    return sorted(folder / name for name in names if _TEMP.fullmatch(name))


def _stamp(archive: str) -> datetime | None:
    """The time an archive's name holds (naive, UTC), or None if it holds none."""
    from datetime import datetime

    match = _NAME.fullmatch(archive)
    if match is None:
        return None
    try:
        return datetime.strptime(match["stamp"], _STAMP)
    except ValueError:
        return None


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
    if not checked_folder(path.parent).is_dir():
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
    """The manifest of the archive at ``path``, reading only its first member (at most
    :data:`MANIFEST_LIMIT` bytes of it).

    Raises:
        SessionFileError: not an archive of ours (or damaged, or a manifest past its limit).
        UnsafePathError: the archive is a symlink.
    """
    with _TarStream(path) as tar:
        return _manifest(tar)


def read_archive(
    path: Path, allowed: Mapping[str, int | None] | None = None
) -> tuple[dict[str, Any], list[Member]]:
    """The manifest and every member of the archive at ``path``, each checked against the manifest.

    ``allowed`` maps the only member names accepted to the most bytes each may hold (None: no
    limit); names are checked on the manifest, before any member is read. Every member is read
    a chunk at a time and never past the size the manifest gives it, so what this holds is
    what the manifest declares, whatever the archive decompresses to.

    Raises:
        SessionFileError: damaged, or not an archive of ours: a member missing, extra, not a
            regular file, of another size or SHA-256 than the manifest says, or not allowed.
    """
    members: list[Member] = []
    with _TarStream(path) as tar:
        manifest = _manifest(tar)
        files = _listed_files(path, manifest, allowed)
        for entry in files:
            header = _member_header(tar, entry)
            data = bytearray()
            digest = hashlib.sha256()
            for chunk in tar.data(header):
                digest.update(chunk)
                data += chunk
            if digest.hexdigest() != entry["sha256"]:
                raise SessionFileError(
                    path, f"member {entry['name']!r} does not match its manifest (damaged archive)"
                )
            # the manifest keeps the exact time (the tar header only whole seconds)
            exact = entry.get("mtime")
            mtime = float(exact) if isinstance(exact, (int, float)) else header.mtime
            members.append(Member(entry["name"], bytes(data), header.mode, mtime))
        if tar.next() is not None:
            raise SessionFileError(path, "holds more members than its manifest lists")
    return manifest, members


def holds(path: Path, members: list[Member], *, exactly: bool = False) -> bool:
    """Whether the archive at ``path`` holds each of ``members`` byte for byte (and nothing else
    if ``exactly``), compared as it is read, nothing held; False for anything unreadable,
    damaged or not ours.

    A prune killed while deleting left some of the session's files: the archive holding those
    (and the ones already deleted) is the one to finish with.
    """
    wanted = {member.name: member.data for member in members}
    try:
        with _TarStream(path) as tar:
            files = _listed_files(path, _manifest(tar), None)
            sizes = {entry["name"]: entry["size"] for entry in files}
            if any(sizes.get(name) != len(data) for name, data in wanted.items()):
                return False
            if exactly and [entry["name"] for entry in files] != [member.name for member in members]:
                return False
            for entry in files:
                data = wanted.get(entry["name"])
                offset = 0
                for chunk in tar.data(_member_header(tar, entry)):
                    if data is not None and data[offset : offset + len(chunk)] != chunk:
                        return False
                    offset += len(chunk)
            return tar.next() is None
    except (OSError, SessionFileError):
        return False


def _manifest(tar: _TarStream) -> dict[str, Any]:
    import orjson

    path = tar.path
    first = tar.next()
    if first is None or first.name != MANIFEST or not _regular(first):
        raise SessionFileError(path, f"not a jsonl-session archive (no {MANIFEST} first)")
    if first.size > MANIFEST_LIMIT:
        raise SessionFileError(
            path,
            f"its manifest says {first.size} bytes, past the {MANIFEST_LIMIT} a manifest may hold; not read",
        )
    try:
        manifest = orjson.loads(b"".join(tar.data(first)))
    except orjson.JSONDecodeError as exc:
        raise SessionFileError(path, f"its manifest is not valid JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise SessionFileError(path, "not a jsonl-session archive (unknown manifest)")
    if manifest.get("version") != VERSION:
        raise SessionFileError(
            path, f"archive version {manifest.get('version')!r}: this release reads {VERSION}"
        )
    return manifest


def _listed_files(
    path: Path, manifest: dict[str, Any], allowed: Mapping[str, int | None] | None
) -> list[dict[str, Any]]:
    """The manifest's ``files``, each a plain name (allowed, if given) with a size and a sum."""
    listed = manifest.get("files")
    if not isinstance(listed, list) or not 0 < len(listed) <= MAX_MEMBERS:
        raise SessionFileError(path, "its manifest lists no files, or too many")
    names = set()
    for entry in listed:
        if not (
            isinstance(entry, dict)
            and isinstance(name := entry.get("name"), str)
            and isinstance(size := entry.get("size"), int)
            and size >= 0
            and isinstance(entry.get("sha256"), str)
        ):
            raise SessionFileError(
                path, "its manifest lists a file without a name, size or sum (damaged archive)"
            )
        if not _plain_name(name) or name in names:
            raise SessionFileError(path, f"its manifest lists {name!r}, which is no file name of a session")
        if allowed is not None:
            if name not in allowed:
                raise SessionFileError(
                    path, f"holds {name!r}, which is not a file of the session it restores"
                )
            limit = allowed[name]
            if limit is not None and size > limit:
                raise SessionFileError(path, f"holds {name!r} of {size} bytes, past its limit of {limit}")
        names.add(name)
    return listed


def _member_header(tar: _TarStream, entry: dict[str, Any]) -> tarfile.TarInfo:
    """The next member's header, checked against its manifest entry before a byte of it is read."""
    header = tar.next()
    name = entry["name"]
    if header is None:
        raise SessionFileError(tar.path, f"member {name!r} is missing (damaged archive)")
    if header.name != name:
        raise SessionFileError(tar.path, f"member {header.name!r} is not {name!r}, next in its manifest")
    if not _regular(header):
        raise SessionFileError(tar.path, f"member {name!r} is not a regular file")
    if header.size != entry["size"]:
        raise SessionFileError(
            tar.path, f"member {name!r} says {header.size} bytes where its manifest says {entry['size']}"
        )
    return header


def _regular(header: tarfile.TarInfo) -> bool:
    """A plain file (not a link, folder, device, FIFO, sparse or continued file)."""
    return header.type in (tarfile.REGTYPE, tarfile.AREGTYPE)


def _plain_name(name: str) -> bool:
    return bool(name) and "/" not in name and "\0" not in name and name not in (".", "..")


class _TarStream:
    """A tar stream read from a gzip file a block at a time: nothing is decompressed that the
    caller did not ask for, and no header (pax records, GNU long names) is read past
    :data:`HEADER_LIMIT`. ``tarfile`` itself reads such headers whole, and keeps every
    header it met; a hostile archive could make either cost any amount of memory."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.raw = _ArchiveFile(path)
        self.gzip = gzip.GzipFile(fileobj=self.raw.file, mode="rb")
        self.count = 0

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.raw.file.close()

    def next(self) -> tarfile.TarInfo | None:
        """The next member's header (after pax or GNU long-name headers), None at the end."""
        overrides: dict[str, str] = {}
        while True:
            block = self._read(_BLOCK)
            if len(block) < _BLOCK or block == bytes(_BLOCK):
                return None  # the end-of-archive block, or a tar cut short of one
            try:
                header = tarfile.TarInfo.frombuf(block, "utf-8", "surrogateescape")
            except tarfile.HeaderError as exc:
                raise SessionFileError(self.path, f"not a readable archive ({exc})") from None
            self.count += 1
            if self.count > 2 * MAX_MEMBERS + 2:
                raise SessionFileError(self.path, "holds more members than any archive of a session")
            if header.type in (
                tarfile.XHDTYPE,
                tarfile.XGLTYPE,
                tarfile.GNUTYPE_LONGNAME,
                tarfile.GNUTYPE_LONGLINK,
            ):
                if header.size > HEADER_LIMIT:
                    raise SessionFileError(
                        self.path,
                        f"an extended tar header of {header.size} bytes, past {HEADER_LIMIT}; not read",
                    )
                data = b"".join(self.data(header))
                if header.type == tarfile.XHDTYPE:
                    overrides.update(_pax_records(self.path, data))
                elif header.type == tarfile.GNUTYPE_LONGNAME:
                    overrides["path"] = data.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
                continue
            try:
                if "path" in overrides:
                    header.name = overrides["path"]
                if "size" in overrides:
                    header.size = int(overrides["size"])
                if "mtime" in overrides:
                    header.mtime = float(overrides["mtime"])
            except ValueError:
                raise SessionFileError(self.path, "not a readable archive (a bad pax record)") from None
            if header.size < 0:
                raise SessionFileError(self.path, "not a readable archive (a negative size)")
            return header

    def data(self, header: tarfile.TarInfo) -> Iterator[bytes]:
        """The member's bytes, :data:`_CHUNK` at a time, then its padding skipped. Only a
        regular member or an extended header has data in the stream."""
        if not (_regular(header) or header.type in (tarfile.XHDTYPE, tarfile.XGLTYPE, *_LONG_NAMES)):
            return
        left = header.size
        while left:
            chunk = self._read(min(left, _CHUNK))
            if not chunk:
                raise SessionFileError(self.path, "not a readable archive (cut short)")
            left -= len(chunk)
            yield chunk
        self._read(-header.size % _BLOCK)

    def _read(self, size: int) -> bytes:
        """Up to ``size`` bytes (fewer only at the end of the stream), decompressing no more."""
        parts = []
        try:
            while size > 0:
                part = self.gzip.read(size)
                if not part:
                    break
                parts.append(part)
                size -= len(part)
        except (OSError, EOFError, zlib.error) as exc:
            raise SessionFileError(self.path, f"not a readable archive ({exc})") from None
        return b"".join(parts)


def _pax_records(path: Path, data: bytes) -> dict[str, str]:
    """A pax extended header's ``<length> <key>=<value>\\n`` records."""
    records = {}
    position = 0
    try:
        while position < len(data) and data[position]:
            space = data.index(b" ", position)
            length = int(data[position:space])
            record = data[space + 1 : position + length]
            if length <= space - position or not record.endswith(b"\n") or b"=" not in record:
                raise ValueError
            key, _, value = record[:-1].partition(b"=")
            records[key.decode("utf-8", "surrogateescape")] = value.decode("utf-8", "surrogateescape")
            position += length
    except ValueError:
        raise SessionFileError(path, "not a readable archive (a bad pax header)") from None
    return records


class _ArchiveFile:
    """The archive file as a binary file object, opened without following a symlink or waiting on a FIFO."""

    def __init__(self, path: Path) -> None:
        opened = open_regular(path)
        if opened is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))
        self.file = os.fdopen(opened[0], "rb")
