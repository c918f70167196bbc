"""Values JSON cannot hold exactly are refused on every add path; big numbers in a file read back exactly.

orjson writes ``NaN`` and the infinities as ``null`` and cannot write integers beyond 64 bits;
``encode_items`` reads every line back and compares. The Runner adds one item per call, which
takes a fast path of its own: dropping its round-trip check stored ``NaN`` as ``null``, and
only an unseeded random fuzz test noticed now and then. Here each value goes
through the one-item path and the general one, blocking and async, by name.

A hand-edited file may hold an integer beyond 64 bits, which orjson would read as a rounded
float: lines with a run of 19+ digits go through an exact parser. These tests read such
numbers back through every reader, at the smallest sizes the threshold must catch.
"""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import pytest

from jsonl_session import ItemNotStorableError, JSONLSession
from jsonl_session.core.codec import decode_line, encode_items

UNSTORABLE = {
    "nan": float("nan"),
    "inf": math.inf,
    "-inf": -math.inf,
    "2**64": 2**64,
    "-(2**63)-1": -(2**63) - 1,
    "10**30": 10**30,
}


@pytest.mark.parametrize("name", sorted(UNSTORABLE))
@pytest.mark.parametrize("where", ["top", "nested"])
def test_encode_items_refuses_an_unstorable_value_in_a_single_item(name: str, where: str) -> None:
    """Catches: the one-item fast path returning orjson's line without reading it back."""
    value = UNSTORABLE[name]
    item: dict[str, Any] = {"role": "user", "n": value} if where == "top" else {"a": [{"b": value}]}
    with pytest.raises(ItemNotStorableError):
        encode_items([item])
    with pytest.raises(ItemNotStorableError):
        encode_items([{"ok": 1}, item])  # the general path says the same


@pytest.mark.parametrize("name", sorted(UNSTORABLE))
@pytest.mark.parametrize("way", ["sync", "async"])
def test_an_unstorable_value_is_never_stored_as_null(sessions_dir: Path, name: str, way: str) -> None:
    session = JSONLSession("s", sessions_dir, durable=False)
    session.add_items_sync([{"role": "user", "content": "before"}])
    before = session.path.read_bytes()
    item = {"role": "user", "content": "x", "value": UNSTORABLE[name]}
    with pytest.raises(ItemNotStorableError) as caught:
        if way == "sync":
            session.add_items_sync([item])
        else:
            asyncio.run(session.add_items([item]))
    assert isinstance(caught.value, ValueError)
    assert session.path.read_bytes() == before
    assert b"null" not in session.path.read_bytes()


def test_the_largest_storable_integers_are_stored_and_read_back_exactly(sessions_dir: Path) -> None:
    session = JSONLSession("s", sessions_dir, durable=False)
    edges = {"max": 2**64 - 1, "min": -(2**63), "float": 1.5e308, "zero": -0.0}
    session.add_items_sync([edges])
    assert session.get_items_sync() == [edges]
    assert json.dumps(session.get_items_sync()[0]) == json.dumps(edges)


BIG = {
    "2**64": 2**64,  # 20 digits: the smallest positive integer orjson cannot read exactly
    "-(2**63)-1": -(2**63) - 1,  # 19 digits: the smallest negative one
    "10**40": 10**40,
    "-(10**40)": -(10**40),
}


def read_every_way(session: JSONLSession) -> list[list[Any]]:
    return [
        session.get_items_sync(),
        session.get_items_sync(limit=1),
        asyncio.run(session.get_items()),
        asyncio.run(session.get_items(limit=2)),
    ]


@pytest.mark.parametrize("name", sorted(BIG))
def test_a_number_above_64_bits_in_a_file_reads_back_exactly(sessions_dir: Path, name: str) -> None:
    """Catches: the long-digit run lengthened (20 or more digits) or checked on the wrong bytes."""
    number = BIG[name]
    sessions_dir.mkdir()
    path = sessions_dir / "s.jsonl"
    path.write_bytes(b'{"role":"user","content":"hi"}\n{"n":%d}\n' % number)
    session = JSONLSession("s", sessions_dir, durable=False)
    for items in read_every_way(session):
        assert items[-1] == {"n": number}
        assert type(items[-1]["n"]) is int
    assert decode_line(b'{"n":%d}' % number) == {"n": number}
    assert session.pop_item_sync() == {"n": number}


@pytest.mark.parametrize("padding", range(16 * 1024 - 40, 16 * 1024 + 8, 3))
def test_a_big_number_across_the_16_kib_check_pieces_reads_back_exactly(
    sessions_dir: Path, padding: int
) -> None:
    """The digit check looks at 16 KiB pieces that overlap: a number across two pieces is still seen."""
    number = -(10**30) - 7
    sessions_dir.mkdir(exist_ok=True)
    path = sessions_dir / "s.jsonl"
    path.write_bytes(b'{"pad":"' + b"p" * padding + b'"}\n{"n":%d}\n' % number)
    session = JSONLSession("s", sessions_dir, durable=False)
    assert session.get_items_sync()[-1] == {"n": number}
    assert asyncio.run(session.get_items())[-1] == {"n": number}
