"""Follow a conversation live from another process, item by item.

Run it from the repository root::

    python examples/follow.py            # both at once: follows a writer it starts itself, then ends
                                         # (and deletes sessions/follow-demo.jsonl: nothing left behind)

or in two terminals::

    python examples/follow.py --follow   # terminal 1: follows sessions/follow-demo.jsonl (Ctrl-C ends)
    python examples/follow.py --write    # terminal 2: runs the conversation

The writer clears the session, runs the real Agents SDK ``Runner`` with a scripted model
(offline, no API key; ``agents.testing.ScriptedModel``), then retracts the last answer with
``pop_item`` and writes a better one. Without the SDK installed it writes the same items with plain
``add_items``.
The follower prints each change as it arrives and keeps a list in step with :func:`apply`.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import threading
from typing import Any

from jsonl_session import JSONLSession, SessionDirectory
from jsonl_session.watch import Change, apply

SESSION_ID = "follow-demo"  # ./sessions/follow-demo.jsonl
PAUSE = 0.2  # seconds between the writer's steps, so you can watch them arrive


# -- the writer: an agent conversation ------------------------------------------------------


async def write() -> None:
    session = JSONLSession(SESSION_ID)
    await session.clear_session()  # start fresh: a follower sees "session cleared"
    try:
        await converse_with_agent(session)
    except ImportError:  # no Agents SDK (or one without agents.testing): same items by hand
        await converse_by_hand(session)
    await asyncio.sleep(PAUSE)
    wrong = await session.pop_item()
    print(f"writer:   retracted the last answer ({describe(wrong)})", flush=True)
    await asyncio.sleep(PAUSE)
    await session.add_items([{"role": "assistant", "content": "Sunny, 21°C: a good day for a walk."}])
    print("writer:   done", flush=True)


async def converse_with_agent(session: JSONLSession) -> None:
    from agents import Agent, Runner, function_tool, set_tracing_disabled
    from agents.testing import ScriptedModel, assistant_message, function_call

    @function_tool
    def get_weather(city: str) -> str:
        """Return the current weather for a city."""
        return f"Sunny and 21°C in {city}"

    set_tracing_disabled(True)  # offline: nothing to export traces to
    model = ScriptedModel(
        [
            [assistant_message("I'm a weather assistant.", item_id="msg_1")],
            [function_call("get_weather", {"city": "Paris"}, call_id="call_1")],
            [assistant_message("It's sunny and 21°C in Paris.", item_id="msg_2")],
        ]
    )
    agent = Agent(name="Weather", instructions="Answer briefly.", tools=[get_weather], model=model)
    for question in ("Hi! Who are you?", "What's the weather in Paris?"):
        print(f"writer:   asking {question!r}", flush=True)
        await Runner.run(agent, question, session=session)
        await asyncio.sleep(PAUSE)


async def converse_by_hand(session: JSONLSession) -> None:
    turns = [
        [
            {"role": "user", "content": "Hi! Who are you?"},
            {"role": "assistant", "content": "I'm a weather assistant."},
        ],
        [
            {"role": "user", "content": "What's the weather in Paris?"},
            {
                "type": "function_call",
                "name": "get_weather",
                "arguments": '{"city":"Paris"}',
                "call_id": "call_1",
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "Sunny and 21°C in Paris"},
            {"role": "assistant", "content": "It's sunny and 21°C in Paris."},
        ],
    ]
    for turn in turns:
        print(f"writer:   asking {turn[0]['content']!r}", flush=True)
        for item in turn:
            await session.add_items([item])
        await asyncio.sleep(PAUSE)


# -- the follower ---------------------------------------------------------------------------


def describe(item: dict[str, Any]) -> str:
    """One line per item: who said what, or which tool was called."""
    if item.get("type") == "function_call":
        return f"tool call {item.get('name')}({item.get('arguments')})"
    if item.get("type") == "function_call_output":
        return f"tool output {item.get('output')!r}"
    content = item.get("content")
    if isinstance(content, list):  # the SDK stores assistant text as content parts
        content = " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return f"{item.get('role', item.get('type', '?'))}: {content}"


def show(change: Change) -> None:
    if change.kind == "appended":
        for item in change.items:
            print(f"follower: + {describe(item)}", flush=True)
    elif change.kind == "removed":
        print(f"follower: - {change.count} item(s) removed from the end", flush=True)
    elif change.kind == "replaced":
        print(f"follower: = replaced, now {change.count} items", flush=True)
    else:
        print(f"follower: session {change.kind}", flush=True)


def follow(stop: threading.Event | None = None, on_ready: Any = None) -> list[Any]:
    """Print every change until ``stop`` is set (or Ctrl-C); return the list kept with ``apply``."""
    session = JSONLSession(SESSION_ID)
    items: list[Any] = []
    with session.watch_sync(start="all", stop_event=stop, raise_interrupt=False) as changes:
        if on_ready is not None:
            on_ready()
        for change in changes:
            show(change)
            apply(change, items)
    return items


def wait_then_stop(process: subprocess.Popen[bytes], stop: threading.Event) -> None:
    process.wait()
    stop.set()


def both() -> int:
    """Start the writer as a separate process and follow it until it exits."""
    JSONLSession(SESSION_ID).clear_session_sync()  # start fresh on every run
    stop = threading.Event()
    writer: list[subprocess.Popen[bytes]] = []

    def start_writer() -> None:  # once the watch is in place, so nothing can be missed
        process = subprocess.Popen([sys.executable, __file__, "--write"])
        writer.append(process)
        threading.Thread(target=wait_then_stop, args=(process, stop), daemon=True).start()

    items = follow(stop, on_ready=start_writer)  # after stop: delivers what is written, then ends
    on_disk = JSONLSession(SESSION_ID).get_items_sync()
    SessionDirectory().delete(SESSION_ID)  # a demo: leave no file in the checkout
    if items != on_disk:
        print("follower: MISMATCH between the rebuilt list and the file", file=sys.stderr)
        return 1
    print(f"follower: the list rebuilt from the changes equals the file ({len(items)} items)")
    return writer[0].returncode if writer else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="only run the conversation")
    mode.add_argument("--follow", action="store_true", help="only follow the session (Ctrl-C ends)")
    args = parser.parse_args()
    if args.write:
        asyncio.run(write())
        return 0
    if args.follow:
        items = follow()
        print(f"follower: stopped with {len(items)} items")
        return 0
    return both()


if __name__ == "__main__":
    sys.exit(main())
