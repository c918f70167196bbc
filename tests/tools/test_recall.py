"""``session_search_tool``: an agent looks up its past conversations, end to end with the real Runner.

The scripted model works on every supported openai-agents release (not ``agents.testing``,
which only recent ones have): its first answer calls the tool, its second answers in words;
the test reads what the model was given the second time.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from jsonl_session import JSONLSession
from jsonl_session.tools.recall import search_sessions

agents = pytest.importorskip("agents")
agents.set_tracing_disabled(True)

from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall
from sdk_helpers import reply

from jsonl_session import session_search_tool


def fill(folder: Path) -> None:
    """Three past sessions: one with the Golden Gate in turn 2, one with it 30 times, one without."""
    JSONLSession("trip", folder).add_items_sync(
        [
            {"role": "user", "content": "Plan a day in San Francisco"},
            {"role": "assistant", "content": "Start at the Ferry Building."},
            {"role": "user", "content": "Can we walk across the Golden Gate bridge?"},
            {"role": "assistant", "content": "Yes: the Golden Gate Bridge has a pedestrian walkway."},
        ]
    )
    many = []
    for n in range(30):
        many += [
            {"role": "user", "content": f"Question {n} about the golden gate " + "x" * 200},
            {"role": "assistant", "content": "ok"},
        ]
    JSONLSession("bridges", folder).add_items_sync(many)
    JSONLSession("other", folder).add_items_sync([{"role": "user", "content": "Golden retrievers?"}])
    later = time.time() + 60
    os.utime(folder / "trip.jsonl", (later, later))  # the newest: its matches come first


def test_search_finds_every_word_with_session_and_turn(sessions_dir: Path) -> None:
    fill(sessions_dir)
    found = search_sessions(sessions_dir, "GOLDEN gate", session_id="trip")
    assert [(s.session_id, s.turn, s.role) for s in found.snippets] == [
        ("trip", 2, "user"),
        ("trip", 2, "assistant"),
    ]
    assert found.total == 2
    assert search_sessions(sessions_dir, "golden gate", exclude=["trip"]).total == 30
    assert search_sessions(sessions_dir, "retrievers golden").snippets[0].session_id == "other"
    assert search_sessions(sessions_dir, "   ").total == 0


def test_the_answer_is_capped_and_says_how_many_more(sessions_dir: Path) -> None:
    fill(sessions_dir)
    found = search_sessions(sessions_dir, "golden gate", max_results=50, snippet_chars=120)
    assert found.total == 32 and all(len(s.text) <= 122 for s in found.snippets)
    text = found.render(1000)
    assert len(text) <= 1000
    assert text.startswith("32 matches for 'golden gate' (showing ")
    shown = text.count("\n- [session ")
    assert 0 < shown < 32 and f"({32 - shown} more matches not shown" in text


class CallsTheToolThenAnswers(Model):
    """First call: ask the recall tool; second: answer. Records each input it was given."""

    def __init__(self, arguments: dict[str, Any]) -> None:
        self.arguments = arguments
        self.inputs: list[Any] = []

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        self.inputs.append(kwargs["input"] if "input" in kwargs else args[1])
        if len(self.inputs) == 1:
            call = ResponseFunctionToolCall(
                type="function_call",
                id="fc_1",
                call_id="call_1",
                name="search_past_conversations",
                arguments=json.dumps(self.arguments),
                status="completed",
            )
            return ModelResponse(output=[call], usage=Usage(), response_id="resp_1")
        return ModelResponse(
            output=[reply("Yes, you asked that.", "msg_2")], usage=Usage(), response_id="resp_2"
        )

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


@pytest.mark.sdk
def test_an_agent_calls_the_tool_and_the_bounded_snippets_reach_the_model(sessions_dir: Path) -> None:
    fill(sessions_dir)
    model = CallsTheToolThenAnswers({"query": "golden gate", "session_id": None})
    recall = session_search_tool(sessions_dir, max_results=5, max_chars=600, exclude=["today"])
    agent = agents.Agent(name="Assistant", model=model, tools=[recall])
    today = JSONLSession("today", sessions_dir)  # excluded: its own question would match
    result = agents.Runner.run_sync(agent, "Did I ask about the Golden Gate before?", session=today)
    assert result.final_output == "Yes, you asked that."

    (output,) = [item for item in model.inputs[1] if item.get("type") == "function_call_output"]
    text = output["output"]
    assert len(text) <= 600
    assert text.startswith("32 matches for 'golden gate' (showing ")
    assert "more matches not shown" in text
    assert "[session trip, turn 2, user] Can we walk across the Golden Gate bridge?" in text  # newest first
    # and the session keeps the call and its output, as for any tool
    stored = today.get_items_sync()
    assert [item.get("type", "message") for item in stored] == [
        "message",
        "function_call",
        "function_call_output",
        "message",
    ]
    assert stored[2]["output"] == text
