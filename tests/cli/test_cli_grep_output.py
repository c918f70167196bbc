"""``grep``'s printed lines: the snippet's shortcuts give what the plain formula gives, and
lines printed in blocks come out as they would one at a time."""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
from pathlib import Path

from cli_helpers import run_on_terminal, write_lines
from hypothesis import example, given, settings
from hypothesis import strategies as st

from jsonl_session.cli import tools
from jsonl_session.cli.commands import main
from jsonl_session.render.item_text import Style
from jsonl_session.render.terminal_text import printable
from jsonl_session.tools.grep import Hit

# every character str.split() takes for whitespace, controls, bidi overrides, and ordinary text
WHITESPACE = [chr(code) for code in range(sys.maxunicode + 1) if chr(code).isspace()]
ALPHABET = [*WHITESPACE, "\x00", "\x1b", "\x7f", "\u202e", "\u2066", "\u200e", "…", "é", "a", "b", "  "]


def plain_snippet(hit: Hit, style: Style) -> str:
    """The snippet as the formula says it: the window made printable, then squashed."""
    text = hit.text
    start = max(0, hit.start - tools.SNIPPET // 3)
    end = min(len(text), max(hit.end, start + tools.SNIPPET))
    start = max(0, min(start, end - tools.SNIPPET))
    if style.enabled:
        window = (
            printable(text[start : hit.start])
            + style.match(printable(text[hit.start : hit.end]))
            + printable(text[hit.end : end])
        )
    else:
        window = printable(text[start:end])
    return ("…" if start else "") + " ".join(window.split()) + ("…" if end < len(text) else "")


@settings(max_examples=400, deadline=None)
@example(pieces=["a", "  ", "b"], where=(0, 1), colour=False)  # a run of spaces
@example(pieces=["a", " "], where=(0, 1), colour=False)  # a space that ends the text
@example(pieces=[" ", "a"], where=(1, 1), colour=False)  # one that starts it
@example(pieces=["a", "\t", "b", "\u3000", "c"], where=(0, 1), colour=False)  # whitespace, not spaces
@example(pieces=["a", "\x1b", "b"], where=(0, 1), colour=False)  # a control character
@example(pieces=["x" * 200, " needle ", "y" * 200], where=(200, 8), colour=False)  # cut both ends
@given(
    pieces=st.lists(
        st.sampled_from([" ", "a", "word", "x y"])
        | st.sampled_from(ALPHABET)
        | st.text(min_size=1, max_size=30),
        max_size=40,
    ),
    where=st.tuples(st.integers(0, 400), st.integers(0, 60)),
    colour=st.booleans(),
)
def test_the_snippet_is_the_window_made_printable_and_squashed(
    pieces: list[str], where: tuple[int, int], colour: bool
) -> None:
    text = "".join(pieces)
    start = min(where[0], len(text))
    end = min(len(text), start + where[1])
    hit = Hit("s", 1, {"role": "user", "content": text}, text, start, end)
    style = Style(colour)
    assert tools.snippet(hit, style) == plain_snippet(hit, style)


def test_hits_printed_in_blocks_come_out_in_order_as_lines(sessions_dir: Path) -> None:
    count = 3 * tools._LINES_PER_WRITE + 7  # blocks, and a last part block
    write_lines(
        sessions_dir / "many.jsonl",
        [json.dumps({"role": "user", "content": f"needle {n}"}) for n in range(count)],
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["grep", "needle", "--dir", str(sessions_dir)]) == 0
    assert out.getvalue() == "".join(f"many:{n + 1}: user: needle {n}\n" for n in range(count))


def test_ids_and_headings_are_made_printable_once_each_and_stay_right(sessions_dir: Path) -> None:
    # the printable id and the styled heading are kept per value: each hit still gets its own
    write_lines(
        sessions_dir / "a.jsonl",
        [
            json.dumps({"role": "user", "content": "needle 1"}),
            json.dumps({"type": "function_call", "name": "f", "arguments": "needle", "call_id": "c"}),
            json.dumps({"role": "evil\u202erole", "content": "needle 2"}),
            json.dumps({"role": "user", "content": "needle 3"}),
        ],
    )
    write_lines(sessions_dir / "b.jsonl", [json.dumps({"role": "assistant", "content": "needle 4"})])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["grep", "needle", "--dir", str(sessions_dir)]) == 0
    assert out.getvalue().splitlines() == [
        "a:1: user: needle 1",
        "a:2: tool call: f(needle)",
        "a:3: evil\\u202erole: needle 2",
        "a:4: user: needle 3",
        "b:1: assistant: needle 4",
    ]
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]", out.getvalue())


def test_on_a_terminal_the_role_and_the_match_are_coloured_line_by_line(sessions_dir: Path) -> None:
    write_lines(
        sessions_dir / "a.jsonl",
        [json.dumps({"role": "user", "content": f"the needle {n}"}) for n in range(3)],
    )
    shown = run_on_terminal(
        [sys.executable, "-m", "jsonl_session", "grep", "needle", "--dir", str(sessions_dir)]
    )
    role, match = "\x1b[1;32muser\x1b[0m", "\x1b[1;31mneedle\x1b[0m"
    assert shown.splitlines() == [f"a:{n + 1}: {role}: the {match} {n}" for n in range(3)]


class _CountedWrites(io.BufferedIOBase):
    """A byte stream that keeps each write apart, as a pipe's reader would see them arrive."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    @property
    def name(self) -> str:
        return "counted writes"

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        self.writes.append(bytes(data))
        return len(data)


def test_an_unbuffered_stream_gets_each_hit_as_it_is_found(sessions_dir: Path) -> None:
    """``python -u`` or ``PYTHONUNBUFFERED=1`` (set in many containers) makes stdout write
    through, on a terminal too, where it is then not line buffered: it gets each hit as it is
    found, not held back 256 at a time (found in review: on a terminal, hits before a session
    waiting for its lock appeared only at the end)."""
    write_lines(
        sessions_dir / "a.jsonl",
        [json.dumps({"role": "user", "content": f"the needle {n}"}) for n in range(3)],
    )
    raw = _CountedWrites()
    out = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)
    with contextlib.redirect_stdout(out):
        assert main(["grep", "needle", "--dir", str(sessions_dir)]) == 0
    assert [line.decode() for line in raw.writes] == [f"a:{n + 1}: user: the needle {n}\n" for n in range(3)]
