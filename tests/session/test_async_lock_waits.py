"""Async calls beyond the SDK protocol wait for a lock held elsewhere on the loop, not in a thread.

Before, ``rewind()``, the usage and paused-run methods and the compaction hooks ran their
blocking twins with ``asyncio.to_thread``: each one waiting for another process's lock
parked a thread of the loop's default executor for up to ``lock_timeout``. A few of them
starved every other ``to_thread`` user of the loop (the SDK's ``SQLiteSession`` among them).
Now they wait with ``asyncio.sleep`` and only the locked work runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from jsonl_session import JSONLSession

WORKERS = 2  # the loop's default executor in these tests
CALLS = WORKERS + 1  # enough waiting calls to take every worker, if they waited in threads

TURNS = [
    {"role": "user", "content": "one"},
    {"role": "assistant", "content": "1"},
    {"role": "user", "content": "two"},
    {"role": "assistant", "content": "2"},
    {"role": "user", "content": "three"},
    {"role": "assistant", "content": "3"},
]


async def while_locked_elsewhere(
    session: JSONLSession,
    call: Callable[[], Awaitable[Any]],
    *,
    also: tuple[Path, ...] = (),
    calls: int = CALLS,
) -> list[Any]:
    """Start ``calls`` calls while other open files hold the lock (and those of ``also``, taken
    after it and released before it, as a writer elsewhere does); the executor must stay free."""
    loop = asyncio.get_running_loop()
    loop.set_default_executor(ThreadPoolExecutor(max_workers=WORKERS))
    held = []
    try:
        for path in (session.path, *also):
            held.append(os.open(path, os.O_RDONLY))
            fcntl.flock(held[-1], fcntl.LOCK_EX)
        tasks = [asyncio.ensure_future(call()) for _ in range(calls)]
        for _ in range(10):  # every call has started and tried the lock once
            await asyncio.sleep(0)
        free = await asyncio.wait_for(asyncio.to_thread(str, "free"), timeout=20)
        assert free == "free"
        assert not any(task.done() for task in tasks)  # all still waiting for the lock
    finally:
        for other in reversed(held):
            fcntl.flock(other, fcntl.LOCK_UN)
            os.close(other)
    return await asyncio.gather(*tasks)


def fresh(sessions_dir: Path) -> JSONLSession:
    session = JSONLSession("waits", sessions_dir, lock_timeout=60)
    session.add_items_sync(TURNS)
    return session


def test_rewind_waits_on_the_loop(sessions_dir: Path) -> None:
    session = fresh(sessions_dir)
    removed = asyncio.run(while_locked_elsewhere(session, lambda: session.rewind(1)))
    assert sorted(item["content"] for items in removed for item in items) == sorted(
        item["content"] for item in TURNS
    )
    assert session.get_items_sync() == []


def test_clear_run_state_waits_on_the_loop(sessions_dir: Path) -> None:
    session = fresh(sessions_dir)
    assert asyncio.run(while_locked_elsewhere(session, session.clear_run_state)) == [False] * CALLS


def test_the_atomic_replace_hook_waits_on_the_loop(sessions_dir: Path) -> None:
    session = fresh(sessions_dir)
    summary = [{"type": "compaction", "summary": "three turns"}]
    done = asyncio.run(while_locked_elsewhere(session, lambda: session._atomic_replace_items(summary)))
    assert done == [True] * CALLS
    assert session.get_items_sync() == summary


def test_the_compaction_snapshot_waits_on_the_loop(sessions_dir: Path) -> None:
    pytest.importorskip("agents.memory.session", reason="needs the SDK")
    session = fresh(sessions_dir)
    summary = {"type": "compaction", "summary": "newest turn"}

    async def snapshot_then_replace() -> bool:
        snapshot = await session._get_compaction_snapshot(2)
        if snapshot is None:
            pytest.skip("this SDK has no compaction snapshots")
        return bool(await snapshot.replace_suffix(0, [summary]))

    replaced = asyncio.run(while_locked_elsewhere(session, snapshot_then_replace))
    # Which snapshots were stale depends on the order the waiting calls got the lock in (a busy
    # machine reorders them): a stale one declines, a fresh one swaps the newest two items for
    # the summary. Either way each success removes exactly one item and nothing else changes.
    succeeded = replaced.count(True)
    assert succeeded >= 1 and set(replaced) <= {True, False}
    assert session.get_items_sync() == [*TURNS[: len(TURNS) - 1 - succeeded], summary]


def test_usage_and_paused_runs_wait_on_the_loop(sessions_dir: Path) -> None:
    agents = pytest.importorskip("agents")
    helpers = pytest.importorskip("history_helpers")
    session = JSONLSession("refund", sessions_dir, lock_timeout=60)
    result = agents.Runner.run_sync(
        helpers.refund_agent(list(helpers.PAUSE_STEPS)), "Refund order A1", session=session
    )
    assert result.interruptions

    records = asyncio.run(while_locked_elsewhere(session, lambda: session.record_usage(result)))
    assert [record["paused"] for record in records] == [True] * CALLS
    assert records == [records[0]] * CALLS and len(session.usage_records()) == 1  # one result counts once

    answers = asyncio.run(while_locked_elsewhere(session, session.get_turn_usage))
    assert answers == [session.get_turn_usage_sync()] * CALLS
    assert [entry["user_turn_number"] for entry in answers[0]] == [1]
    assert answers[0][0]["total_tokens"] > 0

    asyncio.run(while_locked_elsewhere(session, lambda: session.save_run_state(result.to_state())))
    assert session.paused_run() is not None
    assert asyncio.run(while_locked_elsewhere(session, session.clear_run_state)).count(True) == 1
    assert session.paused_run() is None


class PausedState:
    """Enough of a ``RunState`` for ``save_run_state``: it only serialises it."""

    def to_json(self) -> dict[str, Any]:
        return {}

    def get_interruptions(self) -> list[Any]:
        return []


class FinishedResult:
    interruptions = ()


def outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return ("returned", call())
    except Exception as exc:  # noqa: BLE001  (compared, not swallowed: each twin must raise the same)
        return ("raised", f"{type(exc).__name__}: {exc}")


@pytest.mark.parametrize(
    "name, args",
    [
        ("rewind", (1,)),
        ("get_turn_usage", ()),
        ("get_session_usage", ()),
        ("clear_run_state", ()),
        ("record_usage", (FinishedResult(),)),
        ("save_run_state", (PausedState(),)),
    ],
)
def test_on_a_missing_session_each_async_twin_answers_as_its_sync_twin(
    sessions_dir: Path, name: str, args: tuple[Any, ...]
) -> None:
    session = JSONLSession("missing", sessions_dir)
    blocking = outcome(lambda: getattr(session, f"{name}_sync")(*args))
    assert outcome(lambda: asyncio.run(getattr(session, name)(*args))) == blocking
    assert not session.path.exists()


def test_a_deleted_session_leaves_a_paused_run_that_async_code_can_clear(sessions_dir: Path) -> None:
    session = JSONLSession("gone", sessions_dir)
    session.add_items_sync(TURNS[:1])
    run = session.path.with_name(session.path.name + ".run")
    run.write_text('{"state": {}}\n')
    session.path.unlink()  # by hand: the object still holds a descriptor of the dead file
    assert asyncio.run(session.clear_run_state()) is True
    assert not run.exists()


def test_session_usage_waits_on_the_loop_while_another_process_records_usage(sessions_dir: Path) -> None:
    """A ``record_usage`` elsewhere holds the session's lock and the ``.usage`` log's: wait in no thread."""
    session = fresh(sessions_dir)
    usage = session.path.with_name(session.path.name + ".usage")
    usage.write_text('{"requests": 1, "input_tokens": 3, "output_tokens": 4, "total_tokens": 7}\n')
    totals = asyncio.run(while_locked_elsewhere(session, session.get_session_usage, also=(usage,)))
    assert totals == [session.get_session_usage_sync()] * CALLS
    assert totals[0] is not None and totals[0]["total_tokens"] == 7


def test_whole_folder_export_and_import_wait_on_the_loop(sessions_dir: Path, tmp_path: Path) -> None:
    """``export_all`` reads, and ``import_all`` rewrites, sessions that another process has locked."""
    pytest.importorskip("agents", reason="the SDK backends need the SDK")
    from jsonl_session.session.folder import SessionDirectory
    from jsonl_session.transfer.all_sessions import export_all, import_all

    sessions = [fresh(sessions_dir / "here")] + [
        JSONLSession(f"more{n}", sessions_dir / "here", lock_timeout=60) for n in range(CALLS - 1)
    ]
    for session in sessions[1:]:
        session.add_items_sync(TURNS[:2])
    url = f"sqlite:///{tmp_path / 'all.db'}"
    others = tuple(session.path for session in sessions[1:])

    exported = asyncio.run(
        while_locked_elsewhere(
            sessions[0],
            lambda: export_all(SessionDirectory(sessions_dir / "here", lock_timeout=60), url),
            also=others,
            calls=1,
        )
    )
    assert sorted(outcome.status for outcome in exported[0]) == ["copied"] * CALLS

    there = SessionDirectory(sessions_dir / "there", lock_timeout=60)
    copies = [there.open(session.session_id) for session in sessions]
    (sessions_dir / "there").mkdir()
    for copy in copies:
        copy.path.touch()  # an empty session, for another process to lock
    imported = asyncio.run(
        while_locked_elsewhere(
            copies[0], lambda: import_all(url, there), also=tuple(c.path for c in copies[1:]), calls=1
        )
    )
    assert sorted(outcome.status for outcome in imported[0]) == ["copied"] * CALLS
    assert [copy.get_items_sync() for copy in copies] == [session.get_items_sync() for session in sessions]


def test_an_async_call_waits_for_a_blocking_block_of_another_thread(sessions_dir: Path) -> None:
    """A ``with session.locked()`` block in another thread is waited for, as another process's
    lock is; only a blocking block of the loop's own thread is a re-entry (it could never end).

    Catches (mutation testing): any blocking block taken for one of the loop's thread, which
    raised ``LockReentryError`` at once."""
    session = JSONLSession("s", sessions_dir)
    session.add_items_sync(TURNS[:1])
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with session.locked(write=True, create=False):
            held.set()
            release.wait()

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        held.wait()

        async def main() -> None:
            asyncio.get_running_loop().call_later(0.2, release.set)  # the call waits meanwhile
            await session.add_items(TURNS[1:2])

        asyncio.run(main())
    finally:
        release.set()
        thread.join()
    assert session.get_items_sync() == TURNS[:2]
