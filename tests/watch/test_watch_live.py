"""Live tail with real processes, real inotify (or polling) wake-ups, and stopping.

No sleeps: a writer process and the test take turns through a pipe, and every wait is
bounded (``WAIT``) so a bug fails the test instead of hanging it.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pytest
from process_helpers import SPAWN, running
from watch_helpers import (
    WAIT,
    concurrent_writer,
    no_new_fds,
    open_fds,
    partial_line_writer,
    scripted_writer,
    settles,
    watch_threads,
    watchdog,
)

from jsonl_session import JSONLSession, MalformedLineError, SessionDirectory
from jsonl_session.watch import Change, SessionWatchSync, apply, watch_directory, watch_directory_sync

A, B, C, D = ({"n": n} for n in range(4))
SENTINEL = {"sentinel": True}
REPO = Path(__file__).resolve().parents[2]

# Each op must change the file's items, so that each one produces at least one change.
OPS: list[tuple[Any, ...]] = [
    ("add", [A]),
    ("add", [B, C]),
    ("adds", 20, "burst"),  # twenty writes, most of them between two wake-ups
    ("pop", 1),
    ("pop", 3),
    ("add", [{"big": "x" * 200_000}]),  # larger than one read
    ("pop", 1),
    ("clear",),
    ("add", [A, B]),
    ("replace", [C, D]),  # replace_items_sync: rename over the file
    ("swap", [A]),  # an outside tool renames its own file over ours (git checkout)
    ("add", [B]),
    ("inplace", [{"k": "rewritten in place by an editor"}]),
    ("delete",),
    ("add", [C]),
]


class Turns:
    """The test's side of the writer's turn-taking: ack each op once the watcher mirrors it."""

    def __init__(self, conn: Connection, ops: int) -> None:
        self.conn, self.ops = conn, ops
        self.expected: tuple[int, list[Any]] | None = None
        self.acked = 0
        self.items: list[Any] = []
        self.kinds: list[str] = []

    def seen(self, change: Change) -> bool:
        """Apply a change; ack the writer's op when the list matches. True when all ops are done."""
        apply(change, self.items)
        self.kinds.append(change.kind)
        if self.expected is None:
            assert self.conn.poll(WAIT), "the writer did not report its op"
            self.expected = self.conn.recv()
        index, items = self.expected
        if self.items == items:
            self.conn.send(index)
            self.acked += 1
            self.expected = None
        return self.acked == self.ops


def follow_writer(watch: SessionWatchSync, session: JSONLSession, ops: list[tuple[Any, ...]]) -> Turns:
    """Run ``scripted_writer`` in a process and mirror its ops from ``watch``, one turn at a time."""
    parent, child = SPAWN.Pipe()
    turns = Turns(parent, len(ops))
    with (
        watchdog(watch.close),
        running(scripted_writer, str(session.directory), session.session_id, ops, child),
    ):
        for change in watch:
            if turns.seen(change):
                break
    return turns


def test_sync_watch_mirrors_a_writer_process_op_by_op(session: JSONLSession) -> None:
    with session.watch_sync() as watch:
        turns = follow_writer(watch, session, OPS)
    assert turns.acked == len(OPS)
    assert turns.items == session.get_items_sync() == [C]
    assert {"appended", "removed", "cleared", "replaced", "deleted"} <= set(turns.kinds)


def test_async_watch_mirrors_a_writer_process_op_by_op(session: JSONLSession) -> None:
    parent, child = SPAWN.Pipe()
    turns = Turns(parent, len(OPS))

    async def follow() -> None:
        async with session.watch() as watch:
            with running(scripted_writer, str(session.directory), session.session_id, OPS, child):
                async for change in watch:
                    if turns.seen(change):
                        break

    asyncio.run(asyncio.wait_for(follow(), WAIT))
    assert turns.acked == len(OPS)
    assert turns.items == session.get_items_sync() == [C]
    assert {"appended", "removed", "cleared", "replaced", "deleted"} <= set(turns.kinds)
    assert watch_threads() == []


def test_polling_mode_follows_a_writer_process(session: JSONLSession) -> None:
    ops = OPS[:5] + OPS[7:11]
    with session.watch_sync(force_polling=True, poll_delay_ms=20) as watch:
        turns = follow_writer(watch, session, ops)
    assert turns.acked == len(ops)
    assert turns.items == session.get_items_sync()


