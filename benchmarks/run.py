"""JSONLSession against the Agents SDK's SQLiteSession and a raw-append floor, in one run.

Usage (from the repository root, in a fresh venv):

    .venv/bin/pip install -e '.[bench]' && .venv/bin/python benchmarks/run.py --update-results

writes ``benchmarks/results/results.json`` (every number), ``results.md`` (the tables the
docs/benchmarks.md shows) and ``latency.png``; without ``--update-results`` (or with ``--out DIR``) they go
to ``benchmarks/output/`` instead, and the committed results are left alone. Scratch
sessions go to ``benchmarks/output/`` (ignored by git) and are deleted at the end.

How it measures, so the ratios mean something on a shared 2-core machine:

* every operation goes through the async API the SDK calls (``await session.add_items``),
  all stores in one event loop, timed with ``perf_counter_ns`` around the ``await``;
* stores are *interleaved*: each repetition runs the operation once on every store (in a
  random order, so no store always follows the same one) before the next repetition, so a
  burst of noise hits all of them.
  Ratios are ratios of medians from the same repetitions;
* each measured write is undone (untimed) before the next one, so a session stays at
  the size it is reported at: ``add_items([1 item])`` is followed by a timed
  ``pop_item()`` that removes it again; 100-item adds and chat turns are rolled back by
  truncating the file (or deleting the rows);
* sessions grow 1,000 -> 10,000 -> 100,000 items between rounds, in large unmeasured
  batches.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import gc
import json
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
import zlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

import items as item_source  # benchmarks/items.py
import outputs  # benchmarks/outputs.py

from jsonl_session import JSONLSession

SIZES = (1_000, 10_000, 100_000)
STORES = {
    "jsonl": "JSONLSession",
    "jsonl-nofsync": "JSONLSession durable=False",
    "sqlite-file": "SQLiteSession (file)",
    "sqlite-memory": "SQLiteSession (:memory:)",
    "raw-fsync": "floor: orjson + write + fdatasync",
    "raw-fsync-thread": "floor: orjson + write, fdatasync in a thread",
    "raw": "floor: orjson + write",
    "raw-stamp": "floor: flock + orjson + write + a .times record",
    "raw-yield": "floor: orjson + write, after one yield to the loop",
    "raw-guarded": "floor: one yield, flock + stat + orjson + write + a .times record",
}
OPS = {
    "add_1": "add_items (1 item)",
    "add_100": "add_items (100 items)",
    "get_20": "get_items(limit=20)",
    "get_all": "get_items() (all)",
    "pop": "pop_item()",
    "turn": "chat turn: get_items() + add_items(2)",
}
# Ratios the tables show (numerator store, denominator store); all pairs are in the JSON.
KEY_PAIRS = [
    ("jsonl", "sqlite-file"),
    ("jsonl-nofsync", "sqlite-memory"),
    ("jsonl", "raw-fsync"),
    ("jsonl", "raw-fsync-thread"),
    ("jsonl-nofsync", "raw"),
    ("jsonl-nofsync", "raw-stamp"),
    ("jsonl-nofsync", "raw-yield"),
    ("raw-yield", "raw"),
    ("jsonl-nofsync", "raw-guarded"),
    ("raw-guarded", "raw"),
]
GIB = 1 << 30
_RECORD_BYTES = len(b"%013d %08x\n" % (0, 0))  # one item's .times record


# -- the stores, behind one small interface -----------------------------------------------


class Store:
    """One session under test: its async API, plus untimed helpers to grow and roll back."""

    name: str
    session: Any
    only: frozenset[str] | None = None
    """The operation groups it is timed in (None: all of them)."""

    async def grow(self, batch: list[dict[str, Any]]) -> None:
        raise NotImplementedError

    def mark(self) -> int:
        """A token for the current state (file size, or newest row id)."""
        raise NotImplementedError

    def restore(self, mark: int) -> None:
        """Undo every write since ``mark``."""
        raise NotImplementedError

    def count(self) -> int:
        raise NotImplementedError

    def close(self) -> None:
        pass


class JSONLStore(Store):
    def __init__(self, name: str, directory: Path, *, durable: bool) -> None:
        self.name = name
        self.session = JSONLSession(name, directory, durable=durable)
        self._bulk = JSONLSession(name, directory, durable=False)

    async def grow(self, batch: list[dict[str, Any]]) -> None:
        self._bulk.add_items_sync(batch)

    def mark(self) -> int:
        return int(self.session.path.stat().st_size)

    def restore(self, mark: int) -> None:
        os.truncate(self.session.path, mark)

    def count(self) -> int:
        with open(self.session.path, "rb") as file:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: file.read(1 << 20), b""))

    def close(self) -> None:
        self.session.close()
        self._bulk.close()


class SQLiteStore(Store):
    def __init__(self, name: str, db_path: str) -> None:
        from agents.memory import SQLiteSession

        self.name = name
        self.session = SQLiteSession(name, db_path)

    async def grow(self, batch: list[dict[str, Any]]) -> None:
        await self.session.add_items(batch)

    def _query(self, sql: str, *args: Any) -> Any:
        with self.session._locked_connection() as conn:  # untimed bookkeeping only
            row = conn.execute(sql, args).fetchone()
            conn.commit()
            return row

    def mark(self) -> int:
        return int(self._query("SELECT coalesce(max(id), 0) FROM agent_messages")[0])

    def restore(self, mark: int) -> None:
        self._query("DELETE FROM agent_messages WHERE id > ?", mark)

    def count(self) -> int:
        return int(self._query("SELECT count(*) FROM agent_messages")[0])

    def close(self) -> None:
        self.session.close()


class RawFloor:
    """The least any JSONL store can do: no lock, no validation, no torn-tail handling.

    With ``in_thread``, the floor of an async store that never waits for the disk: the same work,
    but every ``fdatasync`` and every full read in a worker thread (the event loop never
    waits for the disk), as ``JSONLSession`` does. With ``yield_first``, each call first lets
    the other tasks run once, as every async call of ``JSONLSession`` does: what that alone costs.
    With ``stamped``, an add and a pop do what every session now does by default besides the
    append: ``flock`` the file, and write (or, popping, cut) a record in the
    ``.times`` sidecar, its clock and CRC-32 made as ``item_times`` makes them. Nothing else
    is added. With ``guarded`` too (and ``yield_first``), every system call a one-item add of a
    ``durable=False`` session makes: the yield's, the lock, the ``stat`` of the path that notices
    a replaced file, the write, the record and the unlock, with none of its checks.
    """

    def __init__(
        self,
        path: Path,
        *,
        durable: bool,
        in_thread: bool = False,
        yield_first: bool = False,
        stamped: bool = False,
        guarded: bool = False,
    ) -> None:
        self.path = path
        self.guarded = guarded
        self.durable = durable
        self.in_thread = in_thread
        self.yield_first = yield_first
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
        self.fd = os.open(path, flags, 0o600)
        self.times_fd = os.open(f"{path}.times", flags, 0o600) if stamped else -1

    async def add_items(self, items: list[dict[str, Any]]) -> None:
        if self.yield_first:
            await asyncio.sleep(0)
        if len(items) == 1:
            payload = orjson.dumps(items[0], option=orjson.OPT_APPEND_NEWLINE)
        else:
            payload = b"".join([orjson.dumps(item, option=orjson.OPT_APPEND_NEWLINE) for item in items])
        if self.times_fd >= 0:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if self.guarded:
                os.stat(self.path, follow_symlinks=False)
            os.write(self.fd, payload)
            ms = time.time_ns() // 1_000_000
            if len(items) == 1:
                record = b"%013d %08x\n" % (ms, zlib.crc32(payload[:-1]))
            else:
                lines = payload.split(b"\n")
                record = b"%013d %08x %08x %d\n" % (
                    ms,
                    zlib.crc32(lines[-2]),
                    zlib.crc32(lines[0]),
                    len(items),
                )
            os.write(self.times_fd, record)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            return
        os.write(self.fd, payload)
        if self.durable:
            await self._run(os.fdatasync, self.fd)

    async def _run(self, function: Callable[..., Any], *args: Any) -> Any:
        if not self.in_thread:
            return function(*args)
        return await asyncio.get_running_loop().run_in_executor(None, function, *args)

    async def get_items(self, limit: int | None = None) -> list[Any]:
        if self.yield_first:
            await asyncio.sleep(0)
        if limit is None:
            return await self._run(self._read_sync, limit)  # type: ignore[no-any-return]
        return self._read_sync(limit)

    async def pop_item(self) -> Any:
        if self.yield_first:
            await asyncio.sleep(0)
        if self.times_fd >= 0:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            item = self._pop_sync()
            size = os.fstat(self.times_fd).st_size
            os.ftruncate(self.times_fd, max(0, size - _RECORD_BYTES))  # the item's record
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            return item
        return await self._run(self._pop_sync)

    def _read_sync(self, limit: int | None) -> list[Any]:
        size = os.fstat(self.fd).st_size
        if limit is None:
            lines = os.pread(self.fd, size, 0).split(b"\n")
        else:
            chunk = 16 * 1024
            while True:
                start = max(0, size - chunk)
                lines = os.pread(self.fd, size - start, start).split(b"\n")
                if start == 0 or len(lines) > limit + 1:
                    break
                chunk *= 2
            lines = lines[-limit - 1 :]
        lines.pop()
        gc.disable()
        try:
            return [orjson.loads(line) for line in lines]
        finally:
            gc.enable()

    def _pop_sync(self) -> Any:
        size = os.fstat(self.fd).st_size
        block = os.pread(self.fd, min(size, 16 * 1024), max(0, size - 16 * 1024))
        start = block.rfind(b"\n", 0, len(block) - 1) + 1
        item = orjson.loads(block[start:-1])
        os.ftruncate(self.fd, size - len(block) + start)
        if self.durable:
            os.fdatasync(self.fd)
        return item

    def close(self) -> None:
        os.close(self.fd)
        if self.times_fd >= 0:
            os.close(self.times_fd)


class RawStore(JSONLStore):
    def __init__(
        self,
        name: str,
        directory: Path,
        *,
        durable: bool,
        in_thread: bool = False,
        yield_first: bool = False,
        stamped: bool = False,
        guarded: bool = False,
    ) -> None:
        super().__init__(name, directory, durable=False)
        self.session.close()
        directory.mkdir(parents=True, exist_ok=True)
        self.session = RawFloor(
            directory / f"{name}.jsonl",
            durable=durable,
            in_thread=in_thread,
            yield_first=yield_first,
            stamped=stamped,
            guarded=guarded,
        )
        if stamped:  # a floor for the one-item add; its reads would be the raw floor's again
            self.only = frozenset({"add_one_then_pop"})


def open_stores(directory: Path, names: list[str]) -> list[Store]:
    directory.mkdir(parents=True, exist_ok=True)
    makers: dict[str, Callable[[], Store]] = {
        "jsonl": lambda: JSONLStore("jsonl", directory, durable=True),
        "jsonl-nofsync": lambda: JSONLStore("jsonl-nofsync", directory, durable=False),
        "sqlite-file": lambda: SQLiteStore("sqlite-file", str(directory / "sqlite-file.db")),
        "sqlite-memory": lambda: SQLiteStore("sqlite-memory", ":memory:"),
        "raw-fsync": lambda: RawStore("raw-fsync", directory, durable=True),
        "raw-fsync-thread": lambda: RawStore("raw-fsync-thread", directory, durable=True, in_thread=True),
        "raw": lambda: RawStore("raw", directory, durable=False),
        "raw-stamp": lambda: RawStore("raw-stamp", directory, durable=False, stamped=True),
        "raw-yield": lambda: RawStore("raw-yield", directory, durable=False, yield_first=True),
        "raw-guarded": lambda: RawStore(
            "raw-guarded", directory, durable=False, yield_first=True, stamped=True, guarded=True
        ),
    }
    return [makers[name]() for name in names]


# -- timing --------------------------------------------------------------------------------


class Pool:
    """Fresh items to add, the same sequence for every store."""

    def __init__(self, count: int = 4000) -> None:
        self.items = item_source.sample(count, seed=1)

    def take(self, rep: int, n: int) -> list[dict[str, Any]]:
        start = (rep * n) % (len(self.items) - n)
        return self.items[start : start + n]


Timings = dict[str, int]
Group = Callable[[Store, Pool, int], Awaitable[Timings]]


async def _timed(awaitable: Awaitable[Any]) -> int:
    start = time.perf_counter_ns()
    await awaitable
    return time.perf_counter_ns() - start


async def add_one_then_pop(store: Store, pool: Pool, rep: int) -> Timings:
    add = await _timed(store.session.add_items(pool.take(rep, 1)))
    pop = await _timed(store.session.pop_item())
    return {"add_1": add, "pop": pop}


async def add_hundred(store: Store, pool: Pool, rep: int) -> Timings:
    mark = store.mark()
    elapsed = await _timed(store.session.add_items(pool.take(rep, 100)))
    store.restore(mark)
    return {"add_100": elapsed}


async def get_twenty(store: Store, pool: Pool, rep: int) -> Timings:
    return {"get_20": await _timed(store.session.get_items(limit=20))}


async def get_everything(store: Store, pool: Pool, rep: int) -> Timings:
    start = time.perf_counter_ns()
    result = await store.session.get_items()
    elapsed = time.perf_counter_ns() - start
    del result  # freeing 100,000 dicts is not part of reading them
    return {"get_all": elapsed}


async def chat_turn(store: Store, pool: Pool, rep: int) -> Timings:
    mark = store.mark()
    start = time.perf_counter_ns()
    history = await store.session.get_items()
    await store.session.add_items(pool.take(rep, 2))
    elapsed = time.perf_counter_ns() - start
    del history
    store.restore(mark)
    return {"turn": elapsed}


def repetitions(group: Group, size: int, scale: float) -> int:
    """Enough samples for a stable median and p99, within the 10-minute budget."""
    if group in (get_everything, chat_turn):
        base = {1_000: 200, 10_000: 40}.get(size, 15)
    elif group is add_hundred:
        base = 200
    else:
        base = 1000
    return max(5, int(base * scale))


async def interleaved(
    stores_by_size: dict[int, list[Store]], group: Group, pool: Pool, reps: dict[int, int]
) -> dict[tuple[str, int, str], list[int]]:
    """Run ``group`` once per store and size per repetition, in a new ``outputs.random_order``
    each time (a rotation moved single-item ratios by up to 40 %: docs/benchmarks.md, "Method").

    Sizes are interleaved too, so "at 100,000 items within 1.5x of its own time at 1,000"
    compares measurements taken under the same machine conditions.
    """
    samples: dict[tuple[str, int, str], list[int]] = {}
    warmups = {size: max(2, count // 20) for size, count in reps.items()}
    order = outputs.random_order(group.__name__)
    for rep in range(max(warmups[size] + reps[size] for size in reps)):
        runs = order(
            (size, store)
            for size, stores in stores_by_size.items()
            if rep < warmups[size] + reps[size]
            for store in stores
            if store.only is None or group.__name__ in store.only
        )
        for size, store in runs:
            timings = await group(store, pool, rep)
            if rep >= warmups[size]:
                for op, elapsed in timings.items():
                    samples.setdefault((op, size, store.name), []).append(elapsed)
    return samples


def summarise(values: list[int]) -> dict[str, float]:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, max(0, -(-99 * len(ordered) // 100) - 1))]
    return {
        "median_us": statistics.median(ordered) / 1000,
        "p99_us": p99 / 1000,
        "n": len(ordered),
    }


async def latency_rounds(
    directory: Path, sizes: list[int], names: list[str], scale: float, log: Any
) -> dict[str, Any]:
    """Build one session per store and size, then time every operation group, interleaved."""
    pool = Pool()
    latency: dict[str, dict[str, dict[str, dict[str, float]]]] = {op: {} for op in OPS}
    stores_by_size: dict[int, list[Store]] = {}
    try:
        for size in sizes:
            stores = stores_by_size[size] = open_stores(directory / str(size), names)
            source = item_source.conversation(seed=0)
            for start in range(0, size, 20_000):
                batch = [next(source) for _ in range(min(20_000, size - start))]
                for store in stores:
                    await store.grow(batch)
        # The bulk writes skipped fsync: flush them now, or the kernel's writeback of
        # ~200 MB would land in the middle of the durable stores' measurements.
        os.sync()
        check_sizes(stores_by_size)
        log(f"built {len(names)} stores x {len(sizes)} sizes")
        for group in (add_one_then_pop, get_twenty, add_hundred, get_everything, chat_turn):
            reps = {size: repetitions(group, size, scale) for size in sizes}
            started = time.monotonic()
            samples = await interleaved(stores_by_size, group, pool, reps)
            for (op, size, name), values in samples.items():
                latency[op].setdefault(name, {})[str(size)] = summarise(values)
            log(f"{group.__name__} x{list(reps.values())} in {time.monotonic() - started:.1f}s")
        check_sizes(stores_by_size)  # every timed write was undone
    finally:
        for stores in stores_by_size.values():
            for store in stores:
                store.close()
    return latency


def check_sizes(stores_by_size: dict[int, list[Store]]) -> None:
    for size, stores in stores_by_size.items():
        for store in stores:
            if store.count() != size:
                raise RuntimeError(f"{store.name} has {store.count()} items, expected {size}")


def ratios(latency: dict[str, Any]) -> dict[str, dict[str, dict[str, float]]]:
    """median(a) / median(b) for every pair of stores, per operation and size."""
    result: dict[str, dict[str, dict[str, float]]] = {}
    for op, by_store in latency.items():
        for a, by_size in by_store.items():
            for b, other in by_store.items():
                if a == b:
                    continue
                for size, stats in by_size.items():
                    if size in other:
                        ratio = stats["median_us"] / other[size]["median_us"]
                        result.setdefault(op, {}).setdefault(size, {})[f"{a}/{b}"] = round(ratio, 4)
    return result


# -- disk size, memory on a 1 GiB session, live tail ----------------------------------------


async def disk_per_10k(directory: Path) -> dict[str, int]:
    """Bytes on disk for 10,000 items, added 100 at a time, after the store is closed."""
    from agents.memory import SQLiteSession

    batch_items = item_source.sample(10_000, seed=2)
    jsonl = JSONLSession("disk", directory / "disk", durable=False)
    sqlite_path = directory / "disk" / "disk.db"
    sqlite_path.parent.mkdir(parents=True, exist_ok=True)
    sqlite: Any = SQLiteSession("disk", sqlite_path)  # its items are typed; ours are plain dicts
    for start in range(0, len(batch_items), 100):
        await jsonl.add_items(batch_items[start : start + 100])
        await sqlite.add_items(batch_items[start : start + 100])
    jsonl.close()
    sqlite.close()
    sqlite_bytes = sum(path.stat().st_size for path in sqlite_path.parent.glob("disk.db*"))
    result = {"jsonl": jsonl.path.stat().st_size, "sqlite-file": sqlite_bytes}
    shutil.rmtree(directory / "disk")
    return result


def write_big_session(path: Path, size: int) -> int:
    """Write ~``size`` bytes of realistic lines fast: one 1,000-item block, repeated."""
    block = b"".join(orjson.dumps(item) + b"\n" for item in item_source.sample(1000, seed=3))
    chunk = block * max(1, (64 << 20) // len(block))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        written = 0
        while written < size:
            written += os.write(fd, chunk)
    finally:
        os.close(fd)
    return written


PROBE = """
import asyncio, json, resource, sys, tracemalloc
sys.path.insert(0, {root!r})
from jsonl_session import JSONLSession
mode = {mode!r}
session = JSONLSession("big", {directory!r})
async def main():
    if mode != "baseline":
        items = await session.get_items(limit=20)
        assert len(items) == 20, len(items)
