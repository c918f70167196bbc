"""Helpers for the live-tail tests: writer processes and bounded waits.

Writer functions run in *spawned* processes (a fresh interpreter, no inherited watcher
threads), so they take only picklable arguments and import what they need.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from jsonl_session import JSONLSession
from jsonl_session.watch import Change, apply, watch_session_sync

WAIT = 30.0  # seconds: generous bound on any single wait; a bug fails the test instead of hanging it


@contextmanager
def watchdog(close: Callable[[], object], seconds: float = WAIT) -> Iterator[None]:
    """Call ``close`` (e.g. ``watch.close``) if the block is still running after ``seconds``."""
    timer = threading.Timer(seconds, close)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def open_fds() -> dict[int, str]:
    """This process's open file descriptors and what they are (Linux)."""
    found = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            found[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except FileNotFoundError:  # the descriptor listdir itself used
            pass
    return found


def no_new_fds(before: dict[int, str]) -> bool:
    """True if every descriptor open now was open (to the same thing) in ``before``.

    Descriptors that closed meanwhile (an earlier test's pipes being collected) do not count.
    """
    return open_fds().items() <= before.items()


def settles(check: Callable[[], bool], seconds: float = WAIT) -> bool:
    """Poll ``check`` until it is true, for teardown that offers nothing to wait on.

    watchfiles' Rust watcher stops its event-loop thread on ``close()``; that thread closes
    its epoll and eventfd descriptors as it exits, a moment later, and cannot be joined.
    """
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


def watch_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name.startswith("jsonl-session-watch")]


# -- writer processes -------------------------------------------------------------------------


def scripted_writer(directory: str, session_id: str, ops: list[tuple[Any, ...]], conn: Connection) -> None:
    """Perform ``ops`` one by one; after each, send the file's items and wait for the watcher's ack.

    Ops: ("add", [items]) one add_items call; ("adds", n, tag) n add_items calls in a row (several
    writes between two wake-ups); ("pop", n) n pops in a row; ("clear",); ("replace", [items])
    replace_items_sync (rename); ("swap", [items]) an outside tool writes a temp file and renames
    it over the session; ("delete",) unlink the file; ("inplace", [items]) truncate and rewrite
    in place (same inode).
    """
    session = JSONLSession(session_id, directory, durable=False)
    for index, op in enumerate(ops):
        kind = op[0]
        if kind == "add":
            session.add_items_sync(op[1])
        elif kind == "adds":
            for number in range(op[1]):
                session.add_items_sync([{"tag": op[2], "n": number}])
        elif kind == "pop":
            for _ in range(op[1]):
                session.pop_item_sync()
        elif kind == "clear":
            session.clear_session_sync()
        elif kind == "replace":
            session.replace_items_sync(op[1])
        elif kind == "swap":
            temp = session.path.with_name("checkout.tmp")
            temp.write_bytes(_lines(op[1]))
            os.replace(temp, session.path)
        elif kind == "delete":
            session.path.unlink()
        elif kind == "inplace":
            with open(session.path, "r+b") as file:
                file.truncate(0)
                file.write(_lines(op[1]))
        else:
            raise ValueError(op)
        conn.send((index, session.get_items_sync()))
        if not conn.poll(WAIT) or conn.recv() != index:
            raise SystemExit(f"no ack for op {index}")
    conn.send(("done", None))


def concurrent_writer(directory: str, session_id: str, writer: int, count: int, go: Any) -> None:
    """Append ``count`` items tagged with ``writer``, one to three per call, once ``go`` is set."""
    session = JSONLSession(session_id, directory, durable=False)
    if not go.wait(WAIT):
        raise SystemExit("never told to start")
    number = 0
    while number < count:
        batch = [{"writer": writer, "n": n} for n in range(number, min(count, number + 1 + number % 3))]
        session.add_items_sync(batch)
        number += len(batch)


def partial_line_writer(path: str, items: list[dict[str, Any]], cuts: int) -> None:
    """Append items without the lock, each line in ``cuts`` separate writes (half-written lines)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        for item in items:
            line = _lines([item])
            step = max(1, len(line) // cuts)
            for offset in range(0, len(line), step):
                os.write(fd, line[offset : offset + step])
    finally:
        os.close(fd)


def _lines(items: list[dict[str, Any]]) -> bytes:
    from jsonl_session.core.codec import encode_items

    return encode_items(items)


def read_items(path: Path) -> list[Any]:
    return JSONLSession(path.name[: -len(".jsonl")], path.parent).get_items_sync()


class Stepper:
    """A follower stepped by hand: each ``catch_up()`` is one wake-up, with no waiting on events.

    It is the blocking watcher itself (``watch_sync``), asked to look now instead of waiting.
    """

    def __init__(self, session: JSONLSession, start: Any = "all") -> None:
        self.watch = watch_session_sync(session, start=start)
        self.items: list[Any] = []
        self.catch_up()

    def catch_up(self) -> list[Change]:
        changes = self.watch.catch_up()
        for change in changes:
            apply(change, self.items)
        return changes

    def close(self) -> None:
        self.watch.close()


def racing_writer(directory: str, writer: int, rounds: int, arrived: Any, go: list[Any]) -> None:
    """Random library operations, ``rounds`` times; after each round wait at the checkpoint.

    ``arrived`` is set when this writer has finished a round (it then writes nothing);
    the test clears it and sets ``go[round]`` to start the next one.
    """
    import random

    rng = random.Random(writer)
    session = JSONLSession("race", directory, durable=False)
    pool = [{"n": n} for n in range(4)] + [{"writer": writer}]
    for round_number in range(rounds):
        for _ in range(rng.randint(5, 40)):
            op = rng.random()
            if op < 0.55:
                session.add_items_sync(rng.choices(pool, k=rng.randint(1, 3)))
            elif op < 0.75:
                session.pop_item_sync()
            elif op < 0.8:
                session.clear_session_sync()
            elif op < 0.9:
                session.replace_items_sync(rng.choices(pool, k=rng.randint(0, 4)))
            elif op < 0.97:
                with session.rewrite() as draft:
                    draft.items = draft.items[: rng.randint(0, 3)] + rng.choices(pool, k=rng.randint(0, 2))
            else:
                session.path.unlink(missing_ok=True)
        arrived.set()
        if not go[round_number].wait(WAIT):
            raise SystemExit("never told to go on")
    session.close()
