"""The ``durable=False`` async append in one call (``FileHandle.try_append``), on real files.

Between two of its own appends or pops a handle need not read the file's last byte, nor the
``.times`` sidecar's size: what it skips must come back the moment anyone else changes the
file (in place, by rename, by deleting it, from another process) or holds its lock.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from lock_helpers import shared_lock_elsewhere

from jsonl_session import JSONLSession
from jsonl_session.core import item_times


def fast(directory: Path, name: str = "s") -> JSONLSession:
    return JSONLSession(name, directory, durable=False)


async def add(session: JSONLSession, *items: dict[str, Any]) -> None:
    await session.add_items(list(items))


def times_known(session: JSONLSession) -> list[bool]:
    return [when is not None for _, when in session.get_items_with_times_sync()]


def records(session: JSONLSession) -> list[Any]:
    return item_times.parse_records(Path(f"{session.path}.times").read_bytes())


def test_appends_and_pops_in_turn_keep_every_line_and_its_time(tmp_path: Path) -> None:
    ours, theirs = fast(tmp_path), fast(tmp_path)  # two handles on one file, as two processes

    async def main() -> None:
        await add(ours, {"n": 1})
        await add(ours, {"n": 2})
        assert await ours.pop_item() == {"n": 2}
        await add(ours, {"n": 3})
        await add(theirs, {"n": 4})
        await add(ours, {"n": 5}, {"n": 6})
        assert await theirs.pop_item() == {"n": 6}
        await add(ours, {"n": 7})
        assert await ours.pop_item() == {"n": 7}
        await add(theirs, {"n": 8})
        await add(ours, {"n": 9})

    asyncio.run(main())
    expected = [1, 3, 4, 5, 8, 9]
    assert ours.path.read_bytes() == b"".join(b'{"n":%d}\n' % n for n in expected)
    assert times_known(ours) == [True] * len(expected)
    assert len(records(ours)) == len(expected)  # every record whole: none written over another


def test_a_same_size_edit_in_place_that_drops_the_last_newline_is_seen(tmp_path: Path) -> None:
    """Catches an append that trusts its own last write by the file's inode and size alone."""
    session = fast(tmp_path)
    session.add_items_sync([{"z": 0}])  # made, so that the async appends below are one call each
    asyncio.run(add(session, {"a": 1}))
    with session.path.open("r+b") as file:  # an editor that writes in place, no final newline
        file.seek(8)
        file.write(b'{"a":12}')
    later = time.time_ns()  # saved after the append, as any edit by hand is
    os.utime(session.path, ns=(later, later))
    asyncio.run(add(session, {"c": 3}))
    assert session.path.read_bytes() == b'{"z":0}\n{"a":12}\n{"c":3}\n'


def test_an_edit_that_changes_the_size_is_seen(tmp_path: Path) -> None:
    session = fast(tmp_path)
    asyncio.run(add(session, {"a": 1}))
    with session.path.open("ab") as file:
        file.write(b'{"b":2}')  # the last line without its newline
    asyncio.run(add(session, {"c": 3}))
    assert session.path.read_bytes() == b'{"a":1}\n{"b":2}\n{"c":3}\n'


def test_a_file_replaced_by_rename_between_appends_gets_the_next_one(tmp_path: Path) -> None:
    session = fast(tmp_path)
    asyncio.run(add(session, {"a": 1}))
    new = tmp_path / "new"
    new.write_bytes(b'{"x":1}')  # the same size as the old file, and no newline
    os.replace(new, session.path)
    asyncio.run(add(session, {"c": 3}))
    assert session.path.read_bytes() == b'{"x":1}\n{"c":3}\n'
    assert times_known(session) == [False, True]


def test_a_file_deleted_between_appends_is_made_again(tmp_path: Path) -> None:
    session = fast(tmp_path)
    asyncio.run(add(session, {"a": 1}))
    session.path.unlink()
    asyncio.run(add(session, {"b": 2}))
    assert session.path.read_bytes() == b'{"b":2}\n'
    assert times_known(session) == [True]


def test_a_lock_held_by_another_process_is_waited_for(tmp_path: Path) -> None:
    session = fast(tmp_path)
    asyncio.run(add(session, {"a": 1}))

    async def main() -> None:
        with shared_lock_elsewhere(session.path):
            writing = asyncio.create_task(add(session, {"b": 2}))
            for _ in range(50):
                await asyncio.sleep(0)
            assert not writing.done()
            assert session.path.read_bytes() == b'{"a":1}\n'
        await asyncio.wait_for(writing, 30)

    asyncio.run(main())
    assert session.path.read_bytes() == b'{"a":1}\n{"b":2}\n'
    assert times_known(session) == [True, True]


def test_a_sidecar_deleted_by_hand_is_written_again_within_a_second(tmp_path: Path) -> None:
    """The one thing that changes the sidecar and not the session: noticed by the recheck,
    at least once a second (``times_log``), not at the next append."""
    session = fast(tmp_path)
    sidecar = Path(f"{session.path}.times")

    async def main() -> int:
        await add(session, {"n": 0})
        await add(session, {"n": 0})  # this handle's second append: the first made the file
        sidecar.unlink()
        deadline = time.monotonic() + 10
        n = 0
        while not sidecar.exists() and time.monotonic() < deadline:
            n += 1
            await add(session, {"n": n})
            await asyncio.sleep(0.01)
        return n

    last = asyncio.run(main())
    assert sidecar.exists()
    assert [item for item, when in session.get_items_with_times_sync() if when is not None] == [{"n": last}]