if mode == "traced":
    tracemalloc.start()
asyncio.run(main())
traced = tracemalloc.get_traced_memory()[1] if mode == "traced" else None
# VmHWM is this process image's own peak; ru_maxrss would include the parent's RSS at fork.
with open("/proc/self/status") as status:
    hwm = [int(line.split()[1]) for line in status if line.startswith("VmHWM:")]
peak = hwm[0] if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"maxrss_kib": peak, "traced_peak": traced}}))
"""


def probe(directory: Path, mode: str) -> dict[str, Any]:
    code = PROBE.format(root=str(ROOT), directory=str(directory), mode=mode)
    output = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return dict(json.loads(output))


def memory_on_big_session(directory: Path, log: Any) -> dict[str, Any]:
    """Extra peak memory of get_items(limit=20) on a 1 GiB session, in fresh processes."""
    free = shutil.disk_usage(directory.parent if not directory.exists() else directory).free
    if free < 3 * GIB:
        return {"skipped": f"only {free / GIB:.1f} GiB free on disk"}
    big_dir = directory / "big"
    path = big_dir / "big.jsonl"
    try:
        started = time.monotonic()
        size = write_big_session(path, GIB)
        log(f"wrote a {size / GIB:.2f} GiB session in {time.monotonic() - started:.1f}s")
        baseline = [probe(big_dir, "baseline")["maxrss_kib"] for _ in range(3)]
        reading = [probe(big_dir, "read")["maxrss_kib"] for _ in range(3)]
        traced = probe(big_dir, "traced")["traced_peak"]
    finally:
        shutil.rmtree(big_dir, ignore_errors=True)
    extra = (statistics.median(reading) - statistics.median(baseline)) * 1024
    return {
        "file_bytes": size,
        "baseline_maxrss_bytes": statistics.median(baseline) * 1024,
        "read_maxrss_bytes": statistics.median(reading) * 1024,
        "extra_peak_rss_bytes": extra,
        "tracemalloc_peak_bytes": traced,
    }


def live_tail(samples: int) -> dict[str, Any]:
    """Run ``benchmarks/tail_latency.py``'s ``measure()`` (the live-tail feature's own benchmark)."""
    script = HERE / "tail_latency.py"
    if not script.exists():
        return {"missing": "benchmarks/tail_latency.py does not exist yet"}
    # Imported by name with benchmarks/ on sys.path, in a process of its own, so the watcher
    # processes it spawns can import it too and its event loops never meet ours.
    code = (
        "import json, sys\n"
        f"sys.path[:0] = [{str(HERE)!r}, {str(ROOT)!r}]\n"
        "import tail_latency\n"
        f"print(json.dumps(tail_latency.measure(samples={samples})))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=False
    )
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["no output"]
        return {"error": lines[-1]}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def tail_percentile(tail: dict[str, Any], name: str, phase: str = "active") -> float | None:
    """The worse of the sync and async watchers' ``name`` (p50/p99) in ms, or None."""
    values = [tail[mode][phase][f"{name}_ms"] for mode in ("sync", "async") if phase in tail.get(mode, {})]
    return max(values) if values else None


