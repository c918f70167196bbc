"""Reads take the shared lock and, when big, leave the event loop free; rewrites create what they need.

Found by mutation testing: reads taking the *exclusive* lock, a big read
run on the loop instead of in a worker thread, and ``rewrite()`` on a session with no file yet
not creating it all passed the suite.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import orjson
from lock_helpers import shared_lock_elsewhere

from jsonl_session import JSONLSession


async def ticks_during(call: Callable[[], Awaitable[object]]) -> int:
    """How many times another task ran on the loop while ``call`` was awaited."""
    ticks = 0
    done = False

    async def tick() -> None:
        nonlocal ticks
        while not done:
            ticks += 1
            await asyncio.sleep(0)

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0)  # the ticker is running
    start = ticks
    await call()
    done = True
    await ticker
    return ticks - start


def test_every_read_shares_the_lock_with_another_reader(sessions_dir: Path) -> None:
    """Catches: ``get_items``, ``get_items_sync`` or ``count_items_sync`` taking the exclusive
    lock: each then waited for every reader in another process."""
    session = JSONLSession("s", sessions_dir, lock_timeout=0.3)
    session.add_items_sync([{"n": 1}, {"n": 2}])
    with shared_lock_elsewhere(session.path):
        assert asyncio.run(session.get_items()) == [{"n": 1}, {"n": 2}]
        assert asyncio.run(session.get_items(1)) == [{"n": 2}]
        assert session.get_items_sync() == [{"n": 1}, {"n": 2}]
        assert session.get_items_sync(1) == [{"n": 2}]
        assert session.count_items_sync() == 2


def test_a_big_read_leaves_the_loop_serving_other_tasks(sessions_dir: Path) -> None:
    """Catches: a read of a big file run on the loop (the size test turned around): the other
    task did not run once while 200,000 items were read. In a worker thread it runs on and on."""
    sessions_dir.mkdir()
    items = [{"role": "user", "content": f"message {n}"} for n in range(200_000)]
    (sessions_dir / "big.jsonl").write_bytes(b"".join(orjson.dumps(item) + b"\n" for item in items))
    session = JSONLSession("big", sessions_dir)

    async def main() -> int:
        reads: list[object] = []

        async def read() -> None:
            reads.append(await session.get_items())

        ticks = await ticks_during(read)
        assert reads == [items]
        return ticks

    # On the loop, only the lock's own awaits let the ticker in (a handful); in a thread the
    # interpreter hands the loop a turn every few milliseconds of the read.
    assert asyncio.run(main()) > 20


def test_rewrite_of_a_session_with_no_file_yet_creates_it(sessions_dir: Path) -> None:
    """Catches: ``rewrite()`` opening with ``create=False``."""
    session = JSONLSession("new", sessions_dir)
    with session.rewrite() as draft:
        draft.items = [{"role": "user", "content": "first"}]
    assert session.get_items_sync() == [{"role": "user", "content": "first"}]
    assert session.path.read_bytes() == b'{"role":"user","content":"first"}\n'


def test_a_call_with_nothing_to_do_yields_to_the_loop_once(sessions_dir: Path) -> None:
    """Catches: the one yield of ``get_items(0)`` and ``add_items([])`` made a timer (``sleep(1)``):
    the other task then ran for as long as the timer, not once."""
    session = JSONLSession("s", sessions_dir)

    async def main() -> list[int]:
        return [
            await ticks_during(lambda: session.get_items(0)),
            await ticks_during(lambda: session.add_items([])),
        ]

    assert asyncio.run(main()) == [1, 1]
    assert not session.path.exists()
