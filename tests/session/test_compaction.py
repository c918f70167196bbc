"""Compaction replaces a history in one rename: readers and followers never see it half done.

The SDK's ``OpenAIResponsesCompactionSession`` calls our ``_atomic_replace_items`` and
``_get_compaction_snapshot`` hooks (see ``jsonl_session.session.compaction``); without them it would
clear the session and add the summary, leaving an empty conversation in between.
"""

from __future__ import annotations

import asyncio
import threading
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, cast

import pytest
from lock_helpers import another_process_can_lock
from process_helpers import SPAWN, running

from jsonl_session import JSONLSession

WAIT = 60.0  # generous bound on one wait: a bug fails the test instead of hanging it

HISTORY = [
    {"role": "user" if n % 2 else "assistant", "content": f"message {n} " + "x" * 200} for n in range(300)
]
SUMMARY = [{"type": "compaction", "encrypted_content": "summary " + "y" * 50}]


def poll_history(directory: str, conn: Connection) -> None:
    """Read the session as fast as possible; report each new state, or anything not a whole history."""
    session = JSONLSession("c", directory)
    last = None
    while not conn.poll():
        items = session.get_items_sync()
        state = (
            "history" if items == HISTORY else "summary" if items == SUMMARY else f"BAD: {len(items)} items"
        )
        if state != last:
            conn.send(state)
            last = state
            if state.startswith("BAD"):
                return


def test_a_reader_process_never_sees_an_empty_or_partial_history(sessions_dir: Path) -> None:
    session = JSONLSession("c", sessions_dir)
    session.add_items_sync(HISTORY)
    parent, child = SPAWN.Pipe()
    seen = []

    async def swap(items: list[Any]) -> None:
        snapshot = await session._get_compaction_snapshot(len(HISTORY))
        if snapshot is not None and snapshot.items == HISTORY:  # the SDK's automatic path (0.23+)
            assert await snapshot.replace_suffix(0, items)
        else:  # the manual path, and SDKs without snapshots
            assert await session._atomic_replace_items(items)

    with running(poll_history, str(sessions_dir), child):
        assert parent.poll(WAIT)
        seen.append(parent.recv())
        for round_ in range(20):
            target = SUMMARY if round_ % 2 == 0 else HISTORY
            asyncio.run(swap(target))
            # The reader polls without pause the whole time; wait until it has seen the result.
            assert parent.poll(WAIT), "the reader stopped reporting"
            seen.append(parent.recv())
            assert seen[-1] == ("summary" if target is SUMMARY else "history"), seen
        parent.send("stop")
    assert seen == ["history", *(["summary", "history"] * 10)]


def hold_lock(directory: str, conn: Connection) -> None:
    """Hold the session's write lock until told to let go."""
    with JSONLSession("c", directory).rewrite():
        conn.send("locked")
        conn.recv()


def test_replacement_waits_for_the_lock_without_blocking_the_loop(sessions_dir: Path) -> None:
    session = JSONLSession("c", sessions_dir)
    session.add_items_sync(HISTORY)
    parent, child = SPAWN.Pipe()

    async def main() -> None:
        replacing = asyncio.create_task(session._atomic_replace_items(SUMMARY))
        await asyncio.sleep(0)  # let it start: it now waits for the other process's lock
        # Only this coroutine can free the lock. Were the wait blocking the loop, we would never
        # get here and the replacement would end in LockTimeout instead.
        parent.send("release")
        assert await replacing is True

    with running(hold_lock, str(sessions_dir), child):
        assert parent.poll(WAIT) and parent.recv() == "locked"
        asyncio.run(main())
    assert session.get_items_sync() == SUMMARY


def test_a_replacement_cancelled_while_waiting_for_the_lock_changes_nothing(sessions_dir: Path) -> None:
    session = JSONLSession("c", sessions_dir)
    session.add_items_sync(HISTORY)
    parent, child = SPAWN.Pipe()

    async def main() -> None:
        replacing = asyncio.create_task(session._atomic_replace_items(SUMMARY))
        await asyncio.sleep(0)  # it tried the lock, found it held, and now waits on the loop
        replacing.cancel()
        parent.send("release")
        with pytest.raises(asyncio.CancelledError):
            await replacing

    with running(hold_lock, str(sessions_dir), child):
        assert parent.poll(WAIT) and parent.recv() == "locked"
        asyncio.run(main())
    assert session.get_items_sync() == HISTORY
    assert another_process_can_lock(session.path)