# -- targets and report -------------------------------------------------------------------


def median(latency: dict[str, Any], op: str, store: str, size: int) -> float:
    return float(latency[op][store][str(size)]["median_us"])


def check_targets(results: dict[str, Any], sizes: list[int]) -> list[dict[str, Any]]:
    """The issue's targets, each with what the raw floor scores on the same ratio.

    The floor column shows how much of a ratio is set by the file system (an ``fdatasync``
    after a write or truncate) rather than by the library.
    """
    lat = results["latency"]
    small, big = sizes[0], sizes[-1]
    targets: list[dict[str, Any]] = []

    def target(
        name: str,
        value: float | None,
        limit: float,
        floor: float | None = None,
        unit: str = "x",
        floor_in_thread: float | None = None,
    ) -> None:
        met = None if value is None else value <= limit
        targets.append(
            {
                "target": name,
                "value": value,
                "limit": limit,
                "unit": unit,
                "floor": floor,
                "floor_in_thread": floor_in_thread,
                "met": met,
            }
        )

    def worst(op: str, a: str, b: str) -> float:
        return max(median(lat, op, a, s) / median(lat, op, b, s) for s in sizes)

    def at(op: str, a: str, b: str, size: int = big) -> float:
        return median(lat, op, a, size) / median(lat, op, b, size)

    def growth(op: str, store: str) -> float:
        return median(lat, op, store, big) / median(lat, op, store, small)

    target(
        "add_items 1 item, durable: JSONL / SQLite file (worst size)",
        worst("add_1", "jsonl", "sqlite-file"),
        0.5,
        worst("add_1", "raw-fsync", "sqlite-file"),
        floor_in_thread=worst("add_1", "raw-fsync-thread", "sqlite-file"),
    )
    target(  # 5x, not 4x: every async call yields once, which the raw floor does not
        "add_items 1 item, fsync off: JSONL / raw floor (worst size; floor column: the floor that makes "
        "the same system calls, one yield, flock, stat, write, record, unlock)",
        worst("add_1", "jsonl-nofsync", "raw"),
        5.0,
        worst("add_1", "raw-guarded", "raw") if "raw-guarded" in lat["add_1"] else None,
    )
    if "raw-stamp" in lat["add_1"]:
        target(  # the floor above pays for no lock and no record, which every session now writes
            "add_items 1 item, fsync off: JSONL / the floor that also locks and writes a .times record "
            "(worst size; floor column: that floor / the raw floor)",
            worst("add_1", "jsonl-nofsync", "raw-stamp"),
            5.0,
            worst("add_1", "raw-stamp", "raw"),
        )
    target(
        f"get_items(limit=20) at {big:,}: JSONL / itself at {small:,}",
        growth("get_20", "jsonl"),
        1.5,
        growth("get_20", "raw"),
    )
    target(
        f"get_items(limit=20) at {big:,}: JSONL / SQLite file",
        at("get_20", "jsonl", "sqlite-file"),
        0.5,
        at("get_20", "raw", "sqlite-file"),
    )
    target(
        f"get_items() at {big:,}: JSONL / SQLite file",
        at("get_all", "jsonl", "sqlite-file"),
        1 / 3,
        at("get_all", "raw", "sqlite-file"),
        floor_in_thread=at("get_all", "raw-fsync-thread", "sqlite-file"),
    )
    target(
        f"pop_item at {big:,}: JSONL / itself at {small:,}",
        growth("pop", "jsonl"),
        1.5,
        growth("pop", "raw-fsync"),
        floor_in_thread=growth("pop", "raw-fsync-thread"),
    )
    target(
        f"pop_item at {big:,}: JSONL durable=False / itself at {small:,} (no fdatasync)",
        growth("pop", "jsonl-nofsync"),
        1.5,
        growth("pop", "raw"),
    )
    target(  # what a durable pop adds to the least an async store does (timestamps on)
        "pop_item, durable: JSONL / the floor with fdatasync in a thread (worst size; floor column: "
        "the raw floor, which syncs on the loop)",
        worst("pop", "jsonl", "raw-fsync-thread"),
        1.15,
        worst("pop", "raw-fsync", "raw-fsync-thread"),
    )
    target(
        f"pop_item at {big:,}, durable: JSONL / SQLite file",
        at("pop", "jsonl", "sqlite-file"),
        0.7,
        at("pop", "raw-fsync", "sqlite-file"),
        floor_in_thread=at("pop", "raw-fsync-thread", "sqlite-file"),
    )
    tail = results.get("tail", {})
    target("live tail p50 (worse of watch / watch_sync)", tail_percentile(tail, "p50"), 5.0, unit="ms")
    target("live tail p99 (worse of watch / watch_sync)", tail_percentile(tail, "p99"), 20.0, unit="ms")
    extra = results.get("memory_1gib", {}).get("extra_peak_rss_bytes")
    target(
        "get_items(limit=20) on 1 GiB: extra peak RSS",
        None if extra is None else extra / 1e6,
        20.0,
        unit="MB",
    )
    return targets


