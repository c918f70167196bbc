"""Fixture example: tests that start from a committed conversation. Copy this file into your tests.

Run it from the repository root::

    python examples/test_fixture_example.py        # or: pytest examples/test_fixture_example.py

The fixtures come from jsonl-session's pytest plugin (installed with the package):

* ``open_session_fixture`` opens ``sessions/tool_call.jsonl`` on a temporary copy, so the
  agent can add to the conversation while the committed file stays byte-identical;
* ``agent_recording`` replays ``examples/recordings/test_fixture_example/<test>.jsonl``
  offline. ``pytest --record-agents`` (or ``JSONL_SESSION_RECORD=1``) records it again
  against the real model: the default OpenAI model when ``OPENAI_API_KEY`` is set, a
  scripted stand-in otherwise, so this example also records offline.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

if __name__ == "__main__":  # before importing agents, so pytest sees a clean slate
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider", *sys.argv[1:]]))

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call

if not os.environ.get("OPENAI_API_KEY"):
    set_tracing_disabled(True)  # offline: nowhere to send traces


@function_tool
def lookup_order(order_id: str) -> str:
    """Look up an order's status."""
    return '{"order_id":"A-1042","status":"shipped","carrier":"DHL","eta":"2026-12-04"}'


def test_agent_continues_a_committed_conversation(open_session_fixture: Any) -> None:
    session = open_session_fixture("sessions/tool_call.jsonl")  # a temporary copy
    history = session.get_items_sync()
    model = ScriptedModel([[assistant_message("DHL tracking says Friday, 4 December.", item_id="msg_12")]])
    agent = Agent(name="Support", instructions="Answer from the conversation.", model=model)

    result = Runner.run_sync(agent, "Which day is that?", session=session)

    assert result.final_output == "DHL tracking says Friday, 4 December."
    assert model.first_call is not None
    assert model.first_call.input[: len(history)] == history  # the model saw the committed history
    assert len(session.get_items_sync()) == len(history) + 2  # the copy grew; the committed file did not


def test_a_read_only_fixture_refuses_writes(open_session_fixture: Any) -> None:
    session = open_session_fixture("sessions/tool_call.jsonl", mode="readonly")

    assert session.get_items_sync()[0] == {"content": "Where is my order A-1042?", "role": "user"}
    with pytest.raises(PermissionError, match="read-only"):
        session.add_items_sync([{"role": "user", "content": "this would change the fixture"}])


def real_model() -> Any:
    """The model to record with: a real one when there is an API key, a scripted stand-in offline."""
    if os.environ.get("OPENAI_API_KEY"):
        return None  # the SDK's default model
    return ScriptedModel(
        [
            [function_call("lookup_order", {"order_id": "A-1042"}, call_id="call_order_1")],
            [assistant_message("Your order A-1042 is with DHL, arriving 4 December.", item_id="msg_1")],
        ]
    )


def test_order_status_is_replayed_from_the_recording(agent_recording: Any, jsonl_sessions: Any) -> None:
    agent = Agent(
        name="Support",
        instructions="Use lookup_order for order questions. Answer in one sentence.",
        tools=[lookup_order],
        model=agent_recording.model(real_model()),
    )

    result = Runner.run_sync(agent, "Where is my order A-1042?", session=jsonl_sessions.open("support"))

    assert "DHL" in result.final_output
    assert agent_recording.calls == 2  # one call asked for the tool, one answered
