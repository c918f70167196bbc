"""``count_items`` (what ``ls`` and ``count_items_sync`` show) counts exactly what the scanner finds,
less git's conflict marker lines, which ``count_lines`` counts apart (``ls``: needs merge).

The count goes a piece at a time and takes the per-line path only for a piece that may hold a
blank line or a marker, so these tests force small pieces: every rule (blank and
whitespace-only lines, CRLF, a BOM, a last line without its newline, a torn tail, a marker)
must hold across any boundary.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_session import JSONLSession
from jsonl_session.core import codec, reads
from jsonl_session.core.scanner import is_conflict_marker, parse_item, scan_lines

LINES = st.sampled_from(
    [
        b'{"n":1}',
        b'{"n":1}\r',
        b'  {"n":2} ',
        b'{"pad":"' + b"x" * 40 + b'"}',
        b"",
        b" ",
        b"\r",
        b" \t\r\x0b\x0c",
        b"\x0b",
        b"[1,2]",
        b'{"torn":',
        b"not json",
        b"\xef\xbb\xbf",
        b"<<<<<<< HEAD",
        b"<<<<<<<",
        b"<<<<<<<\r",
        b"=======",
        b">>>>>>> other",
        b"||||||| base",
        b"<<<<<<<<x",  # starts like a marker, is not one
        b">>>>>>>",
        b" =======",
    ]
)


def count_of(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> tuple[int, int]:
    path = tmp_path_factory.mktemp("count") / "s.jsonl"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        counted = reads.count_lines(fd)
        assert reads.count_items(fd) == counted[0]
        return counted
    finally:
        os.close(fd)


def scanned(data: bytes) -> tuple[int, int]:
    """The scanner's lines less the marker lines, and the marker lines (an unended one too)."""
    scan = scan_lines(data)
    markers = sum(is_conflict_marker(line.data) for line in scan.lines)
    unended = bool(scan.pending.strip()) and is_conflict_marker(scan.pending)
    return len(scan.lines) - markers, markers + unended


@settings(max_examples=400, deadline=None, derandomize=True)
@given(
    lines=st.lists(LINES, max_size=14),
    noise=st.binary(max_size=40),
    ends_with_newline=st.booleans(),
    bom=st.booleans(),
    piece=st.integers(min_value=1, max_value=24),
)
def test_the_count_equals_the_scanners_over_any_pieces(
    tmp_path_factory: pytest.TempPathFactory,
    lines: list[bytes],
    noise: bytes,
    ends_with_newline: bool,
    bom: bool,
    piece: int,
) -> None:
    data = (codec.BOM if bom else b"") + b"\n".join([*lines, noise] if noise else lines)
    data += b"\n" if ends_with_newline and (lines or noise) else b""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reads, "_COUNT_PIECE", piece)
        assert count_of(tmp_path_factory, data) == scanned(data), data


@settings(max_examples=200, deadline=None, derandomize=True)
@given(data=st.binary(max_size=200), piece=st.integers(min_value=1, max_value=64))
def test_the_count_equals_the_scanners_over_random_bytes(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, piece: int
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reads, "_COUNT_PIECE", piece)
        assert count_of(tmp_path_factory, data) == scanned(data), data


@pytest.mark.parametrize(
    ("data", "count"),
    [
        (b'{"a":1}\n\n  \n\t\r\n{"b":2}\n', 2),  # blank and whitespace-only lines do not count
        (b'{"a":1}\r\n{"b":2}\r\n', 2),  # CRLF
        (codec.BOM + b'{"a":1}\n', 1),  # a BOM
        (b'{"a":1}\n{"b":2}', 2),  # a valid last line without its newline counts
        (b'{"a":1}\n{"b":', 1),  # a torn tail does not
        (b"\n" * 1000 + b'{"a":1}\n', 1),
        # what a git merge leaves: the marker lines are not items
        (b'{"a":1}\n<<<<<<< HEAD\n{"b":2}\n=======\n{"c":3}\n>>>>>>> other\n', 3),
        (b"<<<<<<< HEAD\r\n" + b"=" * 7 + b"\r\n>>>>>>> x", 0),
    ],
)
@pytest.mark.parametrize("piece", [1, 2, 3, 5, 1024 * 1024])
def test_the_count_follows_the_format_rules(tmp_path: Path, data: bytes, count: int, piece: int) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(reads, "_COUNT_PIECE", piece)
            assert reads.count_items(fd) == count
    finally:
        os.close(fd)


def test_count_items_sync_of_a_session(tmp_path: Path) -> None:
    """Catches: ``count_items_sync`` answering 0 for a file that exists (its missing-file test
    turned around); only a memory test called it."""
    session = JSONLSession("s", tmp_path)
    assert session.count_items_sync() == 0  # no file yet, and counting makes none
    assert not session.path.exists()
    session.add_items_sync([{"n": n} for n in range(5)])
    assert session.count_items_sync() == 5
    with session.path.open("ab") as file:
        file.write(b'{"torn')
    assert session.count_items_sync() == 5


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    lines=st.lists(LINES | st.sampled_from([b'{"u":"user"}', b'{"user":1}', b'"user"']), max_size=10),
    bom=st.booleans(),
    piece=st.integers(min_value=1, max_value=24),
)
def test_the_first_line_found_is_the_scanners_first_over_any_pieces(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], bom: bool, piece: int
) -> None:
    # how a listing finds a session's first user message (its default title) a piece at a time
    data = (codec.BOM if bom else b"") + b"\n".join(lines)
    path = tmp_path_factory.mktemp("first") / "s.jsonl"
    path.write_bytes(data)

    def pick(line: bytes) -> bytes | None:
        item = parse_item(line)
        return line.strip() if item is not None and b"user" in line else None

    expected = next((pick(line.data) for line in scan_lines(data).lines if pick(line.data)), None)
    fd = os.open(path, os.O_RDONLY)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(reads, "_FIND_PIECE", piece)
            assert reads.first_line_where(fd, len(data), b"user", pick) == expected, data
    finally:
        os.close(fd)