def fmt_us(us: float) -> str:
    if us < 1000:
        return f"{us:.1f} µs" if us < 100 else f"{us:.0f} µs"
    if us < 1_000_000:
        return f"{us / 1000:.2f} ms" if us < 10_000 else f"{us / 1000:.0f} ms"
    return f"{us / 1e6:.2f} s"


def markdown(results: dict[str, Any], sizes: list[int]) -> str:
    lat = results["latency"]
    meta = results["meta"]
    out = [
        (
            f"Measured {meta['date']} on {meta['machine']} (Python {meta['python']}, SQLite "
            f"{meta['sqlite']}, openai-agents {meta['agents']}, core at {meta['commit']}); "
            f"load average {meta['load_before']} before, {meta['load_after']} after; "
            f"the whole run took {meta['seconds']:.0f} s."
        ),
        "",
        "Median (p99) per call; ratios are medians of the same interleaved run.",
        "",
    ]
    header = "| operation | store | " + " | ".join(f"{s:,} items" for s in sizes) + " |"
    out += [header, "|---|---|" + "---|" * len(sizes)]
    for op, label in OPS.items():
        for name in results["meta"]["stores"]:
            cells = []
            for size in sizes:
                stats = lat.get(op, {}).get(name, {}).get(str(size))
                cells.append(
                    "–" if stats is None else f"{fmt_us(stats['median_us'])} ({fmt_us(stats['p99_us'])})"
                )
            if any(cell != "–" for cell in cells):
                out.append(f"| {label} | {STORES[name]} | " + " | ".join(cells) + " |")
    out += ["", "Ratios of medians (lower is better for the first store):", ""]
    out += [
        "| operation | ratio | " + " | ".join(f"{s:,}" for s in sizes) + " |",
        "|---|---|" + "---|" * len(sizes),
    ]
    for op, label in OPS.items():
        for a, b in KEY_PAIRS:
            values = [results["ratios"].get(op, {}).get(str(s), {}).get(f"{a}/{b}") for s in sizes]
            if any(v is not None for v in values):
                cells = ["–" if v is None else f"{v:.2f}x" for v in values]
                out.append(f"| {label} | {a} / {b} | " + " | ".join(cells) + " |")
    out += ["", "| extra | result |", "|---|---|"]
    disk = results.get("disk_per_10k", {})
    for name, size in disk.items():
        out.append(f"| disk per 10,000 items, {STORES[name]} | {size / 1e6:.2f} MB |")
    memory = results.get("memory_1gib", {})
    if "extra_peak_rss_bytes" in memory:
        out.append(
            f"| get_items(limit=20) on a {memory['file_bytes'] / GIB:.2f} GiB session | "
            f"peak RSS {memory['read_maxrss_bytes'] / 1e6:.1f} MB "
            f"vs {memory['baseline_maxrss_bytes'] / 1e6:.1f} MB "
            f"for a process that imports and opens it but does not read "
            f"({memory['extra_peak_rss_bytes'] / 1e6:+.2f} MB); tracemalloc peak "
            f"{memory['tracemalloc_peak_bytes'] / 1e3:.0f} kB |"
        )
    else:
        out.append(f"| get_items(limit=20) on 1 GiB | {memory.get('skipped', 'not measured')} |")
    tail = results.get("tail", {})
    if "sync" in tail and "async" in tail:
        for mode in ("sync", "async"):
            for phase, words in (
                ("active", "during a conversation"),
                ("after_idle", "first write after 1.3 s idle"),
            ):
                f = tail[mode][phase]
                out.append(
                    f"| live tail, `watch{'_sync' if mode == 'sync' else ''}()`, {words}: "
                    "durable `add_items` "
                    f"returns in one process → item arrives in another ({f['samples']} samples) | "
                    f"p50 {f['p50_ms']:.2f} ms, p99 {f['p99_ms']:.2f} ms, max {f['max_ms']:.2f} ms |"
                )
    else:
        out.append(f"| live tail | {tail.get('missing') or tail.get('error') or 'not measured'} |")
    out += [
        "",
        (
            "| target | measured | limit | met | the raw floor, same ratio "
            "| the floor with fdatasync in a thread |"
        ),
        "|---|---|---|---|---|---|",
    ]
    for t in results["targets"]:
        unit = "x" if t["unit"] == "x" else f" {t['unit']}"
        value = "–" if t["value"] is None else f"{t['value']:.2f}{unit}"
        floor = "–" if t["floor"] is None else f"{t['floor']:.2f}{unit}"
        in_thread = t.get("floor_in_thread")
        floor_in_thread = "–" if in_thread is None else f"{in_thread:.2f}{unit}"
        met = "not measured" if t["met"] is None else "yes" if t["met"] else "**no**"
        out.append(
            f"| {t['target']} | {value} | ≤ {t['limit']:.2f}{unit} | {met} | {floor} | {floor_in_thread} |"
        )
    return "\n".join(out) + "\n"


