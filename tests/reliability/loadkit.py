"""Load: many writer processes, readers and a live watcher on one session; then many sessions.

Shared by ``test_load.py`` (a small load in the suite) and ``stress/load.py`` (8 x 2,000
appends, and a timing report). Nothing here asserts on time: the numbers are reported.
"""

from __future__ import annotations

import multiprocessing
import random
import time
import warnings
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from jsonl_session import JSONLSession, SessionDirectory

_ctx = multiprocessing.get_context("fork")


def _writer(directory: str, number: int, appends: int, durable: bool, go: Any, conn: Connection) -> None:
    session = JSONLSession("load", directory, durable=durable, lock_timeout=120)
    go.wait()
    for sequence in range(appends):
        session.add_items_sync([{"w": number, "s": sequence, "text": f"message {sequence} from {number}"}])
    conn.send("done")


def _check_order(items: list[Any]) -> None:
    last: dict[int, int] = {}
    for item in items:
        assert item["s"] == last.get(item["w"], -1) + 1, f"writer {item['w']} skipped or repeated"
        last[item["w"]] = item["s"]


def _reader(directory: str, durable: bool, stop: Any, conn: Connection) -> None:
    session = JSONLSession("load", directory, durable=durable, lock_timeout=120)
    rng = random.Random(29)  # seeded, like the rest of the suite
    reads, error = 0, None
    while not stop.is_set() and error is None:
        try:
            if rng.random() < 0.3:
                _check_order(session.get_items_sync())
            else:
                newest = session.get_items_sync(limit=rng.randint(1, 50))
                assert all(set(item) == {"w", "s", "text"} for item in newest)
            reads += 1
        except BaseException as exc:  # noqa: BLE001  (reported; the parent fails the test)
            error = f"{type(exc).__name__}: {exc}"[:300]
    conn.send((reads, error))


def _watcher(directory: str, stop: Any, ready: Any, conn: Connection) -> None:
    from jsonl_session.watch import apply

    warnings.simplefilter("ignore")
    session = JSONLSession("load", directory, lock_timeout=120)
    mirror: list[Any] = []
    changes = 0
    try:
        with session.watch_sync(start="all", stop_event=stop) as watch:
            ready.set()
            for change in watch:
                apply(change, mirror)
                changes += 1
        conn.send((changes, mirror, None))
    except BaseException as exc:  # noqa: BLE001  (reported; the parent fails the test)
        ready.set()
        conn.send((changes, [], f"{type(exc).__name__}: {exc}"[:300]))


@dataclass
class OneSessionReport:
    writers: int
    appends: int
    durable: bool
    seconds: float
    reads: int
    watch_changes: int | None

    @property
    def appends_per_second(self) -> float:
        return self.writers * self.appends / self.seconds


def one_session(
    directory: Path,
    *,
    writers: int,
    appends: int,
    readers: int = 2,
    watch: bool = True,
    durable: bool = False,
) -> OneSessionReport:
    """``writers`` processes append ``appends`` items each to one session, with readers and a watcher.

    Checks that every item is there once, each writer's in order, and that the watcher's
    mirror of the session equals the file.
    """
    go, stop, stop_watch, ready = _ctx.Event(), _ctx.Event(), _ctx.Event(), _ctx.Event()
    processes: list[Any] = []
    pipes: list[Connection] = []

    def start(target: Any, *args: Any) -> Connection:
        parent, child = _ctx.Pipe()
        process = _ctx.Process(target=target, args=(*args, child), daemon=True)
        process.start()
        child.close()
        processes.append(process)
        pipes.append(parent)
        return parent

    try:
        watcher = start(_watcher, str(directory), stop_watch, ready) if watch else None
        if watch:
            ready.wait(60)
        reader_pipes = [start(_reader, str(directory), durable, stop) for _ in range(readers)]
        writer_pipes = [
            start(_writer, str(directory), number, appends, durable, go) for number in range(writers)
        ]
        started = time.perf_counter()
        go.set()
        for conn in writer_pipes:
            assert conn.recv() == "done"
        seconds = time.perf_counter() - started
        stop.set()
        reads = 0
        for conn in reader_pipes:
            count, error = conn.recv()
            assert error is None, f"a reader failed: {error}"
            reads += count
        items = JSONLSession("load", directory).get_items_sync()
        assert len(items) == writers * appends, f"{writers * appends - len(items)} items lost"
        _check_order(items)
        watch_changes = None
        if watcher is not None:
            stop_watch.set()  # the watch delivers what is in the file, then ends
            watch_changes, mirror, error = watcher.recv()
            assert error is None, f"the watcher failed: {error}"
            assert mirror == items, "the watcher's mirror differs from the file"
        for process in processes:
            process.join(timeout=30)
    finally:
        go.set()
        stop.set()
        stop_watch.set()
        for process in processes:
            if process.is_alive():
                process.kill()
                process.join()
    return OneSessionReport(writers, appends, durable, seconds, reads, watch_changes)


@dataclass
class ManySessionsReport:
    sessions: int
    create_seconds: float
    list_seconds: float
    read_seconds: float


def many_sessions(directory: Path, *, sessions: int, durable: bool = False) -> ManySessionsReport:
    """Create ``sessions`` sessions of three items in one folder, list them, read each back."""
    store = SessionDirectory(directory, durable=durable)
    ids = [f"user-{number:05d}" for number in range(sessions)]
    started = time.perf_counter()
    for session_id in ids:
        store.open(session_id).add_items_sync([{"id": session_id, "n": n} for n in range(3)])
    created = time.perf_counter()
    infos = store.list()
    listed = time.perf_counter()
    assert sorted(info.session_id for info in infos) == ids
    assert {info.items for info in infos} == {3}
    for session_id in ids:
        assert store.open(session_id).get_items_sync() == [{"id": session_id, "n": n} for n in range(3)]
    read = time.perf_counter()
    assert store.ids() == ids
    return ManySessionsReport(sessions, created - started, listed - created, read - listed)
