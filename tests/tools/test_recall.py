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
from jsonl_session.tools.recall import Found, search_sessions

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


# Scoping and exclusions: alice's agent must never read bob's sessions nor the ones it excludes.

SECRETS = {
    "alice-private": "alice bank PIN 1111 kept private",
    "bob-1": "bob bank PIN 2222 for the card",
    "unowned": "someone bank PIN 3333 of nobody",
}


def fill_owners(folder: Path) -> None:
    """alice-old (alice's, tagged support): no secret; the others hold one each, out of reach."""
    old = JSONLSession("alice-old", folder)
    old.add_items_sync([{"role": "user", "content": "Where do I find my bank PIN letter?"}])
    old.set_metadata_sync(owner="alice", tags=["support"])
    private = JSONLSession("alice-private", folder)
    private.add_items_sync([{"role": "user", "content": SECRETS["alice-private"]}])
    private.set_metadata_sync(owner="alice", tags=["support"])
    bob = JSONLSession("bob-1", folder)
    bob.add_items_sync([{"role": "user", "content": SECRETS["bob-1"]}])
    bob.set_metadata_sync(owner="bob", tags=["support"])
    JSONLSession("unowned", folder).add_items_sync([{"role": "user", "content": SECRETS["unowned"]}])


def test_an_excluded_session_named_by_id_answers_like_an_unknown_one(sessions_dir: Path) -> None:
    fill_owners(sessions_dir)
    unknown = search_sessions(sessions_dir, "bank pin", session_id="nobody-at-all")
    assert unknown == search_sessions(
        sessions_dir, "bank pin", session_id="alice-private", exclude=["alice-private"]
    )
    assert unknown.total == 0
    # without the exclusion the id is searchable: the refusal is the exclusion, not the id
    assert search_sessions(sessions_dir, "bank pin", session_id="alice-private").total == 1
    everyone = search_sessions(sessions_dir, "bank pin", exclude=["alice-private"])
    assert {s.session_id for s in everyone.snippets} == {"alice-old", "bob-1", "unowned"}


def test_owner_and_tags_scope_every_path(sessions_dir: Path) -> None:
    fill_owners(sessions_dir)
    alices = search_sessions(sessions_dir, "bank pin", owner="alice")
    assert {s.session_id for s in alices.snippets} == {"alice-old", "alice-private"}
    scoped = search_sessions(sessions_dir, "bank pin", owner="alice", exclude=["alice-private"])
    assert [s.session_id for s in scoped.snippets] == ["alice-old"]
    unknown = search_sessions(sessions_dir, "bank pin", owner="alice", session_id="nobody")
    for other in ("bob-1", "unowned", "alice-private", "bob%2D1", "../bob-1", "bob-1.jsonl", ""):
        refused = search_sessions(
            sessions_dir, "bank pin", owner="alice", exclude=["alice-private"], session_id=other
        )
        assert refused == Found("bank pin", [], 0) == unknown, other
    tagged = search_sessions(sessions_dir, "bank pin", tags=["support"])
    assert {s.session_id for s in tagged.snippets} == {"alice-old", "alice-private", "bob-1"}
    assert search_sessions(sessions_dir, "bank pin", tags=["support", "vip"]).total == 0
    assert search_sessions(sessions_dir, "bank pin", owner="bob", tags=["support"]).total == 1
    with pytest.raises(TypeError):
        search_sessions(sessions_dir, "bank pin", tags="support")


def test_a_session_whose_metadata_cannot_be_read_is_out_of_scope(sessions_dir: Path) -> None:
    fill_owners(sessions_dir)
    (sessions_dir / "bob-1.jsonl.meta").write_text('{"owner": "alice", "oops": 1}')  # not a record
    assert search_sessions(sessions_dir, "bank pin", owner="alice", session_id="bob-1").total == 0
    assert "bob-1" not in {
        s.session_id for s in search_sessions(sessions_dir, "bank pin", owner="alice").snippets
    }


class CallsTheToolsThenAnswers(Model):
    """First answer: several recall calls at once; second: words. Records each input it was given."""

    def __init__(self, calls: list[dict[str, Any]]) -> None:
        self.calls = calls
        self.inputs: list[Any] = []

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        self.inputs.append(kwargs["input"] if "input" in kwargs else args[1])
        if len(self.inputs) == 1:
            output: list[Any] = [
                ResponseFunctionToolCall(
                    type="function_call",
                    id=f"fc_{n}",
                    call_id=f"call_{n}",
                    name="search_past_conversations",
                    arguments=json.dumps(arguments),
                    status="completed",
                )
                for n, arguments in enumerate(self.calls)
            ]
            return ModelResponse(output=output, usage=Usage(), response_id="resp_1")
        return ModelResponse(output=[reply("Done.", "msg_2")], usage=Usage(), response_id="resp_2")

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


@pytest.mark.sdk
def test_a_model_cannot_reach_an_excluded_or_another_owners_session(sessions_dir: Path) -> None:
    fill_owners(sessions_dir)
    calls = [
        {"query": "bank pin"},  # a plain query: alice's sessions only, the excluded one left out
        {"query": "bank pin", "session_id": "alice-private"},  # excluded, named by id
        {"query": "bank pin", "session_id": "bob-1"},  # another owner's, named by id
        {"query": "bank pin", "session_id": "unowned"},  # no owner: out of scope
        {"query": "card"},  # a word of bob's secret, as a query
        {"query": "bank pin", "session_id": "no-such-session"},  # unknown: the answer refusals give
    ]
    model = CallsTheToolsThenAnswers(calls)
    recall = session_search_tool(sessions_dir, owner="alice", exclude=["alice-private", "today"])
    agent = agents.Agent(name="Assistant", model=model, tools=[recall])
    today = JSONLSession("today", sessions_dir)
    result = agents.Runner.run_sync(agent, "What is my bank PIN?", session=today)
    assert result.final_output == "Done."

    outputs = {
        item["call_id"]: item["output"]
        for item in model.inputs[1]
        if item.get("type") == "function_call_output"
    }
    assert len(outputs) == len(calls)
    assert "[session alice-old, turn 1, user] Where do I find my bank PIN letter?" in outputs["call_0"]
    assert outputs["call_0"].startswith("1 match for 'bank pin'")
    unknown = outputs["call_5"]
    assert unknown == "No past conversation mentions 'bank pin'."
    assert outputs["call_1"] == outputs["call_2"] == outputs["call_3"] == unknown
    assert outputs["call_4"] == "No past conversation mentions 'card'."
    seen = json.dumps(model.inputs, default=str) + json.dumps(today.get_items_sync())
    for session_id, secret in SECRETS.items():
        assert secret.split(" PIN ")[1].split()[0] not in seen, session_id