def plot(results: dict[str, Any], sizes: list[int], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(13, 7.5), sharex=True)
    styles = {
        "jsonl": ("tab:blue", "o", "-"),
        "jsonl-nofsync": ("tab:blue", "o", "--"),
        "sqlite-file": ("tab:red", "s", "-"),
        "sqlite-memory": ("tab:red", "s", "--"),
        "raw-fsync": ("tab:gray", "^", "-"),
        "raw-fsync-thread": ("tab:gray", "v", ":"),
        "raw": ("tab:gray", "^", "--"),
        "raw-stamp": ("tab:gray", "d", "--"),
        "raw-yield": ("tab:gray", "x", "-."),
        "raw-guarded": ("tab:gray", "+", ":"),
    }
    for axis, (op, label) in zip(axes.flat, OPS.items()):
        for name in results["meta"]["stores"]:
            by_size = results["latency"].get(op, {}).get(name, {})
            xs = [s for s in sizes if str(s) in by_size]
            if not xs:
                continue
            color, marker, line = styles[name]
            axis.plot(
                xs,
                [by_size[str(s)]["median_us"] for s in xs],
                color=color,
                marker=marker,
                linestyle=line,
                label=STORES[name],
            )
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_title(label, fontsize=10)
        axis.grid(True, which="both", alpha=0.3)
        axis.set_xticks(sizes)
        axis.set_xticklabels([f"{s:,}" for s in sizes])
    for axis in axes[:, 0]:
        axis.set_ylabel("median latency (µs)")
    for axis in axes[1]:
        axis.set_xlabel("items in the session")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=9)
    fig.suptitle(f"Latency per call against session size ({results['meta']['date']})", fontsize=11)
    fig.tight_layout(rect=(0, 0.08, 1, 0.96))
    fig.savefig(path, dpi=100)
    plt.close(fig)


