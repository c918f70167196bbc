"""The Session protocol contract, run over both ways in: the async methods the SDK calls and
their blocking twins."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from jsonl_session import JSONLSession, SessionSettings


class Sync:
    def __init__(self, session: JSONLSession) -> None:
        self.s = session

    def get(self, limit: int | None = None) -> list[Any]:
        return self.s.get_items_sync(limit)

    def add(self, items: list[Any]) -> None:
        self.s.add_items_sync(items)

    def pop(self) -> Any:
        return self.s.pop_item_sync()

    def clear(self) -> None:
        self.s.clear_session_sync()


class Async(Sync):
    def get(self, limit: int | None = None) -> list[Any]:
        return asyncio.run(self.s.get_items(limit))

    def add(self, items: list[Any]) -> None:
        asyncio.run(self.s.add_items(items))

    def pop(self) -> Any:
        return asyncio.run(self.s.pop_item())

    def clear(self) -> None:
        asyncio.run(self.s.clear_session())


@pytest.fixture(params=[Sync, Async], ids=["sync", "async"])
def api(request: pytest.FixtureRequest, session: JSONLSession) -> Sync:
    api: Sync = request.param(session)
    return api


def msg(i: int) -> dict[str, Any]:
    return {"role": "user", "content": f"message {i}"}


def test_new_session_is_empty_and_creates_no_file(api: Sync, session: JSONLSession) -> None:
    assert api.get() == []
    assert api.get(5) == []
    assert api.pop() is None
    api.clear()
    assert not session.path.exists()


def test_items_come_back_in_order(api: Sync) -> None:
    api.add([msg(0), msg(1)])
    api.add([msg(2)])
    assert api.get() == [msg(0), msg(1), msg(2)]


def test_limit_returns_newest_in_chronological_order(api: Sync) -> None:
    api.add([msg(i) for i in range(10)])
    assert api.get(3) == [msg(7), msg(8), msg(9)]
    assert api.get(0) == []
    assert api.get(100) == [msg(i) for i in range(10)]


def test_limit_falls_back_to_session_settings(sessions_dir: Path) -> None:
    for settings in ({"limit": 2}, SessionSettings(limit=2)):
        session = JSONLSession("s", sessions_dir, session_settings=settings)
        session.clear_session_sync()
        session.add_items_sync([msg(i) for i in range(5)])
        assert session.get_items_sync() == [msg(3), msg(4)]
        assert asyncio.run(session.get_items()) == [msg(3), msg(4)]
        assert session.get_items_sync(4) == [msg(1), msg(2), msg(3), msg(4)]


def test_session_settings_resolve_like_the_sdk(sessions_dir: Path) -> None:
    session = JSONLSession("s", sessions_dir, session_settings={"limit": 10})
    assert session.session_settings.limit == 10
    assert session.session_settings.resolve({"limit": 3}).limit == 3
    assert session.session_settings.resolve(None).limit == 10
    assert JSONLSession("t", sessions_dir).session_settings.limit is None


def test_pop_returns_newest_and_truncates(api: Sync, session: JSONLSession) -> None:
    api.add([msg(0), msg(1)])
    size_with_one = len(session.path.read_bytes().splitlines()[0]) + 1
    assert api.pop() == msg(1)
    assert session.path.stat().st_size == size_with_one
    assert api.pop() == msg(0)
    assert api.pop() is None
    assert session.path.read_bytes() == b""


def test_clear_leaves_an_empty_file(api: Sync, session: JSONLSession) -> None:
    api.add([msg(0)])
    api.clear()
    assert api.get() == []
    assert session.path.read_bytes() == b""
    api.add([msg(1)])
    assert api.get() == [msg(1)]


def test_adding_nothing_writes_nothing(api: Sync, session: JSONLSession) -> None:
    api.add([])
    assert not session.path.exists()


@pytest.mark.parametrize("limit", [1.5, "3", True])  # a negative limit is no limit (test_sdk_parity.py)
def test_invalid_limit_is_refused(api: Sync, limit: Any) -> None:
    with pytest.raises(ValueError, match="limit"):
        api.get(limit)


def test_a_single_dict_instead_of_a_list_is_refused(api: Sync, session: JSONLSession) -> None:
    with pytest.raises(TypeError, match="list of items"):
        api.add(msg(0))  # type: ignore[arg-type]
    assert not session.path.exists()


def test_items_round_trip_exactly_without_envelope(api: Sync, session: JSONLSession) -> None:
    item = {
        "type": "function_call",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": '{"city": "Zürich"}',
        "nested": {"z": 1, "a": [1.5, -0.0, None, True, "日本語"]},
    }
    api.add([item])
    assert api.get() == [item]
    line = session.path.read_bytes()
    assert (
        line
        == (
            '{"type":"function_call","call_id":"call_1","name":"get_weather",'
            '"arguments":"{\\"city\\": \\"Zürich\\"}","nested":{"z":1,"a":[1.5,-0.0,null,true,"日本語"]}}\n'
        ).encode()
    )


@pytest.mark.parametrize("limit", [1, 2, 7, 30, 99, 100, 101])
def test_limited_reads_across_block_boundaries(session: JSONLSession, limit: int) -> None:
    # Items of very different sizes, so the newest-n read must grow its block several times.
    items = [{"i": i, "text": "é" * (i * 97 % 5000)} for i in range(100)]
    session.add_items_sync(items)
    assert session.get_items_sync(limit) == items[-limit:]
    with open(session.path, "ab") as f:
        f.write(b"\n\n")  # trailing blank lines change nothing
    assert session.get_items_sync(limit) == items[-limit:]
    assert session.pop_item_sync() == items[-1]
