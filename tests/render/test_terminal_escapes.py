"""Session content cannot drive the terminal: control characters are printed visibly escaped.

A session is written by a model, by tools and by whoever can drop a file into the folder. Raw
ESC, BEL, C1 and bidi-override characters in text output would let it clear the screen, set
the window title, write the clipboard (OSC 52), hide text or reverse it. Text output shows
them as ``\\x1b``-style escapes; ``--json`` output stays exact.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run, run_on_terminal

from jsonl_session import JSONLSession
from jsonl_session.render.terminal_text import printable

HOSTILE = "\x1b[2J\x1b]0;pwned\x07\x1b]52;c;SGVsbG8=\x07\x9b31m\u202egnp.exe\r\x7f"
EVIL_ID = "evil\x1b]0;title\x07"
# ESC, BEL, every other C0 control but tab and newline, DEL, C1, bidi embeddings/overrides/isolates.
DANGEROUS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
ITEMS: list[dict[str, Any]] = [
    {"role": "user", "content": f"weather {HOSTILE}"},
    {"role": f"user{HOSTILE}", "content": "weather role"},
    {"type": "function_call", "name": f"tool{HOSTILE}", "arguments": "{}", "call_id": f"c{HOSTILE}"},
    {"type": "reasoning", "summary": [{"type": "summary_text", "text": f"weather {HOSTILE}"}]},
]


@pytest.fixture
def hostile(sessions_dir: Path) -> Path:
    JSONLSession(EVIL_ID, sessions_dir).add_items_sync(ITEMS)
    return sessions_dir


def assert_safe(text: str) -> None:
    assert not DANGEROUS.search(text), repr(text)


def test_printable_escapes_only_what_can_drive_a_terminal() -> None:
    assert printable("ok\ttab\nnew line, café, 東京, عربي") == "ok\ttab\nnew line, café, 東京, عربي"
    assert printable("\x1b[2J\x07\x9b\u202e\r\x00\x7f") == "\\x1b[2J\\x07\\x9b\\u202e\\x0d\\x00\\x7f"
    assert printable("") == ""


def test_every_code_point_is_escaped_exactly_when_it_could_drive_a_terminal() -> None:
    # printable() skips its regex for text that str.isprintable() passes: that shortcut must
    # never let a dangerous character through, alone or next to ordinary text
    for code in range(0x110000):
        char = chr(code)
        dangerous = DANGEROUS.fullmatch(char) is not None and char not in "\t\n"
        assert (printable(char) != char) == dangerous, hex(code)
        assert (printable("a" + char) != "a" + char) == dangerous, hex(code)


@pytest.mark.parametrize(
    "command",
    [
        ["ls"],
        ["show", EVIL_ID],
        ["tail", EVIL_ID],
        ["grep", "weather"],
        ["grep", "weather", EVIL_ID],
        ["stats"],
        ["stats", EVIL_ID],
        ["check"],
        ["show", f"missing{HOSTILE}"],
        ["fork", EVIL_ID, f"copy{HOSTILE}", "--at", "1"],
    ],
    ids=["ls", "show", "tail", "grep-all", "grep-one", "stats-all", "stats-one", "check", "error", "fork"],
)
def test_text_output_shows_control_characters_escaped(hostile: Path, command: list[str]) -> None:
    result = run(hostile, *command)
    assert_safe(result.out)
    assert_safe(result.err)
    assert "\\x1b" in result.out + result.err


def test_colour_codes_survive_on_a_terminal_but_content_escapes_do_not(hostile: Path) -> None:
    shown = run_on_terminal([sys.executable, "-m", "jsonl_session", "show", EVIL_ID, "--dir", str(hostile)])
    assert "\x1b[1;32muser\x1b[0m: weather \\x1b[2J\\x1b]0;pwned\\x07" in shown
    assert "\x1b[2J" not in shown and "\x07" not in shown and "\x9b" not in shown


def test_json_output_stays_exact(hostile: Path) -> None:
    shown = run(hostile, "show", EVIL_ID, "--json")
    assert [json.loads(line) for line in shown.out.splitlines()] == ITEMS
    listed = run(hostile, "ls", "--json")
    assert [json.loads(line)["id"] for line in listed.out.splitlines()] == [EVIL_ID]
    found = run(hostile, "grep", "pwned", "--json")
    assert json.loads(found.out.splitlines()[0])["text"] == f"weather {HOSTILE}"
