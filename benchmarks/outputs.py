"""What every benchmark shares: its options, interleaved rounds, medians, and where results go.

``benchmarks/results/`` holds the numbers docs/benchmarks.md quotes, from one run on a quiet machine.
A run to try something out must not replace them, so every benchmark writes to
``benchmarks/output/`` (ignored by git) unless given ``--out DIR`` (a folder, for every script) or
``--update-results``. The machine is shared and noisy, so the commands being compared run in
rounds (:func:`interleaved`), one of each per round in a new random order (:func:`random_order`),
and the results are medians of the rounds: a burst of load hits every command alike, and ratios
of medians from one run stay comparable.

Example:
    >>> parser = argparse.ArgumentParser()
    >>> add_options(parser, quick="smoke test: 3 runs")
    >>> results_dir(parser.parse_args([])).name, results_dir(parser.parse_args(["--update-results"])).name
    ('output', 'results')
    >>> interleaved({"a": lambda: 1.0, "b": lambda: 3.0}, runs=2)
    {'a': [1.0, 1.0], 'b': [3.0, 3.0]}
    >>> medians({"a": [3.0, 1.0, 2.0]})
    {'a': 2.0}
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

HERE = Path(__file__).resolve().parent
COMMITTED = HERE / "results"
SCRATCH = HERE / "output"

T = TypeVar("T")


def add_options(parser: argparse.ArgumentParser, *, quick: str | None = None) -> None:
    """``--out DIR`` and ``--update-results`` (one or the other); ``--quick`` too, with ``quick`` its help."""
    if quick is not None:
        parser.add_argument("--quick", action="store_true", help=quick)
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="write the results into DIR (default: benchmarks/output/, ignored by git)",
    )
    where.add_argument(
        "--update-results",
        action="store_true",
        help="overwrite the committed results in benchmarks/results/ (a final run on a quiet machine)",
    )


def results_dir(args: argparse.Namespace) -> Path:
    """The folder chosen by :func:`add_options`' options (created if missing)."""
    folder: Path = args.out if args.out is not None else COMMITTED if args.update_results else SCRATCH
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def write_json(
    args: argparse.Namespace,
    name: str,
    result: Any,
    *,
    indent: int = 2,
    sort_keys: bool = False,
    ensure_ascii: bool = True,
) -> Path:
    """``result`` as ``name`` in the chosen folder, one JSON document and a newline (UTF-8); the path."""
    path = results_dir(args) / name
    text = json.dumps(result, indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii)
    path.write_text(text + "\n", encoding="utf-8")
    return path


def timed(
    command: Sequence[str] | str,
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    shell: bool = False,
) -> float:
    """Wall seconds of one whole command (its output dropped; a failure raises)."""
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, check=True, env=env, cwd=cwd, shell=shell)
    return time.perf_counter() - start


def random_order(seed: str) -> Callable[[Iterable[T]], list[T]]:
    """A function that returns its items in a new random order at each call; the same seed gives
    the same orders, so two runs of a benchmark measure alike.

    Every benchmark's rounds run in it. A fixed order or a rotation gives each task the same
    predecessor (almost) every round, and what one leaves behind shows in the next one's time: a
    journal transaction an ``fdatasync`` closed, code still warm, a page cache just filled
    (docs/benchmarks.md, "Method").
    """
    generator = random.Random(seed)

    def shuffled(items: Iterable[T]) -> list[T]:
        ordered = list(items)
        generator.shuffle(ordered)
        return ordered

    return shuffled


def interleaved(tasks: Mapping[str, Callable[[], T]], runs: int, *, warmup: int = 0) -> dict[str, list[T]]:
    """Each task once per round, in a new :func:`random_order` each round, for ``warmup`` rounds
    not kept and then ``runs`` kept."""
    kept: dict[str, list[T]] = {name: [] for name in tasks}
    order = random_order(" ".join(tasks))
    for round_ in range(warmup + runs):
        for name in order(tasks):
            value = tasks[name]()
            if round_ >= warmup:
                kept[name].append(value)
    return kept


def wait_until_cacheable(written: float) -> None:
    """Sleep until files last written at ``written`` (a ``time.monotonic()``) are old enough for
    the listing cache, which keeps no file changed in its last two seconds
    (``session.listing_cache.RACY_NS``): a warm ``ls`` is not timed on listings that cannot use it."""
    from jsonl_session.session.listing_cache import RACY_NS

    time.sleep(max(0.0, written + RACY_NS / 1e9 + 0.1 - time.monotonic()))


def medians(samples: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """The median of each task's samples."""
    return {name: statistics.median(values) for name, values in samples.items()}


def latency_summary(milliseconds: Sequence[float]) -> dict[str, Any]:
    """Samples, median, p90, p99, max and min of latencies in ms (rounded to 0.01 ms)."""
    ordered = sorted(milliseconds)

    def percentile(fraction: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(fraction * len(ordered)))], 2)

    return {
        "samples": len(ordered),
        "p50_ms": round(statistics.median(ordered), 2),
        "p90_ms": percentile(0.90),
        "p99_ms": percentile(0.99),
        "max_ms": round(ordered[-1], 2),
        "min_ms": round(ordered[0], 2),
    }
