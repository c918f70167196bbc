"""The benchmark compares like with like: every store returns the same items, and timing leaves no trace.

Running a benchmark never overwrites the committed results in ``benchmarks/results/`` unless
asked (``--update-results``), and every benchmark takes the same options from one harness
(``benchmarks/outputs.py``): ``--quick``, ``--out DIR`` and ``--update-results``.

Speed itself is measured by ``benchmarks/run.py``, never asserted here.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.append(str(BENCHMARKS))  # after everything else: shadows nothing

import items as item_source  # benchmarks/items.py
import outputs  # benchmarks/outputs.py
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


HELPERS = {"items.py", "installed.py", "outputs.py"}  # imported by the benchmarks, not run
SCRIPTS = sorted(path.name for path in BENCHMARKS.glob("*.py") if path.name not in HELPERS)


def digests(folder: Path) -> dict[str, str]:
    import hashlib

    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted(folder.iterdir())}


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_benchmark_prints_help_with_the_shared_options(script: str) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "-h"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    for option in ("--quick", "--out DIR", "--update-results"):
        assert option in done.stdout, option


def test_rounds_run_every_task_once_each_in_a_new_order_and_keep_only_the_rounds_after_the_warmup() -> None:
    ran: list[str] = []

    def task(name: str) -> str:
        ran.append(name)
        return f"{name}{len(ran)}"

    tasks = {name: functools.partial(task, name) for name in "abcd"}
    kept = outputs.interleaved(tasks, 39, warmup=1)
    rounds = [ran[start : start + 4] for start in range(0, len(ran), 4)]
    assert len(rounds) == 40
    assert all(sorted(order) == list("abcd") for order in rounds)
    # Not a fixed order, nor a rotation: each task follows every other one in some round.
    predecessors = {(order[i - 1], order[i]) for order in rounds for i in range(1, 4)}
    assert predecessors == {(x, y) for x in "abcd" for y in "abcd" if x != y}
    for name in "abcd":
        assert kept[name] == [f"{name}{4 + 4 * n + rounds[n + 1].index(name) + 1}" for n in range(39)]
    first = list(ran)
    ran.clear()
    outputs.interleaved(tasks, 39, warmup=1)
    assert ran == first  # the seed is fixed: two runs measure in the same orders
    assert outputs.medians({"x": [3.0, 1.0, 2.0], "y": [1.0, 4.0]}) == {"x": 2.0, "y": 2.5}


def test_a_latency_summary_reads_its_percentiles_from_the_sorted_samples() -> None:
    summary = outputs.latency_summary([float(ms) for ms in range(100, 0, -1)])
    assert summary == {
        "samples": 100,
        "p50_ms": 50.5,
        "p90_ms": 91.0,
        "p99_ms": 100.0,
        "max_ms": 100.0,
        "min_ms": 1.0,
    }


def test_results_go_to_scratch_unless_asked(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    outputs.add_options(parser)
    assert outputs.results_dir(parser.parse_args([])) == BENCHMARKS / "output"
    assert outputs.results_dir(parser.parse_args(["--update-results"])) == BENCHMARKS / "results"
    assert outputs.results_dir(parser.parse_args(["--out", str(tmp_path / "mine")])) == tmp_path / "mine"
    written = outputs.write_json(parser.parse_args(["--out", str(tmp_path)]), "x.json", {"b": 1, "a": "é"})
    assert written.read_bytes() == b'{\n  "b": 1,\n  "a": "\\u00e9"\n}\n'


@pytest.mark.slow
@pytest.mark.parametrize("script", ["grep_vs_jq.py", "startup.py"])
def test_a_quick_run_leaves_the_committed_results_alone(script: str, tmp_path: Path) -> None:
    if script == "grep_vs_jq.py" and not (shutil.which("grep") and shutil.which("jq")):
        pytest.skip("grep_vs_jq.py needs grep and jq")
    committed = digests(BENCHMARKS / "results")
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "--quick"],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert digests(BENCHMARKS / "results") == committed
    written = done.stdout.strip().splitlines()[-1].removeprefix("written to ")
    assert Path(written).parent == BENCHMARKS / "output" and Path(written).is_file()
