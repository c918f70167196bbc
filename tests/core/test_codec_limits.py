"""The exact parser's limits and the not-storable explanation, at their edges.

Found by mutation testing: the exact parser (lines with 19+ digit numbers) could
refuse a line exactly as deep as orjson reads, quote more of a huge number than it says, and
the explanation of a refused item could blame the smallest 64-bit integer for another value's fault.
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import orjson
import pytest

from jsonl_session import ItemNotStorableError, JSONLSession
from jsonl_session.core import codec

BIG = b"123456789012345678901234567890"  # 30 digits: read by the exact parser


def nested(depth: int) -> bytes:
    return b"[" * depth + BIG + b"]" * depth


def test_the_exact_parser_reads_as_deep_as_orjson_and_no_deeper() -> None:
    """Catches: ``>=`` for ``>`` in the depth check. The standard library stops at the
    recursion limit first, so the check only acts where a program raised that limit."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)
    try:
        value = codec.decode_line(nested(codec.MAX_READ_DEPTH))
        with pytest.raises(ValueError, match=f"nested more than {codec.MAX_READ_DEPTH} levels deep"):
            codec.decode_line(nested(codec.MAX_READ_DEPTH + 1))
    finally:
        sys.setrecursionlimit(old)
    assert codec.depth_of(value) == codec.MAX_READ_DEPTH
    plain = b"[" * codec.MAX_READ_DEPTH + b"1" + b"]" * codec.MAX_READ_DEPTH  # orjson's own limit
    assert codec.depth_of(orjson.loads(plain)) == codec.MAX_READ_DEPTH
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(b"[" + plain + b"]")


def test_a_number_too_big_for_a_float_is_quoted_by_its_first_20_characters() -> None:
    digits = "1" * 400
    with pytest.raises(ValueError) as raised:
        codec.decode_line(f'{{"n": {digits}.5, "id": {BIG.decode()}}}'.encode())
    assert f"number {'1' * 20} is out of range for a float" in str(raised.value)


@pytest.mark.parametrize(("value", "depth"), [(7, 0), ("text", 0), (None, 0), ([], 1), ({"a": [{}]}, 3)])
def test_depth_of_counts_containers(value: object, depth: int) -> None:
    """Catches: a scalar counted -1 deep (the docstring says 0)."""
    assert codec.depth_of(value) == depth


@pytest.mark.parametrize("edge", [-(2**63), 2**64 - 1])
def test_the_explanation_blames_the_bad_value_not_a_64_bit_edge(edge: int) -> None:
    """Catches: ``<`` for ``<=`` at the lower edge: the smallest int64 was named as the culprit."""
    for item in ({"edge": edge, "bad": [float("nan")]}, {"bad": [float("nan")], "edge": edge}):
        with pytest.raises(ItemNotStorableError) as raised:
            codec.encode_items([item])
        assert "nan" in str(raised.value) and "64 bits" not in str(raised.value)


def test_reading_leaves_the_garbage_collector_as_it_found_it(tmp_path: Path) -> None:
    """Catches: ``gc_paused`` not re-enabling the collector (its test turned around): after one
    read, cycles were never collected again in the whole process."""
    session = JSONLSession("s", tmp_path)
    session.add_items_sync([{"n": n} for n in range(2_000)])
    assert gc.isenabled()
    assert len(session.get_items_sync()) == 2_000
    assert gc.isenabled()
    gc.disable()  # a program that turned it off itself keeps it off
    try:
        assert len(session.get_items_sync()) == 2_000
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize("start", range(16 * 1024 - 24, 16 * 1024 + 4))
def test_a_long_number_is_found_wherever_it_falls_and_a_shorter_one_is_not(start: int) -> None:
    """Catches (mutation testing): the pieces' overlap one byte short (a 19-digit run across a
    piece boundary went to orjson, which cannot read it exactly), a run of 18 taken for 19,
    ``/`` or ``:`` counted as digits, or every block sent to the slow parser."""
    filler = b'{"a":"' + b"x" * start
    assert codec.has_long_digit_run(filler + b"1" * 19 + b'"}')
    assert not codec.has_long_digit_run(filler + b"/" + b"1" * 18 + b':"}')