def test_a_cancelled_replacement_is_all_or_nothing_and_unlocks_when_done(sessions_dir: Path) -> None:
    """Cancelled after 0 to 40 loop turns: before the rename started (nothing changed) or after
    (it completes in its thread, and unlocks); both happen, nothing in between ever does."""

    async def cancel_after(session: JSONLSession, turns: int) -> None:
        replacing = asyncio.create_task(session._atomic_replace_items(SUMMARY))
        for _ in range(turns):
            await asyncio.sleep(0)
        replacing.cancel()
        try:
            await replacing
        except asyncio.CancelledError:
            pass

    outcomes = set()
    for turns in range(40):
        session = JSONLSession(f"c{turns}", sessions_dir)
        session.add_items_sync(HISTORY)
        asyncio.run(cancel_after(session, turns))
        with session._handle.locked(write=True, create=False, timeout=WAIT):
            pass  # a rename still running in its thread finishes and unlocks
        items = session.get_items_sync()
        assert items in (HISTORY, SUMMARY), len(items)
        outcomes.add("replaced" if items == SUMMARY else "unchanged")
        assert another_process_can_lock(session.path)
        session.close()
    assert outcomes == {"replaced", "unchanged"}


@pytest.mark.sdk
def test_snapshot_replaces_only_the_suffix_and_declines_a_changed_one(sessions_dir: Path) -> None:
    pytest.importorskip("agents.memory.session", reason="the Agents SDK is not installed")
    session = JSONLSession("c", sessions_dir)
    items = [{"role": "user", "content": str(n)} for n in range(10)]
    session.add_items_sync(items)

    async def main() -> None:
        snapshot = await session._get_compaction_snapshot(3)
        if snapshot is None:
            pytest.skip("this openai-agents has no compaction snapshots (0.23+)")
        assert (snapshot.items, snapshot.complete) == (items[-3:], False)
        assert await snapshot.replace_suffix(1, SUMMARY)
        assert session.get_items_sync() == items[:8] + SUMMARY

        stale = await session._get_compaction_snapshot(100)
        assert (len(stale.items), stale.complete) == (9, True)
        await session.add_items([{"role": "user", "content": "meanwhile"}])
        before = session.path.read_bytes()
        assert await stale.replace_suffix(0, SUMMARY) is False  # the stored suffix changed: no rewrite
        assert session.path.read_bytes() == before
        assert await stale.replace_suffix(9, SUMMARY) is False  # nothing to replace

        # EncryptedSession passes prune_prefix: expired items at the start of what is kept go.
        fresh = await session._get_compaction_snapshot(1, prune_prefix=lambda item: item["content"] in "012")
        assert await fresh.replace_suffix(0, SUMMARY)
        assert session.get_items_sync() == items[3:8] + SUMMARY + SUMMARY

    asyncio.run(main())


def test_subclasses_do_not_inherit_the_hooks(sessions_dir: Path) -> None:
    class Custom(JSONLSession):
        pass

    custom = Custom("c", sessions_dir)
    custom.add_items_sync(HISTORY[:3])
    assert asyncio.run(custom._atomic_replace_items(SUMMARY)) is False
    assert asyncio.run(custom._get_compaction_snapshot(3)) is None
    assert custom.get_items_sync() == HISTORY[:3]


@pytest.mark.sdk
@pytest.mark.parametrize("how", ["manual", "runner"])
def test_a_follower_sees_compaction_as_one_replaced_change(sessions_dir: Path, how: str) -> None:
    pytest.importorskip("agents")
    import agents
    from agents.memory.openai_responses_compaction_session import OpenAIResponsesCompactionSession
    from sdk_helpers import SUMMARY as COMPACTED
    from sdk_helpers import CompactClient, FakeModel, sdk_version

    if sdk_version() < (0, 24 if how == "manual" else 23):
        pytest.skip("this openai-agents replaces history by clear + add (no atomic hooks yet)")
    agents.set_tracing_disabled(True)
    session = JSONLSession("c", sessions_dir)
    session.add_items_sync([{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"}])
    compacting = OpenAIResponsesCompactionSession(
        "c",
        session,
        client=cast(Any, CompactClient()),
        compaction_mode="input",
        should_trigger_compaction=lambda context: len(context["session_items"]) >= 4,
    )
    changes: list[Any] = []
    started, done = threading.Event(), threading.Event()

    def follow() -> None:
        with session.watch_sync(start="all", stop_event=done) as watch:
            for change in watch:
                changes.append(change)
                started.set()
                if change.items == [COMPACTED]:
                    return

    inode = session.path.stat().st_ino
    follower = threading.Thread(target=follow)
    follower.start()
    try:
        assert started.wait(WAIT)
        if how == "manual":
            asyncio.run(compacting.run_compaction({"force": True}))
        else:
            agent = agents.Agent(name="A", model=FakeModel(["a2"]))
            agents.Runner.run_sync(agent, "q2", session=compacting)
        follower.join(WAIT)
    finally:
        done.set()
        follower.join(WAIT)
    assert session.get_items_sync() == [COMPACTED]
    # Replaced by a rename (a new inode), not truncated and refilled in place: the SDK's fallback
    # (clear, then add) keeps the inode, and a follower fast enough would see it empty.
    assert session.path.stat().st_ino != inode
    kinds = [(change.kind, change.items) for change in changes[1:]]
    while how == "runner" and kinds and kinds[0][0] == "appended":  # the turn itself, if seen before
        kinds = kinds[1:]
    assert kinds == [("replaced", [COMPACTED])]  # never "cleared" then "appended"
