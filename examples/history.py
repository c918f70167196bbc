"""Turns, forks, token usage and a paused run, with the real ``Runner`` and an offline model.

Run it from the repository root, then look with the CLI::

    python examples/history.py /tmp/history     # writes sessions into that folder
    jsonl-session --dir /tmp/history ls --tree

It writes ``trip`` (three questions, each answered through a tool call, usage recorded),
forks it at turn 1 as ``trip-rome``, and leaves ``refund`` paused: its tool needs a person's
approval. ``python examples/history.py /tmp/history --approve`` then resumes that run, as a
second process would.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from agents.usage import Usage
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

from jsonl_session import JSONLSession, SessionDirectory

CITIES = ["Paris", "Oslo", "Lisbon"]


@function_tool
def get_weather(city: str) -> str:
    """Return the current weather for a city."""
    return f"Sunny and 21°C in {city}"


@function_tool(needs_approval=True)
def refund(order: str) -> str:
    """Refund an order; a person approves first."""
    return f"Order {order} refunded"


def cost(input_tokens: int, output_tokens: int, cached: int = 0) -> Usage:
    """What a scripted model call reports, as a real model's would."""
    return Usage(
        requests=1,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=input_tokens + output_tokens,
        input_tokens_details=InputTokensDetails(cached_tokens=cached, cache_write_tokens=0),
        output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
    )


def weather_model() -> ScriptedModel:
    steps: list[Any] = []
    for number, city in enumerate(CITIES, 1):
        call = function_call("get_weather", {"city": city}, call_id=f"call_{number}")
        steps.append(ModelStep(output=[call], usage=cost(300 * number, 18, cached=256 * (number - 1))))
        answer = assistant_message(f"It's sunny and 21°C in {city}.", item_id=f"msg_{number}")
        steps.append(ModelStep(output=[answer], usage=cost(300 * number + 40, 12)))
    return ScriptedModel(steps)


async def write_history(folder: Path) -> None:
    store = SessionDirectory(folder)
    for session_id in ("trip", "trip-rome", "refund"):
        store.delete(session_id)
    agent = Agent(name="Weather", model=weather_model(), tools=[get_weather])
    trip = store.open("trip")
    for city in CITIES:
        result = await Runner.run(agent, f"What's the weather in {city}?", session=trip)
        await trip.record_usage(result)  # one line in trip.jsonl.usage
    store.fork("trip", "trip-rome", at_turn=1)  # keeps turn 1; trip-rome.jsonl.lineage says so

    clerk = Agent(name="Refunds", model=ScriptedModel([refund_call()]), tools=[refund])
    desk = store.open("refund")
    result = await Runner.run(clerk, "Please refund order A-1042", session=desk)
    await desk.record_usage(result)  # paused: also saves the run to refund.jsonl.run
    paused = desk.paused_run()  # None when nothing waits (the run completed)
    print(f"refund: paused, waiting for approval of {paused.tools}" if paused else "refund: completed")


def refund_call() -> ModelStep:
    return ModelStep(
        output=[function_call("refund", {"order": "A-1042"}, call_id="call_r1")], usage=cost(410, 21)
    )


async def approve(folder: Path) -> None:
    """What a second process does: load the paused run, approve, finish it."""
    answer = assistant_message("Order A-1042 has been refunded.", item_id="msg_r1")
    clerk = Agent(
        name="Refunds", model=ScriptedModel([ModelStep(output=[answer], usage=cost(480, 14))]), tools=[refund]
    )
    desk = JSONLSession("refund", folder)
    state = await desk.load_run_state(clerk)
    if state is None:
        sys.exit("refund: no paused run")
    for item in state.get_interruptions():
        state.approve(item)
    result = await Runner.run(clerk, state, session=desk)
    await desk.record_usage(result)  # completed: refund.jsonl.run is removed
    print(f"refund: {result.final_output}")


if __name__ == "__main__":
    set_tracing_disabled(True)
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "sessions")
    asyncio.run(approve(target) if "--approve" in sys.argv else write_history(target))
