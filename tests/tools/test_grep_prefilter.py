"""``grep``'s raw-bytes pre-filter never hides a match that the decoded text has, with either engine.

For speed, ``grep`` first looks for the pattern in the raw file bytes and decodes only the
lines that contain it. That is exact only for a literal that appears in the line exactly as
in the text; anything the item's text is *built* from (parts joined with a space, arguments
re-serialised) must not be pre-filtered on the joined form.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import string
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import write_lines
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_session.cli.commands import main
from jsonl_session.tools import system_grep
from jsonl_session.tools.grep import FOLDS


@pytest.fixture(autouse=True, params=["system grep", "python"])
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every case runs with the system's ``grep -F`` finding the lines and with Python alone."""
    if request.param == "python":
        monkeypatch.setenv(system_grep.DISABLE_VARIABLE, "1")
    else:
        monkeypatch.delenv(system_grep.DISABLE_VARIABLE, raising=False)
    yield
    assert not system_grep._unusable  # the system grep was asked, and answered


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


def hand_written(directory: Path, name: str, *lines: str) -> None:
    """Lines exactly as another tool might write them (escapes and all), not as we would."""
    write_lines(directory / f"{name}.jsonl", [line.encode() for line in lines])


def test_a_word_written_with_unicode_escapes_is_found(
    sessions_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # JSON may escape any character as \\uXXXX, ASCII letters too: the raw bytes never hold "zanzibar"
    hand_written(
        sessions_dir,
        "escaped",
        r'{"role": "user", "content": "to zan\u007aibar"}',
        r'{"role": "user", "content": "to \u005aANZIBAR"}',
        r'{"role": "user", "content": "caf\u00e9 au lait"}',
    )
    assert grep(capsys, sessions_dir, "zanzibar") == ["escaped:1: user: to zanzibar"]
    assert grep(capsys, sessions_dir, "-i", "zanzibar") == [
        "escaped:1: user: to zanzibar",
        "escaped:2: user: to ZANZIBAR",
    ]
    assert grep(capsys, sessions_dir, "café") == ["escaped:3: user: café au lait"]
    assert grep(capsys, sessions_dir, "-i", "CAFÉ") == ["escaped:3: user: café au lait"]


def test_ignore_case_finds_ascii_and_unicode_case_variants(
    sessions_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Python's re folds ſ (U+017F) to s, K (Kelvin, U+212A) to k, and ı/İ to i: none holds the ASCII bytes
    hand_written(
        sessions_dir,
        "cases",
        '{"role": "user", "content": "Sunny in PARIS"}',
        '{"role": "user", "content": "ſunny in paris"}',
        r'{"role": "user", "content": "\u017funny again"}',
        '{"role": "user", "content": "\u212aelvin scale"}',
        '{"role": "user", "content": "İstanbul by nıght"}',
        '{"role": "user", "content": "été à PARÍS"}',
    )
    assert grep(capsys, sessions_dir, "-i", "sunny") == [
        "cases:1: user: Sunny in PARIS",
        "cases:2: user: ſunny in paris",
        "cases:3: user: ſunny again",
    ]
    assert grep(capsys, sessions_dir, "sunny") == []
    assert grep(capsys, sessions_dir, "-i", "kelvin") == ["cases:4: user: \u212aelvin scale"]
    assert grep(capsys, sessions_dir, "-i", "night") == ["cases:5: user: İstanbul by nıght"]
    assert grep(capsys, sessions_dir, "-i", "ÉTÉ") == ["cases:6: user: été à PARÍS"]
    assert grep(capsys, sessions_dir, "-i", "paris") == [
        "cases:1: user: Sunny in PARIS",
        "cases:2: user: ſunny in paris",
    ]


def test_keys_are_not_message_text(sessions_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hand_written(
        sessions_dir,
        "keys",
        '{"role": "user", "content": "hello"}',
        '{"role": "assistant", "content": "the role of content"}',
        json.dumps(
            {"type": "function_call", "name": "lookup", "arguments": '{"city": "Paris"}', "call_id": "c1"}
        ),
    )
    assert grep(capsys, sessions_dir, "role") == ["keys:2: assistant: the role of content"]
    assert grep(capsys, sessions_dir, "content") == ["keys:2: assistant: the role of content"]
    assert grep(capsys, sessions_dir, "call_id") == []
    assert grep(capsys, sessions_dir, "city") == ['keys:3: tool call: lookup({"city": "Paris"})']
    assert grep(capsys, sessions_dir, "lookup") == ['keys:3: tool call: lookup({"city": "Paris"})']


def test_line_numbers_are_the_same_with_and_without_the_pre_filter(
    sessions_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a BOM, a blank line and CRLF endings: "needle" is pre-filtered, "need[l]e" decodes every line
    data = (
        b'\xef\xbb\xbf{"role": "user", "content": "first"}\r\n'
        b"\r\n"
        b'{"role": "user", "content": "a needle"}\r\n'
        b"   \n"
        b'{"role": "assistant", "content": "another needle"}\n'
        b'{"role": "user", "content": "needle in a torn tail"'
    )
    write_lines(sessions_dir / "crlf.jsonl", [data], end=b"")
    expected = ["crlf:3: user: a needle", "crlf:5: assistant: another needle"]
    assert grep(capsys, sessions_dir, "needle") == expected
    assert grep(capsys, sessions_dir, "need[l]e") == expected
    assert grep(capsys, sessions_dir, "-i", "NEEDLE") == expected


def test_the_pre_filter_knows_every_non_ascii_character_that_ignore_case_matches_to_a_letter() -> None:
    any_letter = re.compile("[a-z]", re.IGNORECASE)
    folds: dict[str, str] = {}
    for code in range(128, 0x110000):
        char = chr(code)
        if any_letter.fullmatch(char):
            (letter,) = (x for x in string.ascii_lowercase if re.fullmatch(x, char, re.IGNORECASE))
            folds[letter] = folds.get(letter, "") + char
    assert folds == FOLDS


def test_words_the_text_is_built_with_are_found(
    sessions_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the raw line holds none of them: 1E2 is shown as 100.0, a null name as None, a bare part as [part]
    hand_written(
        sessions_dir,
        "built",
        '{"type": "function_call", "name": "f", "arguments": {"n": 1E2}, "call_id": "c1"}',
        '{"type": "function_call", "name": null, "arguments": "{}", "call_id": "c2"}',
        '{"role": "user", "content": [{"x": 1}]}',
    )
    assert grep(capsys, sessions_dir, "100") == ['built:1: tool call: f({"n":100.0})']
    assert grep(capsys, sessions_dir, "None") == ["built:2: tool call: None({})"]
    assert grep(capsys, sessions_dir, "part") == ["built:3: user: [part]"]


def test_a_phrase_is_found_however_the_line_writes_it(
    sessions_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a phrase narrows the lines with its longest word to those that may hold it whole: as it
    # is, joined from parts, escaped, or with a character -i folds
    hand_written(
        sessions_dir,
        "phrases",
        '{"role": "user", "content": "sunny weather in Paris"}',
        '{"role": "user", "content": "the weather is sunny"}',
        '{"role": "user", "content": [{"type": "input_text", "text": "so sunny"}, "weather"]}',
        r'{"role": "user", "content": "sunny\u0020weather"}',
        '{"role": "user", "content": "ſunny weather"}',
        '{"role": "user", "content": "SUNNY  WEATHER"}',
    )
    assert grep(capsys, sessions_dir, "sunny weather") == [
        "phrases:1: user: sunny weather in Paris",
        "phrases:3: user: so sunny weather",
        "phrases:4: user: sunny weather",
    ]
    assert grep(capsys, sessions_dir, "-i", "Sunny Weather") == [
        "phrases:1: user: sunny weather in Paris",
        "phrases:3: user: so sunny weather",
        "phrases:4: user: sunny weather",
        "phrases:5: user: ſunny weather",
    ]
    assert grep(capsys, sessions_dir, "-i", "sunny  weather") == [
        "phrases:6: user: SUNNY WEATHER"
    ]  # the snippet squashes spaces


def test_a_phrase_joined_from_parts_is_found_wherever_the_lists_of_the_line_are(
    sessions_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the word after a list's [ is what a joined phrase leaves in the line; a [ only before
    # it (another key's list) or only after it decodes the line for nothing, and changes nothing
    parts = '[{"type": "input_text", "text": "so sunny"}, "weather"]'
    hand_written(
        sessions_dir,
        "lists",
        '{"role": "user", "id": "weather", "content": ' + parts + "}",
        '{"content": ' + parts + ', "role": "user", "tags": ["weather"]}',
        '{"role": "user", "tags": ["x"], "content": "weather is sunny"}',
        '{"role": "user", "content": "weather is sunny", "tags": ["sunny weather"]}',
        '{"role": "user", "content": ["sunny", "rain"], "note": "weather"}',
    )
    assert grep(capsys, sessions_dir, "sunny weather") == [
        "lists:1: user: so sunny weather",
        "lists:2: user: so sunny weather",
    ]
    assert grep(capsys, sessions_dir, "sunny[ ]weather") == grep(capsys, sessions_dir, "sunny weather")
    # a session without a [ anywhere is searched for the phrase itself, and its folds
    (sessions_dir / "lists.jsonl").unlink()
    hand_written(sessions_dir, "folded", '{"role": "user", "content": "ſunny weather"}')
    assert grep(capsys, sessions_dir, "-i", "sunny weather") == ["folded:1: user: ſunny weather"]


PHRASE_PIECES = [
    "sunny",
    "weather",
    "sunny weather",
    "ſunny weather",
    "ſunny",
    "SUNNY",
    " ",
    "x",
    "[",
    r"\u0020",
]


@settings(max_examples=150, deadline=None)
@given(
    lines=st.lists(
        st.tuples(
            st.lists(st.sampled_from(PHRASE_PIECES), max_size=6),  # the text, or its parts
            st.booleans(),  # parts in a list, or one string
            st.lists(st.sampled_from(PHRASE_PIECES), max_size=3),  # another key's value
            st.booleans(),  # that value a list, or one string
            st.booleans(),  # that key before the content, or after
        ),
        max_size=5,
    ),
    ignore_case=st.booleans(),
)
def test_a_phrase_search_finds_what_decoding_every_line_finds(
    lines: list[tuple[list[str], bool, list[str], bool, bool]], ignore_case: bool
) -> None:
    written = []
    for pieces, as_parts, other, other_as_list, other_first in lines:
        # ſ as it is; the piece \u0020 as an escape (a space), not as an escaped backslash
        content = json.dumps(pieces if as_parts else "".join(pieces), ensure_ascii=False)
        content = content.replace("\\\\u", "\\u")
        extra = f'"note": {json.dumps(other if other_as_list else "".join(other), ensure_ascii=False)}'
        fields = [extra, f'"content": {content}'] if other_first else [f'"content": {content}', extra]
        written.append('{"role": "user", ' + ", ".join(fields) + "}")
    flags = ["-i"] if ignore_case else []
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        (directory / "s.jsonl").write_bytes("\n".join(written).encode() + b"\n")
        # the same phrase as a regex ([ ] is no literal) decodes every line: the plain answer
        assert _cli_output(directory, "sunny weather", *flags) == _cli_output(
            directory, "sunny[ ]weather", *flags
        )


def _cli_output(directory: Path, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["grep", *args, "--dir", str(directory)])
    return code, out.getvalue()
