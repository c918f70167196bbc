"""What one event loop costs other tasks: 20 durable conversations, JSONLSession vs SQLiteSession and a floor.

Usage (from the repository root, in a venv with ``pip install -e '.[bench]'``):

    .venv/bin/python benchmarks/loop_lag.py --quick             # a smoke run, prints the table
    .venv/bin/python benchmarks/loop_lag.py --update-results    # writes benchmarks/results/loop_lag.*

Measured in one run, stores alternating round by round so noise hits both:

* **turns/s**: 20 conversations share one loop; each turn is ``add_items([1 item])`` then
  ``get_items(limit=20)``, durable (``fdatasync`` / SQLite commit);
* **loop lag**: meanwhile a task sleeps 1 ms in a loop; its lateness (p50, p99, max) is what
  every other coroutine in the process waits for;
* **stall**: the longest lateness of the same task while ``get_items()`` reads a
  100,000-item session in full;
* **the bare floor**: the same conversations on the issue's bare prototype (flock + write
  inline, ``fdatasync`` in a thread, the tail read inline, nothing else), so a target the
  machine itself sets shows as a miss of the floor too;
* **the machine**: how often a busy CPU thread with no file work at all is frozen while
  another process fdatasyncs flat out (on this VM: ~20 ms every 100 ms).

Targets (docs/benchmarks.md): turns/s >= 3x SQLiteSession's, lag p99 <= max(3 ms, 3x SQLiteSession's),
stall <= ~25 ms. Writes ``loop_lag.json``, ``.md`` and ``.png`` (the plot needs matplotlib, the
``bench`` extra) into ``benchmarks/output/``, or ``--out DIR``, or with ``--update-results`` over
the committed ``benchmarks/results/loop_lag.*``.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import multiprocessing
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import items as item_source  # benchmarks/items.py
import orjson
import outputs  # benchmarks/outputs.py

from jsonl_session import JSONLSession

CONVERSATIONS = 20
BIG = 100_000


KINDS = {
    "jsonl": "JSONLSession",
    "sqlite": "SQLiteSession (file)",
    "floor": "floor: flock + write inline, fdatasync in a thread, 20-item tail read inline",
}


class BareFloor:
    """The issue's bare prototype: what any store that fsyncs off the loop must at least do.

    ``add_items`` locks, writes and unlocks around an ``fdatasync`` in a worker thread;
    ``get_items(limit)`` locks shared and parses the tail inline. No validation, no checks
    for replaced files or torn tails, no cancellation safety.
    """

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)

    async def add_items(self, items: list[dict[str, Any]]) -> None:
        payload = b"".join(orjson.dumps(item, option=orjson.OPT_APPEND_NEWLINE) for item in items)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        try:
            os.write(self.fd, payload)
            await asyncio.get_running_loop().run_in_executor(None, os.fdatasync, self.fd)
        finally:
            fcntl.flock(self.fd, fcntl.LOCK_UN)

    async def get_items(self, limit: int) -> list[Any]:
        await asyncio.sleep(0)
        fcntl.flock(self.fd, fcntl.LOCK_SH)
        try:
            size = os.fstat(self.fd).st_size
            data = os.pread(self.fd, min(size, 64 * 1024), max(0, size - 64 * 1024))
        finally:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        return [orjson.loads(line) for line in data.split(b"\n")[:-1][-limit:]]

    def close(self) -> None:
        os.close(self.fd)


def open_sessions(kind: str, directory: Path, count: int, prefix: str) -> list[Any]:
    if kind == "jsonl":
        return [JSONLSession(f"{prefix}-{n}", directory) for n in range(count)]
    if kind == "floor":
        return [BareFloor(directory / f"{prefix}-{n}.jsonl") for n in range(count)]
    from agents.memory import SQLiteSession

    return [SQLiteSession(f"{prefix}-{n}", str(directory / "sqlite.db")) for n in range(count)]


class LagProbe:
    """A task that sleeps 1 ms at a time and records how late it wakes up (in ms)."""

    def __init__(self) -> None:
        self.lags: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            start = time.perf_counter()
            await asyncio.sleep(0.001)
            self.lags.append((time.perf_counter() - start - 0.001) * 1000)

    def __enter__(self) -> LagProbe:  # noqa: PYI034
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


async def conversations(kind: str, directory: Path, seconds: float, round_: int) -> dict[str, float]:
    sessions = open_sessions(kind, directory, CONVERSATIONS, f"turns{round_}")
    pool = item_source.sample(200, seed=round_)
    turns = 0
    deadline = time.perf_counter() + seconds

    async def talk(session: Any, n: int) -> None:
        nonlocal turns
        while time.perf_counter() < deadline:
            await session.add_items([pool[(turns + n) % len(pool)]])
            await session.get_items(limit=20)
            turns += 1

    with LagProbe() as probe:
        await asyncio.sleep(0.01)  # the probe is running before the conversations start
        start = time.perf_counter()
        await asyncio.gather(*(talk(session, n) for n, session in enumerate(sessions)))
        elapsed = time.perf_counter() - start
    for session in sessions:
        session.close()
    return {
        "turns_per_s": turns / elapsed,
        "lag_p50_ms": percentile(probe.lags, 0.50),
        "lag_p99_ms": percentile(probe.lags, 0.99),
        "lag_max_ms": max(probe.lags),
    }


async def full_read_stall(kind: str, directory: Path, size: int, reads: int) -> dict[str, float]:
    session = open_sessions(kind, directory, 1, "big")[0]
    batch = item_source.sample(10_000, seed=7)
    if kind == "jsonl":
        bulk = JSONLSession(session.session_id, directory, durable=False)
        for start in range(0, size, len(batch)):
            bulk.add_items_sync(batch[: size - start])
        bulk.close()
    else:
        for start in range(0, size, len(batch)):
            await session.add_items(batch[: size - start])
    stalls: list[float] = []
    durations: list[float] = []
    for _ in range(reads):
        with LagProbe() as probe:
            await asyncio.sleep(0.01)
            began = time.perf_counter()
            got = await session.get_items()
            durations.append((time.perf_counter() - began) * 1000)
            await asyncio.sleep(0.005)  # the probe's last wake-up after the read
        assert len(got) == size, (kind, len(got))
        del got
        stalls.append(max(probe.lags))
    session.close()
    return {
        "stall_max_ms": max(stalls),
        "stall_median_ms": statistics.median(stalls),
        "read_ms": statistics.median(durations),
    }


def _fsync_flat_out(path: str, seconds: float) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        os.write(fd, b"x" * 400)
        os.fdatasync(fd)
    os.close(fd)


def machine_stalls(directory: Path, seconds: float) -> dict[str, float]:
    """How long a busy CPU thread is frozen while *another process* fdatasyncs flat out.

    No Python, no asyncio, no file work in the measuring loop: a gap here is time the machine
    (hypervisor, disk emulation) takes from a running thread, and it caps any loop-lag p99.
    """
    worker = multiprocessing.get_context("spawn").Process(
        target=_fsync_flat_out, args=(str(directory / "fsync-load"), seconds + 1)
    )
    worker.start()
    time.sleep(0.5)  # the writer is running
    gaps: list[float] = []
    last = began = time.perf_counter()
    while last - began < seconds:
        now = time.perf_counter()
        if now - last > 0.003:
            gaps.append((now - last) * 1000)
        last = now
    worker.join()
    return {
        "gaps_over_3ms_per_s": len(gaps) / seconds,
        "frozen_share": sum(gaps) / 1000 / seconds,
        "longest_gap_ms": max(gaps, default=0.0),
    }


def summarise(rounds: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}


def check_targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 11's targets, each with what the bare floor scores on the same measure in the same run."""
    jsonl, sqlite, floor = (results["turns"][kind] for kind in ("jsonl", "sqlite", "floor"))
    ratio = jsonl["turns_per_s"] / sqlite["turns_per_s"]
    floor_ratio = floor["turns_per_s"] / sqlite["turns_per_s"]
    lag_limit = max(3.0, 3 * sqlite["lag_p99_ms"])
    stall = results["stall"]["jsonl"]["stall_max_ms"]
    return [
        {
            "target": "turns/s >= 3x SQLiteSession",
            "value": f"{ratio:.1f}x",
            "met": ratio >= 3,
            "floor": f"{floor_ratio:.1f}x",
        },
        {
            "target": "loop lag p99 <= max(3 ms, 3x SQLiteSession's)",
            "value": f"{jsonl['lag_p99_ms']:.2f} ms (limit {lag_limit:.2f} ms)",
            "met": jsonl["lag_p99_ms"] <= lag_limit,
            "floor": f"{floor['lag_p99_ms']:.2f} ms",
        },
        {
            "target": f"get_items() of {results['meta']['big']:,} items stalls the loop <= ~25 ms",
            "value": f"{stall:.1f} ms",
            "met": stall <= 25,
            "floor": "–",
        },
    ]


