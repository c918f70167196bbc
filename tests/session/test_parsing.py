"""``parse_items``: JSON Lines a person wrote become items that store exactly, or an error naming the line."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from jsonl_session import JSONLSession, MalformedLineError
from jsonl_session.session.parsing import parse_items


def test_lines_are_split_as_every_reader_splits_them(sessions_dir: Path) -> None:
    data = b'\xef\xbb\xbf{"role": "user", "content": "hi"}\r\n\n   \n{"role": "assistant", "content": "yo"}'
    items = parse_items(data)
    assert items == [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    # the same bytes as a session file read back as the same items
    sessions_dir.mkdir()
    (sessions_dir / "typed.jsonl").write_bytes(data)
    assert JSONLSession("typed", sessions_dir).get_items_sync() == items


def test_parsed_items_store_and_read_back_equal(sessions_dir: Path) -> None:
    items = parse_items(b'{"n": 12345678901234567, "text": "caf\\u00e9", "nested": {"a": [1, 2.5, null]}}\n')
    session = JSONLSession("added", sessions_dir)
    session.add_items_sync(items)
    assert session.get_items_sync() == items


def test_empty_and_blank_input_is_no_items() -> None:
    assert parse_items(b"") == []
    assert parse_items(b"\n \r\n\t\n") == []


@pytest.mark.parametrize(
    ("data", "line", "reason"),
    [
        (b'{"a": 1}\n[1, 2]\n', 2, "not a JSON object (a list): '[1, 2]'"),
        (b'{"a": 1}\n\n{"b"', 3, "not valid JSON"),  # a last line without its newline counts too
        (b"not json\n", 1, "not valid JSON"),
        (b'{"n": NaN}\n', 1, "not valid JSON"),
        (b'{"n": 123456789012345678901234567890}\n', 1, "integer beyond 64 bits"),
    ],
)
def test_the_first_bad_line_is_named_and_nothing_is_returned(data: bytes, line: int, reason: str) -> None:
    with pytest.raises(MalformedLineError) as raised:
        parse_items(data, "<stdin>")
    error = raised.value
    assert error.line == line and reason in error.message
    assert str(error).startswith(f"<stdin>:{line}: ")
    assert isinstance(error, ValueError)
    assert pickle.loads(pickle.dumps(error)).line == line


def test_the_source_names_the_file(tmp_path: Path) -> None:
    edited = tmp_path / "copy.jsonl"
    edited.write_bytes(b'{"ok": true}\n{"broken": \n')
    with pytest.raises(MalformedLineError) as raised:
        parse_items(edited.read_bytes(), edited)
    assert raised.value.path == edited and raised.value.line == 2
