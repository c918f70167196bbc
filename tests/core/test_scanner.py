"""The line scanner is the one place lines are split: its shortcuts agree with ``scan_lines``.

``settled_end`` (an edit's snapshot) and ``lines_containing`` (counting turns on a long
session) replaced hand-written splitting in ``edit_copy`` and ``turns``; a test holds every
module outside ``core`` to the scanner.
"""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_session.core import codec, scanner

PACKAGE = Path(__file__).resolve().parents[2] / "jsonl_session"

# Bytes that make every kind of line: items, blank lines, CRLF, torn and bad lines.
PIECES = st.sampled_from(
    [
        b'{"role":"user","content":"hi"}',
        b'{"role":"assistant"}',
        b"\n",
        b"\r\n",
        b"   ",
        b'{"ro',
        b"[1]",
        b"user",
    ]
)
FILES = st.lists(PIECES, max_size=12).map(b"".join)


@settings(max_examples=300, derandomize=True)
@given(FILES)
def test_settled_end_is_where_the_scanner_stops(data: bytes) -> None:
    assert scanner.settled_end(data) == scanner.scan_lines(data).consumed


@settings(max_examples=300, derandomize=True)
@given(FILES)
def test_lines_containing_finds_each_line_with_the_needle_once(data: bytes) -> None:
    expected = [line for line in data.split(b"\n") if b"user" in line]
    assert list(scanner.lines_containing(data, b"user")) == expected


def test_lines_containing_drops_the_bom_of_the_first_line() -> None:
    data = codec.BOM + b'{"role":"user"}\n{"role":"user","n":2}'
    assert list(scanner.lines_containing(data, b"user")) == [b'{"role":"user"}', b'{"role":"user","n":2}']


def test_no_module_outside_core_splits_session_lines_by_hand() -> None:
    """Splitting bytes at newlines belongs to ``core.scanner`` (and the readers in ``core``).

    ``tools/system_grep.py`` reads grep's own output, not a session; ``tools/grep.py`` takes
    the line around a match its byte search found (line numbers come from the same offsets).
    """
    allowed = {"system_grep.py", "grep.py"}
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if "core" in path.relative_to(PACKAGE).parts or path.name in allowed:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"""(split|find|rfind|count)\(b["']\\n["']""", line):
                offenders.append(f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}")
    assert offenders == []
