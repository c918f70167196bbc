"""Every write waits for the readers of another process: it takes the lock exclusively.

Found by mutation testing: ``pop_item_sync`` under the *shared* lock passed the
suite. A write beside a reader can cut the line the reader is in the middle of.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from lock_helpers import shared_lock_elsewhere

from jsonl_session import JSONLSession, LockTimeout, TornTailWarning

ITEMS = [{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}]

WRITES: dict[str, Callable[[JSONLSession], object]] = {
    "add_items_sync": lambda session: session.add_items_sync([{"n": 3}]),
    "add_items": lambda session: asyncio.run(session.add_items([{"n": 3}])),
    "pop_item_sync": lambda session: session.pop_item_sync(),
    "pop_item": lambda session: asyncio.run(session.pop_item()),
    "clear_session_sync": lambda session: session.clear_session_sync(),
    "clear_session": lambda session: asyncio.run(session.clear_session()),
    "replace_items_sync": lambda session: session.replace_items_sync([{"n": 3}]),
    "rewind_sync": lambda session: session.rewind_sync(1),
    "rewind": lambda session: asyncio.run(session.rewind(1)),
    "rewrite": lambda session: _drop_the_first(session),
}


def _drop_the_first(session: JSONLSession) -> None:
    with session.rewrite() as draft:
        draft.items = draft.items[1:]


@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_write_waits_for_a_reader_elsewhere_and_changes_nothing(sessions_dir: Path, write: str) -> None:
    session = JSONLSession("s", sessions_dir, lock_timeout=0.2)
    session.add_items_sync(ITEMS)
    before = session.path.read_bytes()
    with shared_lock_elsewhere(session.path), pytest.raises(LockTimeout):
        WRITES[write](session)
    assert session.path.read_bytes() == before
    WRITES[write](session)  # and once the reader is gone, it goes through
    assert session.path.read_bytes() != before


def test_repair_waits_for_a_reader_elsewhere_and_makes_no_file(sessions_dir: Path) -> None:
    """Catches: ``repair_sync`` under the shared lock, or creating a session it was asked to repair."""
    session = JSONLSession("s", sessions_dir, lock_timeout=0.2)
    assert session.repair_sync() is None
    assert not session.path.exists()
    session.add_items_sync(ITEMS)
    with session.path.open("ab") as file:
        file.write(b'{"role":"assistant","con')
    before = session.path.read_bytes()
    with shared_lock_elsewhere(session.path), pytest.raises(LockTimeout):
        session.repair_sync()
    assert session.path.read_bytes() == before
    with pytest.warns(TornTailWarning):
        assert session.repair_sync() == b'{"role":"assistant","con'
    assert session.get_items_sync() == ITEMS
