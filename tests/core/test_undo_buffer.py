"""The undo buffer keeps the bytes a cut removes, spilled to an unnamed file above 1 MiB, and puts them back.

From the outside a spill and the in-memory fallback look alike (the bytes come back either way),
so a spill that silently failed every time (a wrong length, a zero chunk, an EOF check turned
around) was hidden by the fallback: mutation testing found those survivors. These
tests say which way the bytes were kept, and force the kernel copy's own fallback too.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from jsonl_session.core.undo_buffer import IN_MEMORY, Removed

HEAD = b"h" * (IN_MEMORY + 999) + b"\n"  # its length has the 1 MiB bit set: start ^ n != start + n


def cut_and_restore(tmp_path: Path, body: bytes, *, folder: Path | None) -> tuple[Removed, bytes]:
    path = tmp_path / "s.jsonl"
    path.write_bytes(HEAD + body)
    fd = os.open(path, os.O_RDWR | os.O_APPEND)
    try:
        removed = Removed(fd, folder, len(HEAD), len(HEAD) + len(body))
        os.ftruncate(fd, len(HEAD))
        kept = removed
        kept.restore(fd)
        return kept, path.read_bytes()
    finally:
        os.close(fd)


def body_of(size: int) -> bytes:
    return bytes(index % 251 for index in range(size))


@pytest.mark.parametrize("size", [IN_MEMORY + 1, 3 * IN_MEMORY + 17])
def test_a_big_removal_is_spilled_and_restored_from_where_it_began(tmp_path: Path, size: int) -> None:
    body = body_of(size)
    removed, after = cut_and_restore(tmp_path, body, folder=tmp_path)
    assert after == HEAD + body
    assert removed._spill is not None and removed._data is None, "kept in memory: the spill failed"
    removed.close()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["s.jsonl"]  # nothing left behind


def test_a_small_removal_or_one_without_a_folder_stays_in_memory(tmp_path: Path) -> None:
    for body, folder in ((body_of(IN_MEMORY), tmp_path), (body_of(IN_MEMORY + 1), None)):
        removed, after = cut_and_restore(tmp_path, body, folder=folder)
        assert after == HEAD + body
        assert removed._spill is None and removed._data == body


@pytest.mark.parametrize("error", [errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP])
def test_without_a_kernel_copy_the_bytes_are_copied_by_hand_and_still_spilled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: int
) -> None:
    def no_copy(*args: Any) -> int:
        raise OSError(error, os.strerror(error))

    monkeypatch.setattr(os, "copy_file_range", no_copy)
    body = body_of(2 * IN_MEMORY + 5)
    removed, after = cut_and_restore(tmp_path, body, folder=tmp_path)
    assert after == HEAD + body
    assert removed._spill is not None


def test_another_copy_error_falls_back_to_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(*args: Any) -> int:
        raise OSError(errno.EIO, "copy failed")

    monkeypatch.setattr(os, "copy_file_range", failing)
    body = body_of(IN_MEMORY + 100)
    removed, after = cut_and_restore(tmp_path, body, folder=tmp_path)
    assert after == HEAD + body
    assert removed._spill is None and removed._data == body


def test_a_removal_over_64_mib_is_copied_in_pieces_from_where_each_begins(tmp_path: Path) -> None:
    """The kernel copies at most 64 MiB at a time; the last piece here is a single byte, and the
    removal begins past 64 MiB (a sparse start: the test writes only what is removed).

    Catches (mutation testing): the second piece read from before the removal (``start -
    copied``), and a one-byte piece taken for the end of the file (the spill given up)."""
    start, size = 65 * 1024 * 1024, 64 * 1024 * 1024 + 1
    body = (bytes(range(251)) * (size // 251 + 1))[:size]  # where each byte came from shows
    fd = os.open(tmp_path / "s.jsonl", os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.ftruncate(fd, start)
        os.write(fd, body)
        removed = Removed(fd, tmp_path, start, start + size)
        os.ftruncate(fd, start)
        removed.restore(fd)
        assert os.fstat(fd).st_size == start + size
        assert os.pread(fd, size, start) == body
        assert removed._spill is not None, "kept in memory: the spill failed"
        removed.close()
    finally:
        os.close(fd)