def follow_until_sentinel(watch: Iterator[Change]) -> list[Any]:
    items: list[Any] = []
    for change in watch:
        apply(change, items)
        if items and items[-1] == SENTINEL:
            break
    return items


def test_four_concurrent_writer_processes_nothing_missing_or_doubled(session: JSONLSession) -> None:
    count = 120
    go = SPAWN.Event()
    with session.watch_sync() as watch, watchdog(watch.close), ExitStack() as stack:
        writers = [
            stack.enter_context(
                running(concurrent_writer, str(session.directory), session.session_id, writer, count, go)
            )
            for writer in range(4)
        ]

        def finish() -> None:
            go.set()
            for process in writers:
                process.join(WAIT)
            session.add_items_sync([SENTINEL])

        closer = threading.Thread(target=finish)
        closer.start()
        items = follow_until_sentinel(watch)
        closer.join(WAIT)
    assert all(process.exitcode == 0 for process in writers)
    assert items == session.get_items_sync()
    for writer in range(4):
        assert [item["n"] for item in items if item.get("writer") == writer] == list(range(count))


def test_half_written_lines_from_a_process_arrive_whole(session: JSONLSession) -> None:
    written = [{"role": "user", "content": f"message number {n} " + "é" * (n % 7)} for n in range(150)]
    session.add_items_sync([A])  # the file exists, so the writer can append without the lock
    with session.watch_sync() as watch, watchdog(watch.close):

        def finish() -> None:
            with running(partial_line_writer, str(session.path), written, 4) as process:
                process.join(WAIT)
            session.add_items_sync([SENTINEL])

        closer = threading.Thread(target=finish)
        closer.start()
        items = follow_until_sentinel(watch)
        closer.join(WAIT)
    assert items == [A, *written, SENTINEL] == session.get_items_sync()


@pytest.mark.parametrize(("start", "replayed"), [("all", [A, B, C]), ("now", []), (2, [B, C]), (0, [])])
def test_start_modes_live(session: JSONLSession, start: Any, replayed: list[Any]) -> None:
    session.add_items_sync([A, B, C])
    with session.watch_sync(start=start) as watch, watchdog(watch.close):
        if replayed:
            assert next(watch) == Change("appended", "test", replayed, len(replayed))
        session.add_items_sync([D])
        assert next(watch) == Change("appended", "test", [D], 1)


def test_session_in_a_folder_that_does_not_exist_yet(session: JSONLSession) -> None:
    assert not session.directory.exists()
    with session.watch_sync() as watch:
        turns = follow_writer(watch, session, [("add", [A, B])])
    assert turns.items == [A, B]


def test_malformed_line_ends_the_watch_with_file_and_line(session: JSONLSession) -> None:
    session.add_items_sync([A])
    with session.watch_sync() as watch, watchdog(watch.close):
        assert next(watch).items == [A]
        with open(session.path, "ab") as file:
            file.write(b"not json\n")
        with pytest.raises(MalformedLineError) as error:
            next(watch)
        assert (error.value.path, error.value.line) == (session.path, 2)
        with pytest.raises(StopIteration):
            next(watch)


def test_folder_deleted_and_created_again(session: JSONLSession) -> None:
    session.add_items_sync([A])
    with session.watch_sync() as watch, watchdog(watch.close):
        assert next(watch) == Change("appended", "test", [A], 1)
        session.path.unlink()
        session.path.with_name(session.path.name + ".times").unlink(missing_ok=True)
        session.directory.rmdir()
        assert next(watch) == Change("deleted", "test", [], 1)
        session.add_items_sync([B])  # creates the folder again: a new inode to watch
        assert next(watch) == Change("appended", "test", [B], 1)
        session.add_items_sync([C])
        assert next(watch) == Change("appended", "test", [C], 1)


def test_a_watch_that_cannot_start_releases_everything(session: JSONLSession) -> None:
    session.directory.mkdir()
    session.path.write_bytes(b"oops\n")
    with pytest.raises(MalformedLineError), session.watch_sync():
        pass

    async def main() -> None:
        with pytest.raises(MalformedLineError):
            async with session.watch():
                pass
        assert watch_threads() == []

    asyncio.run(asyncio.wait_for(main(), WAIT))