@pytest.mark.parametrize("item", [5, "text", [{"role": "user"}], None])
def test_a_single_item_that_is_not_an_object_is_refused(tmp_path: Path, item: object) -> None:
    """Catches (mutation testing): the one-item fast path taken for anything but a dict, which
    stored ``5`` as a line of its own (it reads back equal)."""
    session = JSONLSession("s", tmp_path)
    with pytest.raises(ItemNotStorableError, match="an item must be a dict"):
        session.add_items_sync([item])
    assert session.get_items_sync() == []


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        ({"a": [1, "x", None]}, {"a": [1, "x", None]}, True),
        (1, 1.0, False),  # the same number to ==, not the same JSON
        (True, 1, False),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, False),  # key order is part of the line
        ({"a": 1}, {"b": 1}, False),
        ([1, 2], [1, 2, 3], False),
        ({"a": [1, {"b": "x"}]}, {"a": [1, {"b": "y"}]}, False),
    ],
)
def test_identical_is_the_same_json_type_for_type(first: object, second: object, same: bool) -> None:
    """Catches (mutation testing): a type, a key or a value that differs taken for the same."""
    assert codec.identical(first, second) is same
    assert codec.identical(second, first) is same


def test_what_orjson_cannot_print_is_printed_exactly_by_hand() -> None:
    """A line deeper than orjson writes, or with an integer beyond 64 bits, still prints.

    Catches (mutation testing): the big integer's error escaping, a key escaped to ASCII (orjson
    writes UTF-8), and the comma between list values written as a JSON string."""
    value = {"héllo": [2**70, -(2**70)], "é": {"k": 2**70}}
    expected = '{"héllo":[1180591620717411303424,-1180591620717411303424],"é":{"k":1180591620717411303424}}'
    assert codec.dumps_any(value) == expected.encode()
    assert orjson.loads(codec.dumps_any([[1, 2], [3]])) == [[1, 2], [3]]


@pytest.mark.parametrize("value", [2**64, -(2**63) - 1, 2**65, -(2**64)])
def test_an_integer_just_beyond_64_bits_is_named_as_such(value: int) -> None:
    """Catches (mutation testing): the 64-bit bounds moved, which gave the vaguer orjson message."""
    with pytest.raises(ItemNotStorableError) as raised:
        codec.encode_items([{"role": "user", "n": value}])
    assert str(raised.value).endswith(
        "item['n'] is an integer beyond 64 bits, which orjson cannot write exactly"
    )


def test_a_key_that_is_not_a_string_is_named() -> None:
    """Catches (mutation testing): the keys of an object never looked at."""
    with pytest.raises(ItemNotStorableError) as raised:
        codec.encode_items([{"role": "user", "meta": {"ok": 1, 7: "seven"}}])
    assert str(raised.value).endswith("item['meta'] has a key 7 that is not a str")


def chain(levels: int, bottom: object) -> dict[str, object]:
    """``{"a": {"a": ... bottom}}``: ``bottom`` under ``levels`` keys."""
    item: object = bottom
    for _ in range(levels):
        item = {"a": item}
    return item  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("levels", "shown"),
    [
        (6, "item" + "['a']" * 6),
        (7, "item" + "['a']" * 6 + "…(1 more)"),
        (30, "item" + "['a']" * 6 + "…(24 more)"),
    ],
)
def test_a_bad_values_path_names_six_segments_then_how_many_more(levels: int, shown: str) -> None:
    """Catches (mutation testing): five or seven segments shown, a "…(0 more)" on a path of six,
    the count of the rest added up wrong."""
    with pytest.raises(ItemNotStorableError) as raised:
        codec.encode_items([chain(levels, (1,))])
    assert str(raised.value).endswith(f": {shown} is a tuple, which would read back as a list")


def test_the_deepest_storable_item_is_stored_and_one_level_more_is_refused_with_its_path() -> None:
    """The item is level 1; the first container deeper than ``MAX_DEPTH`` is named by its path.

    Catches (mutation testing): the item counted as level 2, a child two levels down, and the
    limit itself refused."""
    assert codec.encode_items([chain(codec.MAX_DEPTH - 1, {})])  # MAX_DEPTH objects
    with pytest.raises(ItemNotStorableError) as raised:
        codec.encode_items([chain(codec.MAX_DEPTH, {})])
    path = "item" + "['a']" * 6 + f"…({codec.MAX_DEPTH - 6} more)"
    assert str(raised.value).endswith(
        f": {path} is nested more than {codec.MAX_DEPTH} levels deep, the most orjson writes (docs/format.md)"
    )
