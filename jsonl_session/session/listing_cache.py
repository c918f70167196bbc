"""Item counts, merge state, default titles and last activity of a folder's sessions, kept
between listings (``ls`` at scale).

Counting a session's items (and its conflict marker lines) reads every byte of it, its default
title reads up to its first user message, and its last activity reads its ``.times`` sidecar
and its last line: a folder of a million sessions cannot be listed that way each time.
This cache keeps, per session file, what was found and the proof that the file has not changed
since: its inode, size and modification and change times in nanoseconds, and the same of its
``.times`` sidecar. A listing takes a cached value only when all of these still match what
``lstat`` says now, and reads the file again otherwise: the cache is never trusted blindly.
A file changed in the last two seconds is not cached at all: file system clocks tick coarsely,
so a same-size rewrite within one tick would still match (git calls such entries "racily clean").

The cache lives outside the folder, ``$XDG_CACHE_HOME/jsonl-session/`` (else
``~/.cache/jsonl-session/``), one file per folder named by a checksum of the folder's real path,
which the file repeats: a session folder in git stays clean, and a read-only folder still lists
fast. Like any file it is input: one that is malformed, too big or for another folder is ignored
and rebuilt. Saving it is best effort, by atomic replace (no cache directory, no cache).
``JSONL_SESSION_CACHE=off`` turns it off.

The layout loads in a few C calls even for a million sessions, and without orjson (whose import
alone would double ``ls``'s start-up): a line ``jsonl-session listing cache 2 <byte order>``,
the folder's real path and a newline, the number of sessions, the size of the names and the size
of the titles (8 bytes each, little-endian), the file names joined by NUL, then 13 signed 64-bit
integers per session in the machine's byte order: the session file's inode, size, mtime and
ctime (ns), its item count (-1: not counted), its newest item's time (ms; -1: not read, -2:
none), the ``.times`` file's inode, size, mtime and ctime (-1 each: no ``.times``), its conflict
marker lines (-1: not counted), and where its default title is in the titles that follow and its
length in bytes (-1: not read, -2: none); then the default titles, UTF-8, one after the other. A
title is at most ``MAX_TITLE_BYTES`` (60 characters); a longer one, or one outside the titles,
is read again.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from typing import Literal

# Numbers are read through a memoryview cast to int64 (``q``, native order as the magic line
# says), not an ``array``: the array module, a C extension, cost a warm ``ls`` ~0.25 ms to import.
_NO_NUMBERS = memoryview(b"").cast("q")

__all__ = ["ListingCache"]

_MAGIC = f"jsonl-session listing cache 2 {sys.byteorder}\n".encode()
MAX_BYTES = 512 * 1024 * 1024
"""A bigger cache file is ignored (a million sessions take about 100 MB)."""
RACY_NS = 2_000_000_000
# ino, size, mtime, ctime, items, newest item (ms), the .times file's ino, size, mtime, ctime,
# conflict marker lines, and the default title's offset and length
_FIELDS = 13
_UNKNOWN = -1  # not read yet
_NONE = -2  # read: no item has a time, or no user message gives a default title
MAX_TITLE_BYTES = 4 * 60
"""The longest default title kept (60 characters of up to 4 bytes): a longer claim is not trusted."""


def _matches(entry: list[int], stat: os.stat_result) -> bool:
    return (
        entry[0] == stat.st_ino
        and entry[1] == stat.st_size
        and entry[2] == stat.st_mtime_ns
        and entry[3] == stat.st_ctime_ns
    )


def _matches_times(entry: list[int], times: os.stat_result | None) -> bool:
    if times is None:
        return entry[6] == entry[7] == entry[8] == entry[9] == _UNKNOWN
    return (
        entry[6] == times.st_ino
        and entry[7] == times.st_size
        and entry[8] == times.st_mtime_ns
        and entry[9] == times.st_ctime_ns
    )


def _racy(stat: os.stat_result) -> bool:
    return max(stat.st_mtime_ns, stat.st_ctime_ns) > time.time_ns() - RACY_NS


def _key(stat: os.stat_result | None) -> list[int]:
    if stat is None:
        return [_UNKNOWN] * 4
    return [stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns]


class ListingCache:
    """One folder's cached counts and activity times; ``load``, look up, ``save``."""

    def __init__(
        self, folder: str, path: str | None, names: list[str], numbers: memoryview, titles: bytes = b""
    ) -> None:
        self.folder = folder
        self.path = path
        self._index = {name: position for position, name in enumerate(names)}
        self._numbers = numbers  # _FIELDS per name, in the order of ``names``
        self._titles = titles  # the default titles the numbers point into
        self._fresh: dict[str, list[int]] = {}  # entries made or changed by this listing
        self._fresh_titles: dict[str, str | None] = {}  # default titles read by this listing
        self._seen: set[str] = set()
        self._changed = False

    @classmethod
    def load(cls, folder: str) -> ListingCache:
        """The cache of ``folder`` (empty when there is none, or it cannot be trusted)."""
        path = _cache_path(folder)
        if path is None:
            return cls(folder, None, [], _NO_NUMBERS)
        return cls(folder, path, *_read(path, os.path.realpath(folder)))

    def _get(self, name: str) -> list[int] | None:
        entry = self._fresh.get(name)
        if entry is not None:
            return entry
        position = self._index.get(name)
        if position is None:
            return None
        return self._numbers[position * _FIELDS : (position + 1) * _FIELDS].tolist()

    def counts(self, name: str, stat: os.stat_result) -> tuple[int, int] | None:
        """The cached item count and conflict marker lines of the session file ``name`` if
        ``stat`` proves it unchanged."""
        self._seen.add(name)
        entry = self._get(name)
        if entry is None or not _matches(entry, stat) or entry[4] < 0 or entry[10] < 0:
            return None
        return entry[4], entry[10]

    def default_title(self, name: str, stat: os.stat_result) -> str | None | Literal[False]:
        """The cached default title (None: the session has none) if ``stat`` proves the file
        unchanged, else False (not known: read it)."""
        self._seen.add(name)
        entry = self._get(name)
        if entry is None or not _matches(entry, stat):
            return False
        return self._title(name, entry)

    def _title(self, name: str, entry: list[int]) -> str | None | Literal[False]:
        if name in self._fresh_titles:
            return self._fresh_titles[name]
        at, length = entry[11], entry[12]
        if length == _NONE:
            return None
        if not (0 <= length <= MAX_TITLE_BYTES and 0 <= at <= len(self._titles) - length):
            return False
        try:
            return self._titles[at : at + length].decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            return False

    def activity(self, name: str, stat: os.stat_result, times: os.stat_result | None) -> float | None | bool:
        """The cached newest item time (seconds; None: it has none) if the file and ``.times`` are
        unchanged, else False (not known: read it)."""
        self._seen.add(name)
        entry = self._get(name)
        if entry is None or not _matches(entry, stat) or not _matches_times(entry, times):
            return False
        newest = entry[5]
        if newest == _UNKNOWN:
            return False
        return None if newest == _NONE else newest / 1000

    def remember_counts(self, name: str, stat: os.stat_result, items: int, markers: int) -> None:
        """Keep ``name``'s item count and conflict marker lines as of ``stat``, unless the file
        changed just now."""
        if _racy(stat):
            return
        entry = self._entry(name, stat)
        if entry[4] != items or entry[10] != markers:
            entry[4], entry[10] = items, markers
            self._changed = True

    def remember_default_title(self, name: str, stat: os.stat_result, title: str | None) -> None:
        """Keep ``name``'s default title as of ``stat``, unless the file changed just now."""
        if _racy(stat) or (
            title is not None and len(title.encode("utf-8", "surrogatepass")) > MAX_TITLE_BYTES
        ):
            return
        entry = self._entry(name, stat)
        if self._title(name, entry) != title:
            self._fresh_titles[name] = title
            self._changed = True

    def remember_activity(
        self, name: str, stat: os.stat_result, times: os.stat_result | None, newest: float | None
    ) -> None:
        """Keep ``name``'s newest item time as of ``stat`` and ``times``, unless either changed just now."""
        if _racy(stat) or (times is not None and _racy(times)):
            return
        entry = self._entry(name, stat)
        value = _NONE if newest is None else round(newest * 1000)
        if entry[5] != value or not _matches_times(entry, times):
            entry[5] = value
            entry[6:10] = _key(times)
            self._changed = True

    def _entry(self, name: str, stat: os.stat_result) -> list[int]:
        """``name``'s entry to change: kept if ``stat`` matches it, else a new one."""
        entry = self._get(name)
        if entry is None or not _matches(entry, stat):
            entry = [*_key(stat), _UNKNOWN, _UNKNOWN, *_key(None), _UNKNOWN, _UNKNOWN, _UNKNOWN]
            self._fresh_titles.pop(name, None)
            self._changed = True
        self._fresh[name] = entry
        return entry

    def save(self) -> None:
        """Write the cache if it changed, keeping only the sessions this listing saw (best effort)."""
        if self._index.keys() - self._seen:
            self._changed = True  # sessions gone from the folder: forget them
        if not self._changed or self.path is None:
            return
        from array import array  # only to write: a warm listing reads (see _NO_NUMBERS)

        names = sorted(self._seen & (self._index.keys() | self._fresh.keys()))
        numbers = array("q")
        titles: list[bytes] = []
        at = 0
        for name in names:
            entry = self._get(name)
            assert entry is not None
            title = self._title(name, entry)
            if isinstance(title, str):
                titles.append(title.encode("utf-8", "surrogatepass"))
                entry = [*entry[:11], at, len(titles[-1])]
                at += len(titles[-1])
            else:
                entry = [*entry[:11], _UNKNOWN, _UNKNOWN if title is False else _NONE]
            numbers.extend(entry)
        blob = b"\0".join(os.fsencode(name) for name in names)
        data = b"".join(
            [
                _MAGIC,
                os.fsencode(os.path.realpath(self.folder)) + b"\n",
                len(names).to_bytes(8, "little"),
                len(blob).to_bytes(8, "little"),
                at.to_bytes(8, "little"),
                blob,
                numbers.tobytes(),
                *titles,
            ]
        )
        temporary = f"{self.path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
            os.replace(temporary, self.path)
        except OSError:
            try:
                os.unlink(temporary)
            except OSError:
                pass


