"""A signal handler raising right after the lock is taken, its exception kept by the caller.

The lock must be released before the exception leaves ``__enter__`` / ``__aenter__``. A weak
reference to the lock object releases a lock whose block was abandoned (``core/locking.py``),
but only once that object is freed: a caller that keeps the exception (a log, a retry loop's
``last_error``, ``sys.last_value``) keeps its traceback, whose frames keep the lock object,
so a missing release there stranded the lock for good while the random-signal tests
(``test_lock_signals.py``, which drop their exceptions) still passed.

The "signal" is made deterministic: the function that took the lock raises as it returns.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lock_helpers import another_process_can_lock

from jsonl_session import JSONLSession
from jsonl_session.core.locking import FileHandle
from jsonl_session.core.transaction import Transaction


class Interrupted(Exception):
    """What the signal handler raises."""


def raising_after(function: Any) -> Any:
    """``function``, then the handler's exception: the lock is taken, the caller never sees its fd."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        function(*args, **kwargs)
        raise Interrupted

    return wrapper


def assert_free(session: JSONLSession) -> None:
    with session._handle.try_locked(write=True, create=False) as fd:
        assert fd >= 0, "this process still holds the lock"
    assert another_process_can_lock(session.path), "another process cannot take the lock"


def test_the_lock_of_a_blocking_call_is_released_when_its_exception_is_kept(sessions_dir: Path) -> None:
    """Catches: ``Locked.__enter__`` without its ``release`` on the way out."""
    session = JSONLSession("kept", sessions_dir, lock_timeout=0)
    session.add_items_sync([{"n": 1}])
    handle = session._handle
    kept: list[BaseException] = []
    handle.lock_waiting = raising_after(handle.lock_waiting)  # type: ignore[method-assign]
    try:
        for call in (
            lambda: session.add_items_sync([{"n": 2}]),
            session.pop_item_sync,
            session.get_items_sync,
        ):
            with pytest.raises(Interrupted) as caught:
                call()
            kept.append(caught.value)  # the traceback, and the frames in it, stay alive
    finally:
        del handle.lock_waiting
    assert_free(session)
    assert session.get_items_sync() == [{"n": 1}]
    assert len(kept) == 3


def test_the_lock_of_an_async_call_is_released_when_its_exception_is_kept(sessions_dir: Path) -> None:
    """Catches: ``AsyncLocked.__aenter__`` without its ``release`` on the way out."""
    session = JSONLSession("kept", sessions_dir, lock_timeout=0)
    session.add_items_sync([{"n": 1}])
    handle = session._handle
    kept: list[BaseException] = []
    handle.try_lock = raising_after(handle.try_lock)  # type: ignore[method-assign]

    async def calls() -> None:
        for call in (lambda: session.add_items([{"n": 2}]), session.pop_item, session.get_items):
            with pytest.raises(Interrupted) as caught:
                await call()
            kept.append(caught.value)

    try:
        asyncio.run(calls())
    finally:
        del handle.try_lock
    assert_free(session)
    assert session.get_items_sync() == [{"n": 1}]
    assert len(kept) == 3


def test_a_transaction_unlocks_when_its_exception_is_kept(
    sessions_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one transaction helper (``check``, ``grep``, sidecars): the same, through a handle of its own."""
    session = JSONLSession("kept", sessions_dir, lock_timeout=0)
    session.add_items_sync([{"n": 1}])
    monkeypatch.setattr(FileHandle, "lock_waiting", raising_after(FileHandle.lock_waiting))
    with pytest.raises(Interrupted) as caught, Transaction(session.path, write=True, timeout=0):
        pass
    kept = caught.value
    monkeypatch.undo()
    assert_free(session)
    assert kept is not None