def markdown(results: dict[str, Any]) -> str:
    t, s = results["turns"], results["stall"]
    lines = [
        f"20 durable conversations in one event loop ({results['meta']['rounds']} rounds, medians):",
        "",
        (
            "| store | turns/s | loop lag p50 | p99 | max | stall during get_items() of "
            f"{results['meta']['big']:,} | that read takes |"
        ),
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for kind, label in KINDS.items():
        stall = f"{s[kind]['stall_max_ms']:.1f} ms | {s[kind]['read_ms']:.0f} ms" if kind in s else "– | –"
        lines.append(
            f"| {label} | {t[kind]['turns_per_s']:,.0f} | {t[kind]['lag_p50_ms']:.2f} ms "
            f"| {t[kind]['lag_p99_ms']:.2f} ms | {t[kind]['lag_max_ms']:.1f} ms | {stall} |"
        )
    lines += ["", "| target | measured | met | the bare floor, same measure |", "|---|---|---|---|"]
    for target in results["targets"]:
        met = "yes" if target["met"] else "**no**"
        lines.append(f"| {target['target']} | {target['value']} | {met} | {target.get('floor', '–')} |")
    machine = results.get("machine")
    if machine:
        lines += [
            "",
            (
                f"The machine itself, same run: while another process fdatasyncs flat out, a busy CPU "
                f"thread (no Python objects, no files) is frozen {machine['gaps_over_3ms_per_s']:.1f} "
                f"times a second for more than 3 ms, {100 * machine['frozen_share']:.0f} % of the time, "
                f"longest {machine['longest_gap_ms']:.1f} ms."
            ),
        ]
    return "\n".join(lines) + "\n"


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds, labels = ["jsonl", "sqlite", "floor"], ["JSONLSession", "SQLiteSession", "bare floor"]
    colors = ["#2a7", "#888", "#bbb"]
    figure, axes = plt.subplots(1, 3, figsize=(11, 3.4))
    turns = [results["turns"][k]["turns_per_s"] for k in kinds]
    axes[0].bar(labels, turns, color=colors)
    axes[0].set_title("turns/s, 20 conversations (higher is better)", fontsize=9)
    p50 = [results["turns"][k]["lag_p50_ms"] for k in kinds]
    p99 = [results["turns"][k]["lag_p99_ms"] for k in kinds]
    x = range(len(kinds))
    axes[1].bar([i - 0.2 for i in x], p50, width=0.4, label="p50", color=colors, alpha=0.5)
    axes[1].bar([i + 0.2 for i in x], p99, width=0.4, label="p99", color=colors)
    axes[1].set_xticks(list(x), labels)
    axes[1].set_title("loop lag of a 1 ms sleeper, ms (p50 light, p99)", fontsize=9)
    stall = [results["stall"][k]["stall_max_ms"] for k in kinds[:2]]
    axes[2].bar(labels[:2], stall, color=colors[:2])
    axes[2].axhline(25, color="#c33", linestyle="--", linewidth=1)
    axes[2].set_title(f"longest stall, get_items() of {results['meta']['big']:,}, ms", fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


async def run(scratch: Path, rounds: int, seconds: float, big: int, reads: int, log: Any) -> dict[str, Any]:
    per_round: dict[str, list[dict[str, float]]] = {kind: [] for kind in KINDS}
    order = outputs.random_order("loop_lag")
    for round_ in range(rounds):
        for kind in order(KINDS):
            directory = scratch / f"{kind}-{round_}"
            directory.mkdir(parents=True)
            per_round[kind].append(await conversations(kind, directory, seconds, round_))
            log(f"round {round_ + 1}/{rounds} {kind}: {per_round[kind][-1]}")
    stall = {}
    for kind in ("jsonl", "sqlite"):
        directory = scratch / f"big-{kind}"
        directory.mkdir(parents=True)
        stall[kind] = await full_read_stall(kind, directory, big, reads)
        log(f"stall {kind}: {stall[kind]}")
    machine = machine_stalls(scratch, seconds)
    log(f"machine: {machine}")
    return {
        "turns": {k: summarise(v) for k, v in per_round.items()},
        "rounds_raw": per_round,
        "stall": stall,
        "machine": machine,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Example: python benchmarks/loop_lag.py --quick",
    )
    outputs.add_options(parser, quick="smoke run: 2 short rounds, 20,000-item read")
    parser.add_argument("--rounds", type=int, default=6, help="alternating rounds per store (default 6)")
    parser.add_argument("--seconds", type=float, default=5.0, help="length of one round (default 5)")
    parser.add_argument("--scratch", type=Path, default=HERE / "output", help="where sessions are built")
    args = parser.parse_args(argv)
    rounds, seconds, big, reads = (2, 1.5, 20_000, 2) if args.quick else (args.rounds, args.seconds, BIG, 5)
    began = time.monotonic()

    def log(message: str) -> None:
        print(f"[{time.monotonic() - began:6.1f}s] {message}", file=sys.stderr, flush=True)

    scratch = args.scratch / f"loop-lag-{os.getpid()}"
    try:
        results = asyncio.run(run(scratch, rounds, seconds, big, reads, log))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    results["meta"] = {
        "rounds": rounds,
        "seconds_per_round": seconds,
        "big": big,
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "load_after": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "quick": args.quick,
    }
    results["targets"] = check_targets(results)
    text = markdown(results)
    print(text)
    written = outputs.write_json(args, "loop_lag.json", results, indent=1)
    (written.parent / "loop_lag.md").write_text(text)
    try:
        plot(results, written.parent / "loop_lag.png")
    except ModuleNotFoundError:
        if args.update_results:  # the committed plot must match the committed numbers
            raise
        log("no matplotlib (the bench extra): loop_lag.png not drawn")
    print(f"written to {written}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
