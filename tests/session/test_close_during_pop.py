"""``close()`` while a durable pop's worker still holds the lock: the ``.times`` descriptor the
worker is about to use stays open until the lock is released (found in review).

The worker drops the popped item's record after the sync; a ``close()`` from the loop could
close that descriptor between the worker's look at it and its use, and then the record outlived
its line or, had the number been reused by then, the blank went into another file. The session
file's own descriptor already waited for the release; now the sidecar's does too.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from watch_helpers import open_fds

from jsonl_session import JSONLSession
from jsonl_session.core import item_times, storage


def _open(path: Path) -> bool:
    """Whether this process has a descriptor open on ``path``."""
    return str(path.resolve()) in open_fds().values()


@pytest.mark.timeout(60)
def test_a_close_while_the_pops_worker_syncs_waits_for_the_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = JSONLSession("s", tmp_path)
    times = Path(f"{session.path}.times")
    session.add_items_sync([{"n": 1}])
    session.add_items_sync([{"n": 2}])  # this object's last: its pop blanks the record
    syncing, go = threading.Event(), threading.Event()
    real = storage._fdatasync

    def held_sync(fd: int) -> None:
        syncing.set()
        assert go.wait(30)
        real(fd)

    monkeypatch.setattr(storage, "_fdatasync", held_sync)

    async def pop_and_close_meanwhile() -> object:
        pop = asyncio.ensure_future(session.pop_item())
        assert await asyncio.to_thread(syncing.wait, 30)  # the worker is inside the sync
        session.close()
        still_open = _open(times)  # the worker holds the lock: the sidecar stays open for it
        go.set()
        item = await pop
        assert still_open
        assert not _open(times) and not _open(session.path)  # closed at the release
        return item

    assert asyncio.run(pop_and_close_meanwhile()) == {"n": 2}
    monkeypatch.setattr(storage, "_fdatasync", real)
    assert session.path.read_bytes() == b'{"n":1}\n'
    records = item_times.parse_records(times.read_bytes())
    assert [record[2] for record in records] == [item_times.fingerprint(b'{"n":1}')]
    assert session.get_items_sync() == [{"n": 1}]  # and the session works on, reopened
    session.add_items_sync([{"n": 3}])
    assert [added is not None for _, added in session.get_items_with_times_sync()] == [True, True]
