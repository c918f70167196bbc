"""Quickstart: the real Agents SDK ``Runner`` keeps its history in ``sessions/quickstart.jsonl``.

Run it from the repository root::

    python examples/quickstart.py

Without ``OPENAI_API_KEY`` it runs offline: a scripted model (``agents.testing.ScriptedModel``)
answers, and the agent really calls its ``get_weather`` tool. With ``OPENAI_API_KEY`` set, the
SDK's default model answers instead.

The session lives in ``./sessions`` relative to the current directory, like
``JSONLSession("quickstart")`` in your own code. The session is cleared first, so
re-running the offline demo rewrites byte-identical content: no git diff.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from agents import Agent, Runner, function_tool, set_tracing_disabled

from jsonl_session import JSONLSession

QUESTIONS = ["Hi! Who are you?", "What's the weather in Paris?"]


@function_tool
def get_weather(city: str) -> str:
    """Return the current weather for a city."""
    return f"Sunny and 21°C in {city}"


def scripted_model() -> Any:
    """The answers a real model might give, one list of output items per model call."""
    from agents.testing import ScriptedModel, assistant_message, function_call

    return ScriptedModel(
        [
            [assistant_message("I'm a weather assistant. Ask me about any city.", item_id="msg_1")],
            [function_call("get_weather", {"city": "Paris"}, call_id="call_1")],
            [assistant_message("It's sunny and 21°C in Paris.", item_id="msg_2")],
        ]
    )


async def main() -> None:
    online = bool(os.environ.get("OPENAI_API_KEY"))
    if not online:
        set_tracing_disabled(True)  # nothing to export traces to offline
    agent = Agent(
        name="Weather assistant",
        instructions="Answer briefly. Use get_weather for weather questions.",
        tools=[get_weather],
        **({} if online else {"model": scripted_model()}),
    )
    session = JSONLSession("quickstart")  # ./sessions/quickstart.jsonl
    await session.clear_session()  # start fresh, so every run writes the same file

    print(f"model: {'the default OpenAI model' if online else 'scripted (offline)'}")
    for question in QUESTIONS:
        result = await Runner.run(agent, question, session=session)
        print(f"user:  {question}")
        print(f"agent: {result.final_output}")

    lines = session.path.read_text(encoding="utf-8").splitlines()
    print(f"\n{session.path} ({len(lines)} items, one per line):")
    for line in lines:
        print(line)


if __name__ == "__main__":
    asyncio.run(main())
