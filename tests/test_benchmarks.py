"""The benchmark compares like with like: every store returns the same items, and timing leaves no trace.

Speed itself is measured by ``benchmarks/run.py``, never asserted here.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.append(str(BENCHMARKS))  # after everything else: shadows nothing

import items as item_source  # benchmarks/items.py
import run  # benchmarks/run.py


def test_items_are_realistic_and_deterministic() -> None:
    sample = item_source.sample(2000)
    sizes = [len(orjson.dumps(item)) for item in sample]
    assert min(sizes) >= item_source.MIN_BYTES and max(sizes) <= item_source.MAX_BYTES
    kinds = {item.get("type", item.get("role")) for item in sample}
    assert kinds == {"user", "message", "function_call", "function_call_output"}
    non_ascii = sum(not orjson.dumps(item).isascii() for item in sample)
    assert 0.05 < non_ascii / len(sample) < 0.5
    assert item_source.sample(50) == sample[:50]


def test_every_store_holds_the_same_items_and_timing_leaves_sizes_unchanged(tmp_path: Path) -> None:
    pytest.importorskip("agents", reason="the benchmark compares against the Agents SDK's SQLiteSession")

    async def scenario() -> None:
        stores = run.open_stores(tmp_path, list(run.STORES))
        pool = run.Pool(300)
        history = item_source.sample(120, seed=5)
        try:
            for store in stores:
                await store.grow(history)
            for group in (
                run.add_one_then_pop,
                run.get_twenty,
                run.add_hundred,
                run.get_everything,
                run.chat_turn,
            ):
                await run.interleaved({len(history): stores}, group, pool, {len(history): 3})
            run.check_sizes({len(history): stores})
            for store in stores:
                everything: list[Any] = await store.session.get_items()
                newest: list[Any] = await store.session.get_items(limit=20)
                assert everything == history, store.name
                assert newest == history[-20:], store.name
                assert await store.session.pop_item() == history[-1], store.name
        finally:
            for store in stores:
                store.close()

    asyncio.run(scenario())


def test_targets_report_a_missing_measurement_as_not_measured() -> None:
    sizes = [1000, 100_000]
    stats = {"median_us": 10.0, "p99_us": 20.0, "n": 5}
    latency = {op: {name: {str(s): stats for s in sizes} for name in run.STORES} for op in run.OPS}
    results = {"latency": latency, "tail": {"missing": "skipped"}, "memory_1gib": {"skipped": "--no-memory"}}
    targets = {t["target"]: t for t in run.check_targets(results, sizes)}
    assert targets["live tail p50 (worse of watch / watch_sync)"]["met"] is None
    assert targets["get_items(limit=20) at 100,000: JSONL / SQLite file"]["value"] == 1.0
    assert targets["get_items(limit=20) at 100,000: JSONL / SQLite file"]["met"] is False
