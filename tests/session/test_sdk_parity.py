"""Where code written against the SDK's ``SQLiteSession`` relies on a behaviour, we behave the same.

Found by running the SDK's own session tests on a JSONL session (``tests/sdk_suite``):
a negative limit is "no limit", an item that cannot be stored raises ``TypeError``, unknown
settings are refused with the SDK's own message, and compaction's snapshot is an internal read,
not a call of the public ``get_items`` that wrappers and tests count. The deviations that remain
are listed, with their reasons, in docs/sdk.md.
"""

from __future__ import annotations

import asyncio
import pickle
from pathlib import Path
from typing import Any

import pytest

from jsonl_session import ItemNotStorableError, JSONLSession, SessionSettings

ITEMS = [{"role": "user", "content": f"message {n}"} for n in range(5)]


def stored(directory: Path, **options: Any) -> JSONLSession:
    session = JSONLSession("parity", directory, **options)
    session.add_items_sync(ITEMS)
    return session


# -- a negative limit means no limit ---------------------------------------------------------


@pytest.mark.parametrize("limit", [-1, -5])
def test_a_negative_limit_reads_every_item(sessions_dir: Path, limit: int) -> None:
    session = stored(sessions_dir)
    assert session.get_items_sync(limit=limit) == ITEMS
    assert asyncio.run(session.get_items(limit=limit)) == ITEMS


def test_an_explicit_negative_limit_overrides_the_settings_limit(sessions_dir: Path) -> None:
    session = stored(sessions_dir, session_settings={"limit": 2})
    assert session.get_items_sync() == ITEMS[-2:]
    assert session.get_items_sync(limit=-1) == ITEMS
    assert asyncio.run(session.get_items(limit=-1)) == ITEMS


@pytest.mark.parametrize("given", ["dict", "ours", "sdk"])
def test_a_negative_settings_limit_reads_every_item(sessions_dir: Path, given: str) -> None:
    settings: Any = {"limit": -1} if given == "dict" else SessionSettings(limit=-1)
    if given == "sdk":
        settings = pytest.importorskip("agents.memory").SessionSettings(limit=-1)
    session = stored(sessions_dir, session_settings=settings)
    assert session.session_settings.limit == -1  # kept as given, as the SDK keeps it
    assert session.get_items_sync() == ITEMS
    assert asyncio.run(session.get_items()) == ITEMS
    assert session.get_items_sync(limit=2) == ITEMS[-2:]  # an explicit limit still applies


def test_a_negative_limit_in_resolve_is_accepted() -> None:
    assert SessionSettings(limit=3).resolve({"limit": -1}).limit == -1


def test_a_zero_limit_still_reads_nothing(sessions_dir: Path) -> None:
    session = stored(sessions_dir)
    assert session.get_items_sync(limit=0) == []
    assert asyncio.run(session.get_items(limit=0)) == []


@pytest.mark.sdk
def test_a_negative_limit_set_through_encrypted_session_settings_reads_everything(sessions_dir: Path) -> None:
    encrypt = pytest.importorskip(
        "agents.extensions.memory.encrypt_session", reason="needs openai-agents[encrypt]"
    )
    memory = pytest.importorskip("agents.memory")
    underlying = JSONLSession("parity", sessions_dir)
    session = encrypt.EncryptedSession(
        session_id="parity",
        underlying_session=underlying,
        encryption_key="a-test-key-that-is-long-enough-for-hkdf-0123456789",
    )
    asyncio.run(session.add_items(list(ITEMS)))
    session.session_settings = memory.SessionSettings(limit=-1)  # sets the underlying session's
    assert underlying.session_settings.limit == -1
    assert asyncio.run(session.get_items()) == ITEMS
    assert asyncio.run(session.get_items(limit=-1)) == ITEMS


# -- an item that cannot be stored is a TypeError (as json.dumps says) and a ValueError -------


@pytest.mark.parametrize("bad", [object(), {1, 2}, float("nan")], ids=["object", "set", "nan"])
def test_an_item_that_cannot_be_stored_is_caught_as_a_type_error(sessions_dir: Path, bad: Any) -> None:
    session = stored(sessions_dir)
    before = session.path.read_bytes()
    for add in (session.add_items_sync, lambda items: asyncio.run(session.add_items(items))):
        with pytest.raises(TypeError) as caught:
            add([{"role": "user", "content": bad}])
        assert isinstance(caught.value, ItemNotStorableError)
        assert isinstance(caught.value, ValueError)  # what callers caught before: still works
    assert session.path.read_bytes() == before  # refused before anything was written


def test_item_not_storable_error_is_a_type_error_that_still_pickles() -> None:
    assert issubclass(ItemNotStorableError, TypeError)
    assert issubclass(ItemNotStorableError, ValueError)
    error = pickle.loads(pickle.dumps(ItemNotStorableError(3, "not JSON")))
    assert isinstance(error, ItemNotStorableError) and (error.index, error.reason) == (3, "not JSON")


# -- unknown settings: the SDK's error and message -------------------------------------------


def test_unknown_settings_are_refused_with_the_sdks_message(sessions_dir: Path) -> None:
    with pytest.raises(TypeError) as caught:
        JSONLSession("parity", sessions_dir, session_settings={"limit": 1, "zeta": 2, "alpha": 3})
    assert str(caught.value) == "Unknown session settings: alpha, zeta"


@pytest.mark.sdk
def test_the_unknown_settings_message_is_the_one_the_sdk_gives(sessions_dir: Path) -> None:
    settings = pytest.importorskip("agents.memory.session_settings")
    coerce = getattr(settings, "coerce_session_settings", None)
    if coerce is None:
        pytest.skip("this SDK does not check settings dicts (coerce_session_settings is newer)")
    with pytest.raises(TypeError) as sdk:
        coerce({"limit": 1, "zeta": 2, "alpha": 3})
    with pytest.raises(TypeError) as ours:
        JSONLSession("parity", sessions_dir, session_settings={"limit": 1, "zeta": 2, "alpha": 3})
    assert str(ours.value) == str(sdk.value)


# -- compaction's snapshot is an internal read ----------------------------------------------


@pytest.mark.sdk
def test_the_compaction_snapshot_does_not_call_the_public_get_items(sessions_dir: Path) -> None:
    pytest.importorskip("agents.memory.session", reason="needs the SDK's _CompactionSnapshot")
    from agents.memory import session as sdk_session

    if not hasattr(sdk_session, "_CompactionSnapshot"):
        pytest.skip("this SDK has no compaction snapshots")
    session = stored(sessions_dir, session_settings={"limit": 1})
    calls: list[Any] = []

    async def counted_get_items(limit: int | None = None, *, wrapper: Any = None) -> list[Any]:
        calls.append(limit)
        return []

    session.get_items = counted_get_items  # type: ignore[method-assign]
    snapshot = asyncio.run(session._get_compaction_snapshot(3))
    assert calls == []  # the SDK's tests count reads through get_items: the snapshot is not one
    assert snapshot.items == ITEMS[-3:]  # nor bound by the settings limit
    assert snapshot.complete is False
    whole = asyncio.run(session._get_compaction_snapshot(10))
    assert whole.items == ITEMS and whole.complete is True
