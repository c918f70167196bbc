"""The crash loop: a writer SIGKILLed again and again while a second writer and a reader run.

Shared by ``test_crash_loop.py`` (a fast run in the suite) and ``stress/crash_loop.py``
(long runs). Every item names its writer, batch and index and carries a pad derived from
them, so any line can be checked on its own, and any byte glued or lost shows.

The parent learns what was *acknowledged* from pipes: each writer sends ``("added", ...)``
only after ``add_items`` returned and ``("popped", ...)`` after ``pop_item`` returned. After
every kill it drains those messages, then snapshots the file under a shared ``flock`` and
checks the invariants listed in :meth:`Model.check`.
"""

from __future__ import annotations

import fcntl
import functools
import multiprocessing
import os
import random
import signal
import time
import warnings
import zlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import orjson

from jsonl_session import JSONLSession

Key = tuple[str, int, int]  # (writer, batch, index)
BIG_ITEM = 1024 * 1024
BIG_BATCH = 12  # 12 MiB in one write: large enough that SIGKILL can land in the middle of it

_ctx = multiprocessing.get_context("fork")


_BIG_PAD = "x" * BIG_ITEM  # ASCII: encodes fast, so the kill window is mostly the write


@functools.cache
def pad_for(writer: str, batch: int, index: int) -> str:
    """The deterministic pad of one item; "big" writers' items are a MiB each."""
    if writer.startswith("big"):
        return _BIG_PAD
    return "é" * (zlib.crc32(f"{writer}/{batch}/{index}".encode()) % 150)


def make_batch(writer: str, batch: int, size: int) -> list[dict[str, Any]]:
    return [
        {"w": writer, "b": batch, "i": index, "n": size, "pad": pad_for(writer, batch, index)}
        for index in range(size)
    ]


def key_of(item: Any) -> Key:
    """The key of a well-formed item; raises AssertionError for anything else."""
    assert type(item) is dict and set(item) == {"w", "b", "i", "n", "pad"}, f"foreign item {item!r:.200}"
    key = (item["w"], item["b"], item["i"])
    assert 0 <= item["i"] < item["n"], f"bad index in {key}"
    assert item["pad"] == pad_for(*key), f"damaged pad in {key}"
    return key


def check_sequence(items: Iterable[Any]) -> list[Key]:
    """Items are whole, unique, each writer's in order, and each batch contiguous from index 0."""
    return check_keys([key_of(item) for item in items])


def check_keys(keys: list[Key]) -> list[Key]:
    """:func:`check_sequence` on keys already taken from well-formed items."""
    last_of_writer: dict[str, tuple[int, int]] = {}
    for position, key in enumerate(keys):
        writer, batch, index = key
        if index > 0:
            assert position and keys[position - 1] == (writer, batch, index - 1), (
                f"{key} does not follow its batch"
            )
        previous = last_of_writer.get(writer)
        assert previous is None or (batch, index) > previous, f"{key} out of order after {previous}"
        last_of_writer[writer] = (batch, index)
    return keys


# -- the processes ------------------------------------------------------------------------------


def _session(directory: str, durable: bool) -> JSONLSession:
    warnings.simplefilter("ignore")  # TornTailWarning is expected here; the parent checks the sidecar
    return JSONLSession("crash", directory, durable=durable, lock_timeout=60)


def victim(directory: str, name: str, conn: Connection, seed: int, durable: bool) -> None:
    """Appends small batches and pops now and then until it is killed."""
    session = _session(directory, durable)
    rng = random.Random(seed)
    conn.send(("ready",))
    batch = 0
    while True:
        if rng.random() < 0.3:
            conn.send(("pop",))
            item = session.pop_item_sync()
            conn.send(("popped", None if item is None else key_of(item)))
        else:
            size = rng.randint(1, 5)
            session.add_items_sync(make_batch(name, batch, size))
            conn.send(("added", name, batch, size))
            batch += 1


def big_victim(directory: str, name: str, conn: Connection, durable: bool) -> None:
    """Appends one 24 MiB batch: the kill is meant to land inside its ``write``."""
    session = _session(directory, durable)
    items = make_batch(name, 0, BIG_BATCH)
    conn.send(("ready",))
    session.add_items_sync(items)
    conn.send(("added", name, 0, BIG_BATCH))
    conn.recv()  # wait to be killed


def steady_writer(directory: str, conn: Connection, durable: bool) -> None:
    """The second writer: appends as many batches as it is told, acknowledging each, then ``idle``."""
    session = _session(directory, durable)
    rng = random.Random(7)
    batch = 0
    while True:
        count = conn.recv()
        if count is None:
            return
        for _ in range(count):
            size = rng.randint(1, 4)
            session.add_items_sync(make_batch("steady", batch, size))
            conn.send(("added", "steady", batch, size))
            batch += 1
        conn.send(("idle",))


