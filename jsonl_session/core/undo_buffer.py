"""Keep the bytes a truncation removes, so a failed fsync can put them back, without holding them in memory.

A durable ``pop`` or ``clear`` cuts the file, then syncs; if the sync fails the file must be
as it was (tests/reliability/test_faults.py), so the removed bytes are kept until the sync
succeeds. ``clear_session()`` of a 300 MB session must not keep all 300 MB in memory
(tests/project/test_memory.py). Small removals (a ``pop``) still stay in memory; larger ones are
copied by the kernel (``copy_file_range``) into an unnamed file in the session's own folder:
no copy of the conversation in a shared temp folder, and none left behind by a crash
(``O_TMPFILE`` files vanish with their last descriptor). Where no such file can be made (a
read-only folder, a full disk) the bytes are kept in memory, as before, rather than fail.
"""

from __future__ import annotations

import errno
import os

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from pathlib import Path

IN_MEMORY = 1024 * 1024
"""Removals up to this many bytes are kept in memory; larger ones spill to an unnamed file
(when the caller names the session's folder)."""
_CHUNK = 1024 * 1024


class Removed:
    """The bytes ``start:end`` of a file, kept (in memory or spilled) until :meth:`close`.

    Example:
        >>> removed = Removed(fd, Path("sessions"), 0, size)      # doctest: +SKIP
        >>> os.ftruncate(fd, 0)                                    # doctest: +SKIP
        >>> removed.restore(fd)  # e.g. after a failed fsync       # doctest: +SKIP
    """

    def __init__(
        self, fd: int, folder: Path | None, start: int, end: int, *, data: bytes | None = None
    ) -> None:
        """``data``: the bytes ``start:end``, when the caller has read them already (kept as they are)."""
        self._data: bytes | None = data
        self._spill: int | None = None
        self._length = end - start
        if data is not None:
            return
        if self._length > IN_MEMORY and folder is not None:
            try:
                self._spill = _unnamed_file(folder)
                _copy(fd, self._spill, start, self._length)
                return
            except OSError:  # a read-only folder, a full disk: keep them in memory after all
                self.close()
        self._data = _read(fd, start, self._length)

    def restore(self, fd: int) -> None:
        """Append the kept bytes to ``fd`` (an ``O_APPEND`` descriptor cut back to where they began)."""
        if self._data is not None:
            _write_all(fd, self._data)
            return
        assert self._spill is not None
        position = 0
        while position < self._length:
            chunk = os.pread(self._spill, min(_CHUNK, self._length - position), position)
            if not chunk:
                raise OSError(errno.EIO, "the spilled bytes ended early")
            _write_all(fd, chunk)
            position += len(chunk)

    def close(self) -> None:
        self._data = None
        if self._spill is not None:
            os.close(self._spill)
            self._spill = None


def _unnamed_file(folder: Path) -> int:
    try:
        return os.open(folder, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600)
    except (AttributeError, OSError):  # no O_TMPFILE (macOS) or not on this file system
        import tempfile  # here: `jsonl-session ls` never spills (tests/project/test_startup.py)

        with tempfile.TemporaryFile(dir=folder, prefix=".jsonl-session-spill-") as file:
            return os.dup(file.fileno())  # the name is already gone; the dup keeps the data


def _copy(source: int, target: int, start: int, length: int) -> None:
    """Copy ``length`` bytes from ``source`` at ``start`` to ``target`` at 0: in the kernel when it can."""
    copied = 0
    while copied < length:
        count = min(_CHUNK * 64, length - copied)
        try:
            done = os.copy_file_range(source, target, count, start + copied, copied)
        except (AttributeError, OSError) as exc:
            if isinstance(exc, OSError) and exc.errno not in (
                errno.EXDEV,
                errno.ENOSYS,
                errno.EINVAL,
                errno.EOPNOTSUPP,
            ):
                raise
            done = os.pwrite(target, os.pread(source, min(_CHUNK, length - copied), start + copied), copied)
        if done == 0:
            raise OSError(errno.EIO, "the file ended before the bytes to keep")
        copied += done


def _read(fd: int, start: int, length: int) -> bytes:
    chunks = []
    while length:
        chunk = os.pread(fd, min(length, 1 << 30), start)
        if not chunk:
            break
        chunks.append(chunk)
        start += len(chunk)
        length -= len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
