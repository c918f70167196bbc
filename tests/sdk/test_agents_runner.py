"""The real Agents SDK Runner, offline with a scripted model, remembering through a JSONLSession."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest

from jsonl_session import JSONLSession

agents = pytest.importorskip("agents")
testing = pytest.importorskip("agents.testing")
agents.set_tracing_disabled(True)  # offline: no trace export attempts

from sdk_helpers import texts


def test_second_turn_sees_the_first_turn(sessions_dir: Path) -> None:
    model = testing.ScriptedModel(
        [
            [testing.assistant_message("San Francisco.", item_id="m1")],
            [testing.assistant_message("California.", item_id="m2")],
        ]
    )
    agent = agents.Agent(name="Assistant", model=model)
    session = JSONLSession("convo_123", sessions_dir)

    async def main() -> None:
        await agents.Runner.run(agent, "What city is the Golden Gate Bridge in?", session=session)
        result = await agents.Runner.run(agent, "What state is it in?", session=session)
        assert result.final_output == "California."

    asyncio.run(main())
    second_call = model.calls[1]
    assert texts(second_call.input) == [
        "What city is the Golden Gate Bridge in?",
        "San Francisco.",
        "What state is it in?",
    ]
    items = session.get_items_sync()
    assert [i.get("role") for i in items] == ["user", "assistant", "user", "assistant"]
    lines = session.path.read_bytes().splitlines()
    assert [orjson.loads(line) for line in lines] == items  # exactly what is stored, no envelope


def test_function_tool_turn_stores_call_and_output(sessions_dir: Path) -> None:
    @agents.function_tool  # type: ignore[untyped-decorator]
    def get_weather(city: str) -> str:
        """Weather for a city."""
        return f"Sunny in {city}"

    model = testing.ScriptedModel(
        [
            [testing.function_call("get_weather", {"city": "Zürich"}, call_id="call_1")],
            [testing.assistant_message("It is sunny in Zürich.", item_id="m1")],
        ]
    )
    agent = agents.Agent(name="Assistant", model=model, tools=[get_weather])
    session = JSONLSession("tools", sessions_dir)
    result = agents.Runner.run_sync(agent, "Weather in Zürich?", session=session)
    assert result.final_output == "It is sunny in Zürich."
    items = session.get_items_sync()
    types = [i.get("type", "message") for i in items]
    assert types == ["message", "function_call", "function_call_output", "message"]
    call, output = items[1], items[2]
    assert call["call_id"] == output["call_id"] == "call_1"
    assert output["output"] == "Sunny in Zürich"
    raw = session.path.read_text(encoding="utf-8")
    assert "Zürich" in raw  # non-ASCII written as-is: grep works


def test_run_sync_and_run_streamed_share_the_history(sessions_dir: Path) -> None:
    model = testing.ScriptedModel(
        [[testing.assistant_message("one", item_id="m1")], [testing.assistant_message("two", item_id="m2")]]
    )
    agent = agents.Agent(name="Assistant", model=model)
    session = JSONLSession("modes", sessions_dir, session_settings={"limit": 50})
    agents.Runner.run_sync(agent, "first", session=session)

    async def streamed() -> None:
        result = agents.Runner.run_streamed(agent, "second", session=session)
        async for _ in result.stream_events():
            pass
        assert result.final_output == "two"

    asyncio.run(streamed())
    assert texts(model.calls[1].input) == ["first", "one", "second"]
    assert len(session.get_items_sync()) == 4


def test_session_limit_bounds_the_history_the_model_sees(sessions_dir: Path) -> None:
    session = JSONLSession("limited", sessions_dir, session_settings={"limit": 2})
    session.add_items_sync([{"role": "user", "content": f"old {i}"} for i in range(10)])
    model = testing.ScriptedModel([[testing.assistant_message("ok", item_id="m1")]])
    agents.Runner.run_sync(agents.Agent(name="A", model=model), "new", session=session)
    assert texts(model.calls[0].input) == ["old 8", "old 9", "new"]