def _cache_path(folder: str) -> str | None:
    if os.environ.get("JSONL_SESSION_CACHE", "").lower() in ("off", "0", "no"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if not os.path.isabs(base):
        return None  # the XDG rule: a relative path is to be ignored
    real = os.path.realpath(folder)
    return os.path.join(base, "jsonl-session", f"listing-{_checksum(os.fsencode(real)):08x}")


def _checksum(data: bytes) -> int:
    """32-bit FNV-1a of ``data``: names the cache file (which repeats the path it is for) without
    loading zlib, a shared library, on ``ls``'s way.

    Example:
        >>> f"{_checksum(b'/home/ann/sessions'):08x}"
        'c349ff9f'
    """
    value = 0x811C9DC5
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value


def _read(path: str, real_folder: str) -> tuple[list[str], memoryview, bytes]:
    """The names, numbers and titles of a cache file for ``real_folder``; empty if missing or not
    trustworthy."""
    nothing: tuple[list[str], memoryview, bytes] = ([], _NO_NUMBERS, b"")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return nothing
    try:
        import stat

        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_BYTES:
            return nothing
        data = b"".join(iter(lambda: os.read(fd, 1 << 22), b""))
    except OSError:
        return nothing
    finally:
        os.close(fd)
    folder = os.fsencode(real_folder) + b"\n"
    start = len(_MAGIC) + len(folder)
    if not data.startswith(_MAGIC) or data[len(_MAGIC) : start] != folder or len(data) < start + 24:
        return nothing
    count = int.from_bytes(data[start : start + 8], "little")
    names_size = int.from_bytes(data[start + 8 : start + 16], "little")
    titles_size = int.from_bytes(data[start + 16 : start + 24], "little")
    numbers_at = start + 24 + names_size
    titles_at = numbers_at + count * _FIELDS * 8
    if len(data) != titles_at + titles_size:
        return nothing
    names = os.fsdecode(data[start + 24 : numbers_at]).split("\0") if count else []
    if len(names) != count:
        return nothing
    return names, memoryview(data)[numbers_at:titles_at].cast("q"), data[titles_at:]
