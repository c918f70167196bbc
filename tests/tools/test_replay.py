"""Record/replay: the real Agents SDK ``Runner`` against a recording in an ordinary session file.

A ``ScriptedModel`` stands in for the real model when recording (no network here); every
replay below passes no real model at all, so a replayed answer can only come from the file.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest
from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call

from jsonl_session import JSONLSession
from jsonl_session.tools.replay import Recording, ReplayMismatch, is_model_output

set_tracing_disabled(True)

QUESTIONS = ["Hi", "What's the weather in Paris?"]


@function_tool
def get_weather(city: str) -> str:
    """Return the weather for a city."""
    return f"Sunny in {city}"


def stand_in_model() -> ScriptedModel:
    """What the 'real' model answers while recording."""
    return ScriptedModel(
        [
            [assistant_message("Hello!", item_id="msg_1")],
            [function_call("get_weather", {"city": "Paris"}, call_id="call_1")],
            [assistant_message("Sunny in Paris.", item_id="msg_2")],
        ]
    )


async def converse(
    recording: Recording, sessions: Path, questions: list[str] = QUESTIONS, *, stream: bool = False
) -> list[str]:
    """Run the questions through an agent with a fresh session; return the final outputs."""
    real = stand_in_model() if recording.recording else None
    agent = Agent(name="weather", model=recording.model(real), tools=[get_weather])
    session = JSONLSession("chat", sessions, durable=False)
    await session.clear_session()
    answers = []
    for question in questions:
        if stream:
            streamed = Runner.run_streamed(agent, question, session=session)
            async for _ in streamed.stream_events():
                pass
            answers.append(streamed.final_output)
        else:
            answers.append((await Runner.run(agent, question, session=session)).final_output)
    return answers


def record(path: Path, sessions: Path, *, stream: bool = False) -> Recording:
    recording = Recording(path, mode="record")
    assert asyncio.run(converse(recording, sessions, stream=stream)) == ["Hello!", "Sunny in Paris."]
    recording.finish()
    return recording


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    path = tmp_path / "recordings" / "weather.jsonl"
    record(path, tmp_path / "sessions")
    return path


def test_recording_writes_the_conversation_as_an_ordinary_session_file(
    recorded: Path, tmp_path: Path
) -> None:
    items = [orjson.loads(line) for line in recorded.read_bytes().splitlines()]

    assert [item.get("role") or item["type"] for item in items] == [
        "user",
        "assistant",
        "user",
        "function_call",
        "function_call_output",
        "assistant",
    ]
    # exactly what the session of the recorded run holds: the recording is the conversation
    assert recorded.read_bytes() == (tmp_path / "sessions" / "chat.jsonl").read_bytes()


@pytest.mark.parametrize("stream", [False, True], ids=["run", "run_streamed"])
def test_replay_answers_from_the_file_without_a_model(recorded: Path, tmp_path: Path, stream: bool) -> None:
    recording = Recording(recorded)

    answers = asyncio.run(converse(recording, tmp_path / "replay", stream=stream))

    assert answers == ["Hello!", "Sunny in Paris."]
    assert recording.calls == 3
    recording.finish()  # every recorded answer was used
    assert (tmp_path / "replay" / "chat.jsonl").read_bytes() == recorded.read_bytes()


def test_recording_a_streamed_run_gives_the_same_file(recorded: Path, tmp_path: Path) -> None:
    streamed = record(tmp_path / "streamed.jsonl", tmp_path / "s2", stream=True)

    assert streamed.path.read_bytes() == recorded.read_bytes()


def test_re_recording_an_unchanged_conversation_leaves_the_file_untouched(
    recorded: Path, tmp_path: Path
) -> None:
    before = recorded.stat()
    content = recorded.read_bytes()

    recording = Recording(recorded, mode="record")
    asyncio.run(converse(recording, tmp_path / "again"))

    assert recording.save() is False
    assert recorded.read_bytes() == content
    assert recorded.stat().st_mtime_ns == before.st_mtime_ns


def test_a_changed_input_fails_with_a_diff_of_the_json_lines(recorded: Path, tmp_path: Path) -> None:
    recording = Recording(recorded)

    with pytest.raises(ReplayMismatch) as raised:
        asyncio.run(converse(recording, tmp_path / "replay", ["Hi", "What's the weather in Rome?"]))

    message = str(raised.value)
    assert f"{recorded}: model call 2: the agent's input diverged from the recording" in message
    assert "--record-agents" in message
    assert '-{"content":"What\'s the weather in Paris?","role":"user"}' in message
    assert '+{"content":"What\'s the weather in Rome?","role":"user"}' in message
    assert ' {"content":"Hi","role":"user"}' in message  # unchanged context is shown as recorded


def test_a_changed_tool_output_is_a_divergence(recorded: Path, tmp_path: Path) -> None:
    recorded.write_bytes(
        recorded.read_bytes().replace(b'"output":"Sunny in Paris"', b'"output":"Rain in Paris"')
    )
    recording = Recording(recorded)

    with pytest.raises(ReplayMismatch, match="model call 3") as raised:
        asyncio.run(converse(recording, tmp_path / "replay"))

    assert '+{"call_id":"call_1","output":"Sunny in Paris","type":"function_call_output"}' in str(
        raised.value
    )


def test_an_extra_model_call_has_no_recorded_answer(recorded: Path, tmp_path: Path) -> None:
    recording = Recording(recorded)

    with pytest.raises(ReplayMismatch, match="model call 4 has no recorded answer"):
        asyncio.run(converse(recording, tmp_path / "replay", [*QUESTIONS, "And tomorrow?"]))


def test_finishing_early_reports_the_unused_answers_with_their_line(recorded: Path, tmp_path: Path) -> None:
    recording = Recording(recorded)
    asyncio.run(converse(recording, tmp_path / "replay", QUESTIONS[:1]))

    with pytest.raises(ReplayMismatch, match=rf"{recorded}:4: the agent made 1 model call\(s\)"):
        recording.finish()


def test_an_agent_that_drops_its_history_diverges(recorded: Path) -> None:
    recording = Recording(recorded)
    agent = Agent(name="weather", model=recording.model(), tools=[get_weather])
    assert Runner.run_sync(agent, "Hi").final_output == "Hello!"

    with pytest.raises(ReplayMismatch) as raised:
        Runner.run_sync(agent, "What's the weather in Paris?")  # no session: the model never sees "Hi"

    assert '-{"content":"Hi","role":"user"}' in str(raised.value)


def test_a_hand_edited_recording_without_ids_and_with_plain_text_still_replays(tmp_path: Path) -> None:
    path = tmp_path / "hand.jsonl"
    path.write_text(
        '{"role":"user","content":"Hi"}\n'
        '{"role":"assistant","content":"Hello there!"}\n'
        "\n"
        '{"role":"user","content":"What\'s the weather in Paris?"}\n'
        '{"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{\\"city\\":\\"Paris\\"}"}\n'
        '{"type":"function_call_output","call_id":"c1","output":"Sunny in Paris"}\n'
        '{"role":"assistant","content":"It is sunny."}\n',
        encoding="utf-8",
    )
    recording = Recording(path)

    assert asyncio.run(converse(recording, tmp_path / "replay")) == ["Hello there!", "It is sunny."]
    recording.finish()


def test_replay_continues_a_committed_conversation(tmp_path: Path) -> None:
    history = JSONLSession("history", tmp_path / "seed", durable=False)
    history.add_items_sync(
        [
            {"role": "user", "content": "My name is Ada."},
            {"role": "assistant", "content": [{"type": "output_text", "text": "Hi Ada!", "annotations": []}]},
        ]
    )
    path = tmp_path / "continued.jsonl"
    recording = Recording(path, mode="record")
    agent = Agent(name="a", model=recording.model(ScriptedModel([[assistant_message("You are Ada.")]])))
    Runner.run_sync(agent, "Who am I?", session=history)
    recording.finish()
    history.replace_items_sync(history.get_items_sync()[:2])  # back to the committed state

    replayed = Recording(path)
    agent = Agent(name="a", model=replayed.model())

    assert Runner.run_sync(agent, "Who am I?", session=history).final_output == "You are Ada."
    replayed.finish()


def test_record_mode_refuses_a_call_that_does_not_continue_the_conversation(tmp_path: Path) -> None:
    recording = Recording(tmp_path / "two_runs.jsonl", mode="record")
    real = ScriptedModel([[assistant_message("one")], [assistant_message("two")]])
    agent = Agent(name="a", model=recording.model(real))
    Runner.run_sync(agent, "first")

    with pytest.raises(ReplayMismatch, match="does not continue the conversation"):
        Runner.run_sync(agent, "second")  # no history carried over

    assert real.remaining_steps == 1  # refused before the (paid) call to the real model


def test_a_recorded_item_the_sdk_cannot_read_is_named_in_the_error(tmp_path: Path) -> None:
    path = tmp_path / "odd.jsonl"
    path.write_text('{"role":"user","content":"Hi"}\n{"type":"no_such_item","x":1}\n', encoding="utf-8")
    agent = Agent(name="a", model=Recording(path).model())

    with pytest.raises(
        ReplayMismatch, match=r"odd\.jsonl: recorded item .*no_such_item.* is not a model output"
    ):
        Runner.run_sync(agent, "Hi")


def test_replaying_a_missing_recording_says_how_to_record_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="--record-agents"):
        Recording(tmp_path / "missing.jsonl")


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ({"role": "user", "content": "hi"}, False),
        ({"role": "system", "content": "be brief"}, False),
        ({"role": "developer", "content": "x"}, False),
        ({"type": "function_call_output", "call_id": "c", "output": "1"}, False),
        ({"type": "computer_call_output", "call_id": "c", "output": {}}, False),
        ({"role": "assistant", "content": "hi"}, True),
        ({"type": "message", "role": "assistant", "content": []}, True),
        ({"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}, True),
        ({"type": "reasoning", "id": "rs_1", "summary": []}, True),
        ({"type": "web_search_call", "id": "ws_1", "status": "completed"}, True),
    ],
)
def test_model_outputs_are_told_apart_from_inputs(item: dict[str, Any], expected: bool) -> None:
    assert is_model_output(item) is expected


def test_agents_that_hand_off_share_one_recording(tmp_path: Path) -> None:
    path = tmp_path / "handoff.jsonl"
    answers = []
    for mode in ("record", "replay"):
        recording = Recording(path, mode=mode)
        real = None
        if recording.recording:
            real = ScriptedModel(
                [
                    [function_call("transfer_to_billing", {}, call_id="call_h")],
                    [assistant_message("Billing here: refunded.", item_id="msg_b")],
                ]
            )
        billing = Agent(name="billing", model=recording.model(real))
        triage = Agent(name="triage", model=recording.model(real), handoffs=[billing])
        session = JSONLSession("refund", tmp_path / mode, durable=False)

        result = Runner.run_sync(triage, "I want a refund", session=session)

        answers.append((result.last_agent.name, result.final_output, recording.calls))
        recording.finish()

    assert answers == [("billing", "Billing here: refunded.", 2)] * 2
