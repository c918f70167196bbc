"""Full reads split the file a piece at a time (so a worker thread never holds the GIL for long)."""

from __future__ import annotations

import gc
import os
import random
from pathlib import Path

import pytest

from jsonl_session import JSONLSession, MalformedLineError
from jsonl_session.core import codec, reads


@pytest.mark.parametrize("seed", range(40))
def test_reading_lines_in_pieces_equals_one_split(
    seed: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(reads, "_SPLIT_PIECE", 7)
    rng = random.Random(seed)
    data = bytes(rng.choice(b"a1\n") for _ in range(rng.randrange(0, 200)))
    if seed % 3 == 1:  # a 19-digit number, cut by piece boundaries
        at = rng.randrange(len(data) + 1)
        data = data[:at] + b"1" * 19 + data[at:]
    if seed % 4 == 0:
        data = codec.BOM + data
    path = tmp_path / "lines.jsonl"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        lines, long_numbers = reads.read_lines(fd, len(data))
    finally:
        os.close(fd)
    assert lines == data.removeprefix(codec.BOM).split(b"\n")
    assert long_numbers == codec.has_long_digit_run(data)  # also a run cut by a piece boundary


def test_a_full_read_in_pieces_returns_every_item(
    session: JSONLSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reads, "_SPLIT_PIECE", 100)
    items = [{"n": n, "pad": "x" * (n % 37)} for n in range(500)]
    session.add_items_sync(items)
    assert session.get_items_sync() == items


def test_a_full_read_leaves_no_backlog_for_the_garbage_collector(session: JSONLSession) -> None:
    # One GC pause over the whole read left every new object in the young generation: the
    # first collection after it scanned them all while holding the GIL (50-250 ms with
    # 100,000 items, an event loop stalled behind it). Collected a piece at a time, the
    # young generation holds at most one piece's objects when the read returns.
    items = [{"role": "user", "content": [{"type": "input_text", "text": f"t{n}"}]} for n in range(20_000)]
    session.add_items_sync(items)
    gc.collect()
    assert session.get_items_sync() == items
    assert gc.get_count()[0] < 3 * reads._PARSE_PIECE


@pytest.mark.parametrize("bad_at", [0, 4095, 4096, 9000])
def test_a_bad_line_in_any_piece_names_its_line_number(session: JSONLSession, bad_at: int) -> None:
    session.add_items_sync([{"n": n} for n in range(10_000)])
    lines = session.path.read_bytes().split(b"\n")
    lines[bad_at] = b"[1, 2]"
    session.path.write_bytes(b"\n".join(lines))
    with pytest.raises(MalformedLineError) as raised:
        session.get_items_sync()
    assert raised.value.line == bad_at + 1


def test_one_long_line_is_scanned_once_not_once_per_piece(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A 96 MB base64 image in one item was re-joined and re-checked for long numbers at every
    # 1 MiB piece: 7.7 s instead of 0.26 s. Count the bytes checked instead of timing.
    monkeypatch.setattr(reads, "_SPLIT_PIECE", 1024)
    line = b'{"image":"' + b"QUJD" * 16_384 + b'"}'  # 64 KiB: 64 pieces
    path = tmp_path / "image.jsonl"
    path.write_bytes(line + b"\n" + b'{"n":12345678901234567890}\n')
    checked = 0
    real_check = codec.has_long_digit_run

    def counting_check(data: bytes) -> bool:
        nonlocal checked
        checked += len(data)
        return real_check(data)

    monkeypatch.setattr(codec, "has_long_digit_run", counting_check)
    fd = os.open(path, os.O_RDONLY)
    try:
        lines, long_numbers = reads.read_lines(fd, path.stat().st_size)
    finally:
        os.close(fd)
    assert lines == [line, b'{"n":12345678901234567890}', b""]
    assert long_numbers
    assert checked < 2 * path.stat().st_size


def test_a_long_number_that_begins_a_big_piece_is_read_exactly(
    session: JSONLSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A piece over 16 KiB is checked for 19-digit runs in smaller pieces of its own; the run
    here begins at the piece's first byte, so only the piece's own check can see all 19 digits.

    Catches (mutation testing): the piece's check starting at its second byte (orjson then read
    the number, below the smallest 64-bit integer, as a rounded float)."""
    monkeypatch.setattr(reads, "_SPLIT_PIECE", 32 * 1024)
    number = -9_999_999_999_999_999_999  # 19 digits, beyond 64 bits
    head = b'{"pad":"' + b"x" * (32 * 1024 - 8 - 3 - 6) + b'"}\n'
    second = b'{"n":-' + str(-number).encode() + b"}\n"
    session.path.parent.mkdir(parents=True, exist_ok=True)
    tail = b'{"pad":"' + b"y" * 20_000 + b'"}\n'  # the second piece is over 16 KiB too
    session.path.write_bytes(head + second + tail)
    assert len(head) + len(b'{"n":-') == 32 * 1024
    [_, item, _] = session.get_items_sync()
    assert type(item["n"]) is int and item["n"] == number
