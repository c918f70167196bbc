"""Stable output for fixtures: the same items always serialise to the same bytes.

So re-recording or re-saving an unchanged conversation produces no git diff.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jsonl_session import JSONLSession
from jsonl_session.core.codec import decode_line, encode_items

REPO = Path(__file__).resolve().parents[2]

text = st.text(st.characters(exclude_categories=["Cs"]), max_size=20)  # any Unicode but lone surrogates
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(text, children, max_size=4),
    max_leaves=20,
)
items = st.dictionaries(text, values, max_size=6)


@settings(max_examples=300, deadline=None)
@given(item=items)
def test_encoding_a_decoded_line_gives_the_same_bytes(item: dict[str, Any]) -> None:
    line = encode_items([item])

    assert encode_items([decode_line(line.rstrip(b"\n"))]) == line


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(conversation=st.lists(items, min_size=1, max_size=5))
def test_saving_what_was_read_rewrites_byte_identical_lines(tmp_path: Path, conversation: list[Any]) -> None:
    session = JSONLSession("stable", tmp_path, durable=False)
    session.replace_items_sync(conversation)
    before = session.path.read_bytes()

    session.replace_items_sync(session.get_items_sync())
    copy = JSONLSession("copy", tmp_path, durable=False)
    copy.replace_items_sync([])
    copy.add_items_sync(session.get_items_sync())

    assert session.path.read_bytes() == before
    assert copy.path.read_bytes() == before


def test_key_order_and_non_ascii_text_are_kept_as_given() -> None:
    assert encode_items([{"z": 1, "a": "héllo 東京 🙏", "m": [1.5, None]}]) == (
        '{"z":1,"a":"héllo 東京 🙏","m":[1.5,null]}\n'.encode()
    )


@pytest.mark.parametrize("path", sorted((REPO / "sessions").glob("*.jsonl")), ids=lambda path: path.name)
def test_every_shipped_session_re_serialises_to_the_same_bytes(path: Path) -> None:
    content = path.read_bytes()

    assert encode_items(decode_line(line) for line in content.splitlines()) == content
