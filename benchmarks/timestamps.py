"""What recording each item's time costs ``add_items``: the same sessions with and without ``timestamps``.

Usage (from the repository root):

    .venv/bin/python benchmarks/timestamps.py --update-results

writes ``benchmarks/results/timestamps.json`` (without ``--update-results``, or with ``--out DIR``,
to ``benchmarks/output/`` instead). The bounds (timestamps are on by default for every
session, so they must cost little): at most +10 % on ``add_items``, durable or not.

Method, as ``benchmarks/run.py`` measures (its helpers are reused): the async API the SDK calls,
one event loop, ``perf_counter_ns`` around each ``await``. Each pair (durable with and without
timestamps, then ``durable=False`` with and without) is interleaved: each repetition runs once
on both, in a random order, so a burst of noise hits both; ratios are ratios of medians of the
same run.
Each 1-item add is followed by a timed ``pop_item()`` (which also drops the item's time); each
100-item add is rolled back, untimed, by truncating the session, and its ``.times`` sidecar is
left to grow, as it does in use: truncating it too freed its blocks, which the next durable
add's ``fdatasync`` then committed to the journal (+20 % that no real add pays). The session
objects are not told about that truncation, so each 100-item add also pays the check of the
sidecar's descriptor (an ``fstat``) that a real add pays only after another writer.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shutil
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import items as item_source  # benchmarks/items.py
import outputs  # benchmarks/outputs.py
import run  # benchmarks/run.py

from jsonl_session import JSONLSession

BOUNDS = {"durable": 1.10, "nofsync": 1.10}
FLOOR_SIZES = {"add_1": 1, "add_100": 100}
STORES = {
    "durable": (True, False),
    "durable+times": (True, True),
    "nofsync": (False, False),
    "nofsync+times": (False, True),
}


class TimedStore(run.JSONLStore):
    """A session with or without timestamps (rolled back as ``run.JSONLStore`` is: its items only)."""

    def __init__(self, name: str, directory: Path, *, durable: bool, timestamps: bool) -> None:
        self.name = name
        self.session = JSONLSession(name, directory, durable=durable, timestamps=timestamps)
        self._bulk = JSONLSession(name, directory, durable=False, timestamps=timestamps)


async def measure(directory: Path, sizes: list[int], scale: float, log: Any) -> dict[str, Any]:
    pool = run.Pool()
    stores_by_size: dict[int, list[run.Store]] = {}
    latency: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    try:
        for size in sizes:
            folder = directory / str(size)
            folder.mkdir(parents=True, exist_ok=True)
            stores = stores_by_size[size] = [
                TimedStore(name, folder, durable=durable, timestamps=stamps)
                for name, (durable, stamps) in STORES.items()
            ]
            source = item_source.conversation(seed=0)
            batch = [next(source) for _ in range(size)]
            for store in stores:
                await store.grow(batch)
        os.sync()
        log(f"built {len(STORES)} stores x {len(sizes)} sizes")
        for group, base in ((run.add_one_then_pop, 2000), (run.add_hundred, 300)):
            count = max(5, int(base * scale))
            started = time.monotonic()
            for size, stores in stores_by_size.items():
                for kind in BOUNDS:  # a durable pair, then a pair without fsync
                    pair = [store for store in stores if store.name.split("+")[0] == kind]
                    # One pair at a time: a store run just after a durable one's ``fdatasync``
                    # pays for starting the journal's next transaction.
                    samples = await run.interleaved({size: pair}, group, pool, {size: count})
                    for (op, _, name), values in samples.items():
                        latency.setdefault(op, {}).setdefault(name, {})[str(size)] = run.summarise(values)
            log(f"{group.__name__} x{count} in {time.monotonic() - started:.1f}s")
        run.check_sizes(stores_by_size)
    finally:
        for stores in stores_by_size.values():
            for store in stores:
                store.close()
    return latency


def raw_floor(directory: Path, count: int) -> dict[str, dict[str, float]]:
    """The same bounds on the raw floor: a plain ``os`` append, with and without its record.

    Per add: ``flock``, ``os.write`` of the lines (already serialised), ``fdatasync`` when
    durable, ``funlock``; with timestamps, also the clock, the CRC-32 of the call's last line
    (and of its first, for several) and a second ``os.write`` of a record already formatted
    (the least any record per call costs: the same work as ours, without its checks). The four
    variants take turns in a random order per repetition, as the sessions do; the session file is
    truncated back, untimed, and the sidecar grows. If this floor's ratio misses a bound, the
    bound is set by the extra system call, not by our code.
    """
    import fcntl
    import zlib

    import orjson

    directory.mkdir(parents=True, exist_ok=True)
    source = item_source.conversation(seed=1)
    found: dict[str, dict[str, float]] = {}
    for op, n in FLOOR_SIZES.items():
        lines = [orjson.dumps(next(source)) for _ in range(n)]
        payload = b"".join(line + b"\n" for line in lines)
        records = (
            b"%013d %08x\n" % (0, zlib.crc32(lines[-1])) if n == 1 else b"%013d %08x %08x %d\n" % (0, 0, 0, n)
        )
        ends = lines[-1:] if n == 1 else [lines[-1], lines[0]]
        samples: dict[str, list[int]] = {}
        variants = [(durable, stamped) for durable in (True, False) for stamped in (False, True)]
        fds = {
            v: os.open(directory / f"{op}-{v[0]}-{v[1]}.jsonl", os.O_RDWR | os.O_CREAT | os.O_APPEND)
            for v in variants
        }
        sidecars = {
            v: os.open(directory / f"{op}-{v[0]}-{v[1]}.times", os.O_RDWR | os.O_CREAT | os.O_APPEND)
            for v in variants
        }
        order = outputs.random_order("timestamps: the raw floor")
        clock, crc, perf = time.time_ns, zlib.crc32, time.perf_counter_ns
        for rep in range(count + max(2, count // 20)):
            for durable, stamped in order(variants):
                fd, side = fds[(durable, stamped)], sidecars[(durable, stamped)]
                start = perf()
                fcntl.flock(fd, fcntl.LOCK_EX)
                os.write(fd, payload)
                if durable:
                    os.fdatasync(fd)
                if stamped:
                    clock()
                    list(map(crc, ends))
                    os.write(side, records)
                fcntl.flock(fd, fcntl.LOCK_UN)
                elapsed = perf() - start
                os.ftruncate(fd, 0)
                if rep >= max(2, count // 20):
                    name = ("durable" if durable else "nofsync") + ("+times" if stamped else "")
                    samples.setdefault(name, []).append(elapsed)
        for fd in (*fds.values(), *sidecars.values()):
            os.close(fd)
        found[op] = {name: run.summarise(values)["median_us"] for name, values in samples.items()}
    return found


def targets(latency: dict[str, Any], sizes: list[int]) -> list[dict[str, Any]]:
    """For each add and size: the median with timestamps over the median without, against its bound."""
    found = []
    for op in ("add_1", "add_100"):
        for base, bound in BOUNDS.items():
            for size in sizes:
                with_times = latency[op][f"{base}+times"][str(size)]["median_us"]
                without = latency[op][base][str(size)]["median_us"]
                ratio = with_times / without
                found.append(
                    {
                        "op": op,
                        "store": base,
                        "size": size,
                        "without_us": round(without, 2),
                        "with_us": round(with_times, 2),
                        "ratio": round(ratio, 4),
                        "bound": bound,
                        "met": ratio <= bound,
                    }
                )
    return found


def markdown(results: dict[str, Any]) -> str:
    meta = results["meta"]
    out = [
        (
            f"Measured {meta['date']} on {meta['machine']} (Python {meta['python']}, core at "
            f"{meta['commit']}); load average {meta['load_before']} before, {meta['load_after']} after."
        ),
        "",
        "| operation | store | items | without | with timestamps | ratio | bound | met |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for t in results["targets"]:
        store = "durable" if t["store"] == "durable" else "durable=False"
        out.append(
            f"| {run.OPS[t['op']]} | {store} | {t['size']:,} | {run.fmt_us(t['without_us'])} | "
            f"{run.fmt_us(t['with_us'])} | {t['ratio']:.3f}x | ≤ {t['bound']:.2f}x | "
            f"{'yes' if t['met'] else '**no**'} |"
        )
    floor = results.get("raw_floor")
    if floor:
        out += [
            "",
            (
                "The raw floor in the same run (a plain `os` append; with timestamps, the record's "
                "CRCs and one more `write`):"
            ),
            "",
        ]
        for op, medians in floor.items():
            for base, bound in BOUNDS.items():
                ratio = medians[f"{base}+times"] / medians[base]
                out.append(
                    f"- {run.OPS[op]}, {'durable' if base == 'durable' else 'durable=False'}: "
                    f"{run.fmt_us(medians[base])} without, {run.fmt_us(medians[base + '+times'])} with: "
                    f"{ratio:.3f}x ({'within' if ratio <= bound else '**over**'} the {bound:.2f}x bound)"
                )
    pops = results["latency"].get("pop", {})
    if pops:
        out += [
            "",
            "`pop_item()` (no bound; it also blanks the item's record, or cuts it off the sidecar):",
            "",
        ]
        for base in BOUNDS:
            for size, stats in pops.get(f"{base}+times", {}).items():
                without = pops[base][size]["median_us"]
                out.append(
                    f"- {base}, {int(size):,} items: {run.fmt_us(without)} without, "
                    f"{run.fmt_us(stats['median_us'])} with ({stats['median_us'] / without:.3f}x)"
                )
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every repetition count")
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[1_000, 100_000])
    parser.add_argument("--scratch", type=Path, default=HERE / "output")
    outputs.add_options(parser, quick="smoke test: few repetitions")
    args = parser.parse_args(argv)
    scale = args.scale * (0.05 if args.quick else 1.0)
    began = time.monotonic()

    def log(message: str) -> None:
        print(f"[{time.monotonic() - began:6.1f}s] {message}", file=sys.stderr, flush=True)

    meta: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
        "python": platform.python_version(),
        "commit": run.metadata([])["commit"],
        "load_before": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    scratch = args.scratch / f"timestamps-{os.getpid()}"
    try:
        latency = asyncio.run(measure(scratch, args.sizes, scale, log))
        floor = raw_floor(scratch / "floor", max(5, int(2000 * scale)))
        log("raw floor measured")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    meta["load_after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    found = targets(latency, args.sizes)
    results = {"meta": meta, "latency": latency, "targets": found, "raw_floor": floor}
    outputs.write_json(args, "timestamps.json", results, indent=1, ensure_ascii=False)
    print(markdown(results))
    return 0 if all(t["met"] for t in found) else 1


if __name__ == "__main__":
    raise SystemExit(main())