def metadata(names: list[str]) -> dict[str, Any]:
    from importlib.metadata import version

    try:
        commit = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "jsonl_session"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        commit += "+modified" if dirty else ""
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "agents": version("openai-agents"),
        "orjson": version("orjson"),
        "commit": commit,
        "stores": names,
        "load_before": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scale", type=float, default=1.0, help="multiply every repetition count (default 1)"
    )
    parser.add_argument(
        "--sizes",
        type=lambda s: [int(x) for x in s.split(",")],
        default=None,
        help="comma-separated session sizes (default 1000,10000,100000)",
    )
    parser.add_argument(
        "--scratch",
        type=Path,
        default=HERE / "output",
        help="where sessions are built (default benchmarks/output/)",
    )
    outputs.add_options(parser, quick="smoke test: sizes 1,000 and 10,000, few repetitions")
    parser.add_argument("--no-memory", action="store_true", help="skip the 1 GiB memory measurement")
    parser.add_argument("--tail-samples", type=int, default=300, help="live-tail samples (0 skips it)")
    args = parser.parse_args(argv)
    sizes = args.sizes or ([1_000, 10_000] if args.quick else list(SIZES))
    scale = args.scale * (0.1 if args.quick else 1.0)
    names = list(STORES)
    began = time.monotonic()

    def log(message: str) -> None:
        print(f"[{time.monotonic() - began:6.1f}s] {message}", file=sys.stderr, flush=True)

    scratch = args.scratch / f"run-{os.getpid()}"
    scratch.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"meta": metadata(names)}
    try:
        results["disk_per_10k"] = asyncio.run(disk_per_10k(scratch))
        log("disk size per 10,000 items measured")
        results["latency"] = asyncio.run(latency_rounds(scratch / "latency", sizes, names, scale, log))
        results["ratios"] = ratios(results["latency"])
        results["memory_1gib"] = (
            {"skipped": "--no-memory"} if args.no_memory else memory_on_big_session(scratch, log)
        )
        log("memory on a 1 GiB session measured")
        results["tail"] = live_tail(args.tail_samples) if args.tail_samples else {"missing": "skipped"}
        log("live tail measured")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    results["meta"]["load_after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    results["meta"]["seconds"] = round(time.monotonic() - began, 1)
    results["targets"] = check_targets(results, sizes)
    folder = outputs.write_json(args, "results.json", results, indent=1, ensure_ascii=False).parent
    (folder / "results.md").write_text(markdown(results, sizes), encoding="utf-8")
    plot(results, sizes, folder / "latency.png")
    log(f"wrote {folder}/results.json, results.md and latency.png")
    print(markdown(results, sizes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
