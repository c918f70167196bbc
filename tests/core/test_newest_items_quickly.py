"""The quick path of ``get_items(limit)`` gives exactly what the careful one gives, or steps aside."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_session.core import codec, reads

LINES = st.sampled_from(
    [
        b'{"n":1}',
        b'{"text":"caf\\u00e9"}',
        b'{"big":12345678901234567890123}',
        b'{"pad":"' + b"x" * 300 + b'"}',
        b"",
        b"  ",
        b"\r",
        b"[1,2]",
        b'{"torn":',
        b"not json",
        b'{"n":2} ',
    ]
)


def careful(fd: int, path: Path, size: int, limit: int) -> Any:
    """The careful path, as read_items takes it when the quick one steps aside."""
    lines, tail_item, _ = reads.newest_lines(fd, size, limit)
    try:
        items = [reads.decode_at(fd, path, offset, line) for offset, line in lines]
    except ValueError as error:  # MalformedLineError
        return type(error)
    return items + ([tail_item] if tail_item is not None else [])


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(LINES, max_size=12),
    ends_with_newline=st.booleans(),
    bom=st.booleans(),
    tail_chunk=st.sampled_from([8, 64, 4096]),
)
def test_the_quick_path_agrees_with_the_careful_one(
    tmp_path_factory: pytest.TempPathFactory,
    lines: list[bytes],
    ends_with_newline: bool,
    bom: bool,
    tail_chunk: int,
) -> None:
    data = (codec.BOM if bom else b"") + b"\n".join(lines) + (b"\n" if ends_with_newline and lines else b"")
    path = tmp_path_factory.mktemp("quick") / "s.jsonl"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    patch = pytest.MonkeyPatch()
    try:
        patch.setattr(reads, "_TAIL_CHUNK", tail_chunk)
        patch.setattr(reads, "_BYTES_PER_LINE_GUESS", tail_chunk // 4)
        for limit in range(1, len(lines) + 3):
            quick = reads._newest_items_quickly(fd, len(data), limit)
            if quick is not None:
                assert quick == careful(fd, path, len(data), limit), (limit, data)
    finally:
        patch.undo()
        os.close(fd)


def test_the_quick_path_takes_the_usual_file(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(b'{"n":%d}\n' % n for n in range(100)))
    fd = os.open(path, os.O_RDONLY)
    try:
        assert reads._newest_items_quickly(fd, path.stat().st_size, 20) == [{"n": n} for n in range(80, 100)]
    finally:
        os.close(fd)