NO_INOTIFY_SCRIPT = """
import os, resource, sys, threading, warnings
from pathlib import Path
from jsonl_session.watch import WatchOptions
from jsonl_session.watch.wakeups import Wakeups
Path(sys.argv[1]).mkdir()
# Allow one more descriptor: an inotify watcher needs several, so it cannot start.
used = {int(name) for name in os.listdir("/proc/self/fd")}
lowest_free = min(number for number in range(1024) if number not in used)
resource.setrlimit(resource.RLIMIT_NOFILE, (lowest_free + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    wakeups = Wakeups(Path(sys.argv[1]), lambda name: True, WatchOptions(poll_delay_ms=20))
    assert wakeups.wait(threading.Event()) in ("tick", "recheck")  # the polling watcher runs by now
print(*[warning.message for warning in caught], wakeups.force_polling, wakeups.tick_seconds, sep=" | ")
"""


def test_without_inotify_it_warns_and_polls(sessions_dir: Path) -> None:
    # (Following a session by polling is test_polling_mode_follows_a_writer_process.)
    result = subprocess.run(
        [sys.executable, "-c", NO_INOTIFY_SCRIPT, str(sessions_dir)],
        check=False,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert result.returncode == 0, result.stderr
    warning, polling, tick = result.stdout.strip().split(" | ")
    assert "file system events unavailable" in warning and "polling every 20 ms instead" in warning
    assert (polling, tick) == ("True", "0.02")


# -- stopping -----------------------------------------------------------------------------------


def test_stop_event_delivers_what_is_written_then_ends(session: JSONLSession) -> None:
    stop = threading.Event()
    items: list[Any] = []
    with session.watch_sync(stop_event=stop) as watch, watchdog(watch.close):
        session.add_items_sync([A, B])
        session.pop_item_sync()
        stop.set()
        for change in watch:
            apply(change, items)
    assert items == [A] == session.get_items_sync()


def test_stop_event_from_another_thread_ends_a_waiting_watch_and_frees_everything(
    session: JSONLSession,
) -> None:
    session.add_items_sync([A])
    session.close()
    fds = open_fds()
    threads = set(threading.enumerate())
    stop = threading.Event()
    fired = threading.Event()
    watch = session.watch_sync(stop_event=stop, start="now")
    with watchdog(fired.set):
        threading.Thread(target=stop.set).start()
        assert list(watch) == []
    assert not fired.is_set()
    assert settles(lambda: no_new_fds(fds)), open_fds()
    assert settles(lambda: set(threading.enumerate()) <= threads)  # helper threads end on their own


def test_close_from_another_thread_interrupts_next(session: JSONLSession) -> None:
    watch = session.watch_sync(start="now")
    started = threading.Event()
    result: list[Any] = []

    def consume() -> None:
        with watch:
            started.set()
            result.extend(watch)

    consumer = threading.Thread(target=consume)
    consumer.start()
    assert started.wait(WAIT)
    watch.close()
    consumer.join(WAIT)
    assert not consumer.is_alive() and result == []


def test_async_context_manager_and_break_leave_no_thread_or_descriptor(session: JSONLSession) -> None:
    session.add_items_sync([A])
    session.close()
    fds = open_fds()

    async def main() -> None:
        async with session.watch() as watch:
            assert len(watch_threads()) == 1
            async for change in watch:
                assert change.items == [A]
                break
        assert watch_threads() == []

    asyncio.run(asyncio.wait_for(main(), WAIT))
    assert settles(lambda: no_new_fds(fds)), open_fds()


def test_async_stop_event_and_dropped_watch_end_their_threads(session: JSONLSession) -> None:
    async def main() -> None:
        stop = asyncio.Event()
        watch = session.watch(stop_event=stop, start="now")
        await watch.__aenter__()  # watching from here on
        await session.add_items([A])
        assert await asyncio.wait_for(watch.__anext__(), WAIT) == Change("appended", "test", [A], 1)
        stop.set()
        assert [change async for change in watch] == []
        await watch.aclose()
        assert watch_threads() == []
        # Dropped without aclose(): its thread notices within one step.
        dropped = session.watch(start="now")
        await asyncio.wait_for(dropped.__aenter__(), WAIT)
        (thread,) = watch_threads()
        del dropped
        gc.collect()
        await asyncio.to_thread(thread.join, WAIT)
        assert not thread.is_alive()

    asyncio.run(asyncio.wait_for(main(), WAIT))


def test_cancelled_async_watch_stops_promptly(session: JSONLSession) -> None:
    async def main() -> None:
        async with session.watch(start="now") as watch:
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(watch.__anext__(), 0.05)
        assert watch_threads() == []

    asyncio.run(asyncio.wait_for(main(), WAIT))


CTRL_C_SCRIPT = """
import os, sys, threading
from jsonl_session import JSONLSession
from watch_helpers import no_new_fds, open_fds, settles
session = JSONLSession("x", sys.argv[1])
fds = open_fds()
raise_interrupt = sys.argv[2] == "raise"


class SayReady:
    # The watch calls is_set() while it waits: "ready" is printed from inside next().

    said = False

    def is_set(self):
        if not self.said:
            print("ready", flush=True)
            self.said = True
        return False


try:
    with session.watch_sync(stop_event=SayReady(), raise_interrupt=raise_interrupt) as watch:
        for change in watch:
            pass
    print("ended", threading.active_count(), settles(lambda: no_new_fds(fds)), flush=True)
except KeyboardInterrupt:
    print("interrupted", threading.active_count(), settles(lambda: no_new_fds(fds)), flush=True)
"""


@pytest.mark.parametrize(("mode", "expected"), [("raise", "interrupted 1 True"), ("quiet", "ended 1 True")])
def test_ctrl_c_ends_the_sync_watch_cleanly(sessions_dir: Path, mode: str, expected: str) -> None:
    sessions_dir.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-c", CTRL_C_SCRIPT, str(sessions_dir), mode],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=WAIT)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert (out.strip(), err, process.returncode) == (expected, "", 0)


# -- a folder of sessions -----------------------------------------------------------------------


def expect(watch: Iterator[Change], count: int) -> list[tuple[str, str, Any]]:
    changes = [next(watch) for _ in range(count)]
    return [
        (c.session_id, c.kind, c.items if c.kind in ("appended", "replaced") else c.count) for c in changes
    ]


def test_directory_watch_sees_sessions_appear_change_and_go(sessions_dir: Path) -> None:
    store = SessionDirectory(sessions_dir, durable=False)
    store.open("a").add_items_sync([A, B])
    store.open("b").replace_items_sync([])  # exists, no items
    with watch_directory_sync(sessions_dir) as watch, watchdog(watch.close):
        assert expect(watch, 1) == [("a", "appended", [A, B])]
        (sessions_dir / "notes.txt").write_text("not a session\n")
        store.open("user/42").add_items_sync([C])
        assert expect(watch, 1) == [("user/42", "appended", [C])]
        store.open("a").pop_item_sync()
        assert expect(watch, 1) == [("a", "removed", 1)]
        assert store.delete("b")
        assert expect(watch, 1) == [("b", "deleted", 0)]
        os.rename(sessions_dir / "a.jsonl", sessions_dir / "c.jsonl")
        assert sorted(expect(watch, 2)) == [("a", "deleted", 1), ("c", "appended", [A])]
        (sessions_dir / "link.jsonl").symlink_to(sessions_dir / "c.jsonl")  # not a session: ignored
        store.open("c").add_items_sync([D])
        assert expect(watch, 1) == [("c", "appended", [D])]


def test_async_directory_watch_mirrors_a_writer_process(sessions_dir: Path) -> None:
    parent, child = SPAWN.Pipe()
    mirrors: dict[str, list[Any]] = {}

    async def main() -> None:
        store = SessionDirectory(sessions_dir, durable=False)
        store.open("old").add_items_sync([A])
        async with watch_directory(sessions_dir, start="now") as watch:
            with running(scripted_writer, str(sessions_dir), "new", [("add", [B, C]), ("pop", 1)], child):
                turns = Turns(parent, 2)
                async for change in watch:
                    assert change.session_id == "new"
                    apply(change, mirrors.setdefault(change.session_id, []))
                    if turns.seen(change):
                        break

    asyncio.run(asyncio.wait_for(main(), WAIT))
    assert mirrors == {"new": [B]}


# -- the example ---------------------------------------------------------------------------------


def test_follow_example_runs_both_processes_and_ends(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "examples" / "follow.py")],
        check=False,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OPENAI_API_KEY": ""},
    )
    assert result.returncode == 0, result.stderr
    assert "follower: the list rebuilt from the changes equals the file" in result.stdout
    assert result.stderr == ""
