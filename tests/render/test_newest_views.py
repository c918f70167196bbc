"""``show --html/--markdown -n N`` reads the newest lines in pieces: the same views as the whole file.

The reference is :func:`views_of_lines` over the whole file, sliced; the pieces are made tiny
so every line boundary, BOM, CRLF and long line crosses one.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_session.core import reads
from jsonl_session.render import views as view
from jsonl_session.render.file_io import read_views
from jsonl_session.render.views import newest_views, views_of_lines

LINES = [
    b'{"role": "user", "content": "Hi"}',
    b'{"role": "assistant", "content": "caf\xc3\xa9 \\u001b[31m"}',
    b'{"type": "function_call", "name": "transfer_to_billing", "call_id": "h1", "arguments": "{}"}',
    b'{"type": "function_call", "name": "transfer\\u005fto_sales", "call_id": "h2", "arguments": "{}"}',
    b'{"type": "function_call_output", "call_id": "h1", "output": "ok"}',
    b'{"type": "function_call_output", "call_id": "h2", "output": "ok"}',
    b'{"type": "function_call", "name": "lookup", "call_id": "t1", "arguments": "{\\"q\\": 1}"}',
    b'{"type": "function_call_output", "call_id": "t1", "output": "[1, 2]"}',
    b'{"n": 123456789012345678901234567890}',
    b'{"content": "' + b"x" * 300 + b'"}',
    b"   ",
    b"",
    b"{not json",
    b"[1, 2]",
    b'{"role": "user", "content": "crlf"}\r',
]
TAILS = [b"", b'{"role": "user", "content": "no newline"}', b'{"role": "us', b"  "]


def whole_file_reference(data: bytes, newest: int) -> tuple[list[view.ItemView], int]:
    views = views_of_lines(data)
    return views[max(0, len(views) - newest) :], len(views)


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(st.sampled_from(LINES), max_size=25),
    tail=st.sampled_from(TAILS),
    bom=st.booleans(),
    newest=st.integers(min_value=0, max_value=30),
    piece=st.sampled_from([1, 2, 7, 64, 1 << 20]),
)
def test_the_newest_views_read_in_pieces_are_those_of_the_whole_file(
    tmp_path_factory: pytest.TempPathFactory,
    lines: list[bytes],
    tail: bytes,
    bom: bool,
    newest: int,
    piece: int,
) -> None:
    data = (b"\xef\xbb\xbf" if bom else b"") + b"".join(line + b"\n" for line in lines) + tail
    path = tmp_path_factory.mktemp("views") / "s.jsonl"
    path.write_bytes(data)
    original = reads._SPLIT_PIECE
    reads._SPLIT_PIECE = piece
    try:
        views, total, size = newest_views(path, newest, lock_timeout=1)
    finally:
        reads._SPLIT_PIECE = original
    assert (views, total) == whole_file_reference(data, newest)
    assert size == len(data)


def test_a_handoff_before_the_window_still_labels_its_output(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(LINES[2] + b"\n" + LINES[0] + b"\n" + LINES[4] + b"\n")
    [accepted] = read_views(path, newest=1).views
    assert accepted.title == "handoff accepted"


def test_asking_for_more_than_there_are_shows_them_all(tmp_path: Path) -> None:
    # The whole-file version sliced views[len - n:]: a negative start showed only the last few.
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in LINES[:3]))
    found = read_views(path, newest=5)
    assert [v.number for v in found.views] == [1, 2, 3] and found.total == 3


def test_a_torn_tail_is_named_in_the_newest_views(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(LINES[0] + b"\n" + b'{"role": "us')
    found = read_views(path, newest=1)
    assert [v.title for v in found.views] == ["unreadable line: incomplete last line (torn tail)"]
    assert found.total == 2 and found.unreadable == [2]


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="s.jsonl"):
        newest_views(tmp_path / "s.jsonl", 1, lock_timeout=1)
