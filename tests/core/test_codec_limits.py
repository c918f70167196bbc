"""The exact parser's limits and the not-storable explanation, at their edges.

Found by mutation testing (issue 29): the exact parser (lines with 19+ digit numbers) could
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
