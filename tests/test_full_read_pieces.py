"""Full reads split the file a piece at a time (so a worker thread never holds the GIL for long)."""

from __future__ import annotations

import random

import pytest

from jsonl_session import JSONLSession, storage


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
