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
    the line around a match its byte search found (line numbers come from the same offsets);
    ``tools/conflicts.py`` looks for merge markers in sidecars keeping only each line's first
    bytes, so an endless line costs nothing (the scanner holds a whole line).
    """
    allowed = {"system_grep.py", "grep.py", "conflicts.py"}
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if "core" in path.relative_to(PACKAGE).parts or path.name in allowed:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"""(split|find|rfind|count)\(b["']\\n["']""", line):
                offenders.append(f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}")
    assert offenders == []


def test_lines_are_numbered_from_one_and_placed_by_their_file_offsets() -> None:
    """Catches (mutation testing): numbering from 0 or 2 by default, or counting lines by 0 or 2;
    a line's start or end placed before the scanned piece instead of after it (a BOM or an
    ``offset`` shifts both), the unterminated last item's end too; the newlines miscounted."""
    scan = scanner.scan_lines(b'{"a": 1}\n\n{"b": 2}\n')
    assert [(line.number, line.start, line.end) for line in scan.lines] == [(1, 0, 8), (3, 10, 18)]
    assert scan.newlines == 3
    scan = scanner.scan_lines(b'{"a": 1}\n{"b": 2}', offset=50)  # the last item has no newline
    assert [(line.number, line.start, line.end) for line in scan.lines] == [(1, 50, 58), (2, 59, 67)]
    assert (scan.consumed, scan.newlines) == (67, 1)
    scan = scanner.scan_lines(codec.BOM + b'{"a": 1}\n{"b": 2}\n')
    assert [(line.start, line.end) for line in scan.lines] == [(3, 11), (12, 20)]
    scan = scanner.scan_lines(b'{"a": 1}\n{"b": 2}\n', offset=100, first_number=7)
    assert [(line.number, line.start, line.end) for line in scan.lines] == [(7, 100, 108), (8, 109, 117)]


def test_a_whole_file_of_one_item_after_a_bom_is_settled() -> None:
    """Catches (mutation testing): the BOM kept on a last line that is also the first."""
    data = codec.BOM + b'{"a": 1}'
    assert scanner.settled_end(data) == len(data)
    assert scanner.settled_end(codec.BOM + b'{"a"') == 0


def test_a_bad_lines_snippet_is_its_first_60_characters() -> None:
    """Catches (mutation testing): 61 characters shown, or "..." after a line of exactly 60."""
    exactly = b"x" * 60
    assert scanner.describe_bad_line(exactly) == f"not valid JSON ({_json_error(exactly)}): '{'x' * 60}'"
    longer = b"x" * 61
    assert scanner.describe_bad_line(longer) == f"not valid JSON ({_json_error(longer)}): '{'x' * 60}...'"


def _json_error(line: bytes) -> str:
    try:
        codec.decode_line(line)
    except ValueError as exc:
        return str(exc)
    raise AssertionError("valid JSON")
