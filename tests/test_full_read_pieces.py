"""Full reads split the file a piece at a time (so a worker thread never holds the GIL for long)."""

from __future__ import annotations

import gc
import random

import pytest

from jsonl_session import JSONLSession, MalformedLineError, storage


@pytest.mark.parametrize("seed", range(20))
def test_split_lines_in_pieces_equals_one_split(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(storage, "_SPLIT_PIECE", 7)
    rng = random.Random(seed)
    data = bytes(rng.choice(b"ab\n") for _ in range(rng.randrange(0, 200)))
    assert storage.split_lines(data) == data.split(b"\n")


def test_a_full_read_in_pieces_returns_every_item(
    session: JSONLSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(storage, "_SPLIT_PIECE", 100)
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
    assert gc.get_count()[0] < 3 * storage._PARSE_PIECE


@pytest.mark.parametrize("bad_at", [0, 4095, 4096, 9000])
def test_a_bad_line_in_any_piece_names_its_line_number(session: JSONLSession, bad_at: int) -> None:
    session.add_items_sync([{"n": n} for n in range(10_000)])
    lines = session.path.read_bytes().split(b"\n")
    lines[bad_at] = b"[1, 2]"
    session.path.write_bytes(b"\n".join(lines))
    with pytest.raises(MalformedLineError) as raised:
        session.get_items_sync()
    assert raised.value.line == bad_at + 1
