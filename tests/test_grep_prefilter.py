"""``grep``'s raw-bytes pre-filter never hides a match that the decoded text has.

For speed, ``grep`` first looks for the pattern in the raw file bytes and decodes only the
lines that contain it. That is exact only for a literal that appears in the line exactly as
in the text; anything the item's text is *built* from (parts joined with a space, arguments
re-serialised) must not be pre-filtered on the joined form.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import write_lines

from jsonl_session.cli import main


def grep(capsys: pytest.CaptureFixture[str], directory: Path, *args: str) -> list[str]:
    code = main(["grep", *args, "--dir", str(directory)])
    out = capsys.readouterr().out.splitlines()
    assert code == (0 if out else 1)
    return out


def test_words_in_separate_parts_match_as_the_text_shows_them(
    sessions_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parts = [{"type": "input_text", "text": "the golden"}, {"type": "input_text", "text": "gate bridge"}]
    write_lines(sessions_dir / "parts.jsonl", [json.dumps({"role": "user", "content": parts})])
    assert grep(capsys, sessions_dir, "golden gate") == ["parts:1: user: the golden gate bridge"]
    assert grep(capsys, sessions_dir, "-i", "GOLDEN GATE") == ["parts:1: user: the golden gate bridge"]


def test_arguments_written_with_spaces_match_their_compact_text(
    sessions_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    call = {"type": "function_call", "name": "add", "arguments": {"xs": [1, 2]}, "call_id": "c1"}
    write_lines(sessions_dir / "spaced.jsonl", [json.dumps(call)])  # json.dumps writes ", " and ": "
    assert grep(capsys, sessions_dir, "1,2") == ['spaced:1: tool call: add({"xs":[1,2]})']
    assert grep(capsys, sessions_dir, "xs.:.1") == ['spaced:1: tool call: add({"xs":[1,2]})']


def test_a_plain_word_still_finds_only_lines_that_contain_it(
    sessions_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [
        json.dumps({"role": "user", "content": f"line {n} zanzibar" if n == 7 else f"line {n}"})
        for n in range(20)
    ]
    write_lines(sessions_dir / "many.jsonl", lines)
    assert grep(capsys, sessions_dir, "zanzibar") == ["many:8: user: line 7 zanzibar"]