def reader(directory: str, conn: Connection, stop: Any, durable: bool) -> None:
    """Reads whole and newest-first until stopped; reports (reads, first error or None)."""
    session = _session(directory, durable)
    rng = random.Random(11)
    reads = 0
    error = None
    while not stop.is_set() and error is None:
        try:
            if rng.random() < 0.5:
                check_sequence(session.get_items_sync())
            else:
                limit = rng.randint(1, 20)
                items = session.get_items_sync(limit=limit)
                assert len(items) <= limit
                # the newest items may start mid-batch, so only check order within writers
                keys = [key_of(item) for item in items]
                for writer in {key[0] for key in keys}:
                    mine = [key[1:] for key in keys if key[0] == writer]
                    assert mine == sorted(set(mine)), f"{writer} out of order in a limit read"
            reads += 1
        except BaseException as exc:  # noqa: BLE001  (report anything; the parent fails the test)
            error = f"{type(exc).__name__}: {exc}"[:500]
    conn.send((reads, error))


# -- the parent's model -----------------------------------------------------------------------


@dataclass
class Stats:
    kills: int = 0
    big_kills: int = 0
    torn_tails: int = 0
    partial_batches: int = 0
    acked_batches: int = 0
    pops: int = 0
    reads: int = 0
    seconds: float = 0.0


@dataclass
class Model:
    """What the parent knows: acknowledged batches and pops, and what may explain a gap."""

    path: Path
    acked: dict[tuple[str, int], int] = field(default_factory=dict)
    explained: set[Key] = field(default_factory=set)  # popped, or removed by the parent
    stats: Stats = field(default_factory=Stats)
    partial: set[tuple[str, int]] = field(default_factory=set)
    lines: dict[bytes, tuple[Key, int]] = field(default_factory=dict)  # line -> (key, batch size)

    def take(self, message: tuple[Any, ...]) -> None:
        if message[0] == "added":
            _, writer, batch, size = message
            self.acked[(writer, batch)] = size
            self.stats.acked_batches += 1
        elif message[0] == "popped" and message[1] is not None:
            self.explained.add(tuple(message[1]))
            self.stats.pops += 1

    def snapshot(self) -> bytes:
        """The file's bytes under a shared lock, as a reader would see them."""
        fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            return os.pread(fd, os.fstat(fd).st_size, 0)
        finally:
            os.close(fd)

    def check(self, data: bytes, *, in_flight_pop: bool) -> bytes:
        """Check one snapshot; return its torn tail (``b""`` if none).

        * every complete line is one whole item (nothing half-written or glued);
        * each writer's items are in order, each batch contiguous and a prefix of itself;
        * every acknowledged batch is there whole, except items acknowledged as popped (or
          removed by the parent), and at most one item taken by a pop the kill interrupted;
        * nothing popped comes back.
        """
        *lines, tail = data.split(b"\n")
        keys = []
        sizes: dict[tuple[str, int], int] = {}
        for number, line in enumerate(lines, 1):
            known = self.lines.get(line)
            if known is None:  # parse and check each distinct line once
                try:
                    item = orjson.loads(line)
                except orjson.JSONDecodeError:
                    raise AssertionError(f"line {number} is not whole: {line[:80]!r}") from None
                known = (key_of(item), item["n"])
                if len(line) < 4096:  # not the MiB lines: they are removed right away
                    self.lines[line] = known
            keys.append(known[0])
            sizes[known[0][:2]] = known[1]
        if tail:
            self.stats.torn_tails += 1
            assert not _parses(tail), "a complete item without its newline"
        check_keys(keys)
        present = set(keys)
        assert not (present & self.explained), "a popped item came back"
        big = Counter(key[:2] for key in keys if key[0].startswith("big"))
        self.partial.update(  # a big write the kill cut short left whole lines of its first items
            batch for batch, count in big.items() if count < sizes[batch]
        )
        missing = [
            (writer, batch, index)
            for (writer, batch), size in self.acked.items()
            for index in range(size)
            if (writer, batch, index) not in present and (writer, batch, index) not in self.explained
        ]
        assert len(missing) <= (1 if in_flight_pop else 0), f"acknowledged items lost: {missing[:5]}"
        self.explained.update(missing)  # taken by the interrupted pop: it may have completed
        return tail


def _parses(data: bytes) -> bool:
    try:
        return type(orjson.loads(data)) is dict
    except orjson.JSONDecodeError:
        return False


def _drain(conn: Connection, model: Model) -> tuple[Any, ...] | None:
    """Take every message a dead process left in its pipe; return the last one."""
    last = None
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return last
        model.take(message)
        last = message


