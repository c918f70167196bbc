"""The JSON Lines the CLI's ``--json`` writes: orjson's compact bytes, and whatever a reader accepted."""

from __future__ import annotations

import argparse
import json

import orjson
import pytest

from jsonl_session.cli.output import print_items, print_json


def test_a_json_line_is_one_compact_line_of_what_orjson_writes(
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    value = {"role": "user", "content": "héllo\nworld", "n": [1, 2.5, None, True]}
    print_json(value)
    written = capsysbinary.readouterr().out
    assert written == orjson.dumps(value) + b"\n"
    assert json.loads(written) == value


def test_json_lines_write_what_orjson_cannot(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    huge = {"n": 2**70}
    deep: object = 1
    for _ in range(300):  # deeper than orjson writes (254)
        deep = [deep]
    print_items(argparse.Namespace(json=True), [huge, {"deep": deep}, {}])
    lines = capsysbinary.readouterr().out.split(b"\n")
    assert lines[-1] == b"" and len(lines) == 4
    assert json.loads(lines[0]) == huge and json.loads(lines[1]) == {"deep": deep} and lines[2] == b"{}"
    print_items(argparse.Namespace(json=True), [])
    assert capsysbinary.readouterr().out == b""
