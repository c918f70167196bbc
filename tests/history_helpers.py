"""Scripted agents for the turns/usage/paused-run tests: the real Runner, an offline model.

Also run as a script by the two-process paused-run test (``python history_helpers.py
pause|resume DIR``), so both processes build the very same agent.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import agents
from agents import testing
from agents.usage import Usage
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

from jsonl_session import JSONLSession

agents.set_tracing_disabled(True)


def usage(input_tokens: int, output_tokens: int, *, cached: int = 0, reasoning: int = 0) -> Usage:
    """What one scripted model call reports having cost."""
    return Usage(
        requests=1,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=input_tokens + output_tokens,
        input_tokens_details=InputTokensDetails(cached_tokens=cached, cache_write_tokens=0),
        output_tokens_details=OutputTokensDetails(reasoning_tokens=reasoning),
    )


def weather_agent(cities: list[str]) -> tuple[agents.Agent[Any], testing.ScriptedModel]:
    """An agent that answers each question with a tool call, its output, then a message."""

    @agents.function_tool
    def get_weather(city: str) -> str:
        """Weather for a city."""
        return f"Sunny in {city}"

    steps: list[Any] = []
    for number, city in enumerate(cities, 1):
        steps.append(
            testing.ModelStep(
                output=[testing.function_call("get_weather", {"city": city}, call_id=f"call_{number}")],
                usage=usage(100 * number, 10, cached=50, reasoning=5),
            )
        )
        steps.append(
            testing.ModelStep(
                output=[testing.assistant_message(f"It is sunny in {city}.", item_id=f"m{number}")],
                usage=usage(100 * number + 20, 15),
            )
        )
    model = testing.ScriptedModel(steps)
    return agents.Agent(name="Weather", model=model, tools=[get_weather]), model


REFUNDS: list[str] = []


@agents.function_tool(needs_approval=True)
def refund(order: str) -> str:
    """Refund an order (a person must approve)."""
    REFUNDS.append(order)
    return f"refunded {order}"


def refund_agent(steps: list[Any]) -> agents.Agent[Any]:
    return agents.Agent(name="Refunds", model=testing.ScriptedModel(steps), tools=[refund])


PAUSE_STEPS = [
    testing.ModelStep(
        output=[testing.function_call("refund", {"order": "A1"}, call_id="call_r1")],
        usage=usage(100, 10, cached=3),
    )
]
RESUME_STEPS = [
    testing.ModelStep(
        output=[testing.assistant_message("Refunded A1.", item_id="m_r1")], usage=usage(200, 20)
    )
]


async def pause(directory: Path) -> None:
    """Process one: ask for a refund; the run stops for approval; record it (which saves the run)."""
    session = JSONLSession("refund", directory)
    result = await agents.Runner.run(refund_agent(PAUSE_STEPS), "Refund order A1", session=session)
    assert result.interruptions, "the run should have paused for approval"
    await session.record_usage(result)


async def resume(directory: Path) -> None:
    """Process two: load the paused run, approve, finish it, record it (which removes the saved run)."""
    session = JSONLSession("refund", directory)
    agent = refund_agent(RESUME_STEPS)
    state = await session.load_run_state(agent)
    assert state is not None, "no paused run found"
    for item in state.get_interruptions():
        state.approve(item)
    result = await agents.Runner.run(agent, state, session=session)
    await session.record_usage(result)
    print(f"{result.final_output}|{','.join(REFUNDS)}")


if __name__ == "__main__":
    phase, folder = sys.argv[1], Path(sys.argv[2])
    asyncio.run(pause(folder) if phase == "pause" else resume(folder))