def _steady_batches(conn: Connection, model: Model, count: int | None = None) -> None:
    """Let the steady writer append ``count`` more batches (None: none), and wait until it is idle."""
    if count is not None:
        conn.send(count)
    while (message := conn.recv()) != ("idle",):
        model.take(message)


def run(
    directory: Path,
    *,
    kills: int,
    seed: int,
    durable: bool = False,
    big_every: int = 10,
    max_delay: float = 0.01,
    log: Any = None,
) -> Stats:
    """Kill the victim ``kills`` times; raise AssertionError on the first broken invariant."""
    rng = random.Random(seed)
    session = _session(str(directory), durable)
    session.add_items_sync([{"w": "seed", "b": 0, "i": 0, "n": 1, "pad": pad_for("seed", 0, 0)}])
    model = Model(session.path)
    model.acked[("seed", 0)] = 1
    big_window = _time_one_big_write(directory, durable) * 1.5
    started = time.monotonic()

    steady_parent, steady_child = _ctx.Pipe()
    reader_parent, reader_child = _ctx.Pipe()
    stop = _ctx.Event()
    helpers = [
        _ctx.Process(target=steady_writer, args=(str(directory), steady_child, durable), daemon=True),
        _ctx.Process(target=reader, args=(str(directory), reader_child, stop, durable), daemon=True),
    ]
    victim_process: Any = None
    try:
        for process in helpers:
            process.start()
        steady_child.close()
        reader_child.close()
        for round_number in range(kills):
            big = big_every > 0 and round_number % big_every == big_every - 1
            name = f"big{round_number}" if big else f"v{round_number}"
            parent_end, child_end = _ctx.Pipe()
            if big:
                args: tuple[Any, ...] = (str(directory), name, child_end, durable)
                victim_process = _ctx.Process(target=big_victim, args=args, daemon=True)
            else:
                args = (str(directory), name, child_end, rng.randrange(1 << 30), durable)
                victim_process = _ctx.Process(target=victim, args=args, daemon=True)
            victim_process.start()
            child_end.close()
            assert parent_end.recv() == ("ready",)
            steady_parent.send(rng.randint(0, 3))  # the second writer runs during the kill window
            # The random delay *is* the test: it decides where in the victim's work the kill lands.
            time.sleep(rng.uniform(0, big_window if big else max_delay))
            assert victim_process.pid is not None
            os.kill(victim_process.pid, signal.SIGKILL)
            victim_process.join()
            assert victim_process.exitcode == -signal.SIGKILL
            model.stats.kills += 1
            model.stats.big_kills += big
            last = _drain(parent_end, model)
            parent_end.close()
            _steady_batches(steady_parent, model)  # its acks are in before the snapshot
            tail = model.check(model.snapshot(), in_flight_pop=last == ("pop",))
            if tail:
                # The next writer must move the torn tail to the sidecar, never glue onto it.
                _steady_batches(steady_parent, model, 1)
                sidecar = session.sidecar_path.read_bytes().split(b"\n")
                assert tail in sidecar, "the torn tail was not saved to the sidecar"
                assert model.check(model.snapshot(), in_flight_pop=False) == b""
            if big:
                _remove_big_items(session, model)
            if log is not None and (round_number + 1) % 50 == 0:
                log(f"{round_number + 1} kills, {model.stats}")
        stop.set()
        steady_parent.send(None)
        reads, error = reader_parent.recv()
        assert error is None, f"the reader saw: {error}"
        assert reads > 0
        model.stats.reads = reads
        for process in helpers:
            process.join(timeout=30)
        model.check(model.snapshot(), in_flight_pop=False)
        for line in session.sidecar_path.read_bytes().split(b"\n") if session.sidecar_path.exists() else []:
            assert not _parses(line), "a whole item was moved to the sidecar"
    finally:
        stop.set()
        for process in [*helpers, victim_process]:
            if process is not None and process.is_alive():
                process.kill()
                process.join()
    model.stats.seconds = time.monotonic() - started
    model.stats.partial_batches = len(model.partial)
    return model.stats


def _time_one_big_write(directory: Path, durable: bool) -> float:
    """How long a big ``add_items`` takes here, so kills can land anywhere inside one."""
    scratch = JSONLSession("calibration", directory, durable=durable)
    started = time.monotonic()
    scratch.add_items_sync(make_batch("big", 0, BIG_BATCH))
    elapsed = time.monotonic() - started
    scratch.close()
    scratch.path.unlink()
    return elapsed


def _remove_big_items(session: JSONLSession, model: Model) -> None:
    """Drop the MiB items with a rewrite (other processes keep running), so the file stays small."""
    with session.rewrite() as draft:
        kept = []
        for item in draft.items:
            if item["w"].startswith("big"):
                model.explained.add((item["w"], item["b"], item["i"]))
            else:
                kept.append(item)
        draft.items = kept
