"""A turn the SDK (0.24+) holds back from the session, paused in one process and resumed in another.

With output guardrails and a ``tool_use_behavior`` other than ``run_llm_again``, the Runner keeps
an interrupted turn's model output out of the session and in the run state
(``pending_session_write``). Saved beside the session (``.run``), the held items travel with the
state: the paused session is not broken in the meantime, ``paused_run()`` says how many items
wait, and a resume from another process writes them exactly once.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from cli_helpers import cli_env
from cli_helpers import run as cli

from jsonl_session import JSONLSession, SessionDirectory
from jsonl_session.serve.rows import index_row

agents = pytest.importorskip("agents")
pytest.importorskip("agents.testing")
if "_pending_session_write" not in getattr(agents.RunState, "__dataclass_fields__", {}):
    pytest.skip("this SDK does not hold guardrailed turns back (0.24+)", allow_module_level=True)

pytestmark = pytest.mark.sdk

RUN = """
import asyncio, sys
from agents import (Agent, GuardrailFunctionOutput, Runner, StopAtTools, function_tool,
                    output_guardrail, set_tracing_disabled)
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from jsonl_session import JSONLSession, SessionDirectory
from jsonl_session.serve.rows import index_row

set_tracing_disabled(True)


@function_tool(needs_approval=True)
def refund(order: str) -> str:
    return f"refunded {order}"


@function_tool
def look_up(order: str) -> str:
    return f"order {order}: 20 EUR"


@output_guardrail
async def polite(ctx, agent, output):
    return GuardrailFunctionOutput(output_info=None, tripwire_triggered=False)


def agent(steps):
    return Agent(name="support", model=ScriptedModel(steps), tools=[look_up, refund],
                 output_guardrails=[polite], tool_use_behavior=StopAtTools(stop_at_tool_names=["done"]))


async def main(step, folder):
    session = JSONLSession("refund", folder)
    if step == "park":
        parked = agent([
            ModelStep(output=[function_call("look_up", {"order": "A1"}, call_id="call_look")]),
            ModelStep(output=[function_call("refund", {"order": "A1"}, call_id="call_refund")]),
        ])
        result = await Runner.run(parked, "Refund order A1", session=session)
        assert len(result.interruptions) == 1
        await session.record_usage(result)  # saves the paused run beside the session
    else:
        resumed = agent([ModelStep(output=[assistant_message("Refunded.", item_id="msg_done")])])
        state = await session.load_run_state(resumed)
        if state is None:
            print("no paused run")
            return
        state.approve(state.get_interruptions()[0])
        result = await Runner.run(resumed, state, session=session)
        await session.record_usage(result)
        print(result.final_output)


asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def run(step: str, folder: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", RUN, step, str(folder)],
        check=False,
        capture_output=True,
        text=True,
        env=cli_env(),
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def shape(session: JSONLSession) -> list[tuple[str, str | None]]:
    return [(item.get("type", "message"), item.get("call_id")) for item in session.get_items_sync()]


def test_a_held_turn_paused_in_one_process_is_written_once_by_another(tmp_path: Path) -> None:
    session = JSONLSession("refund", tmp_path)
    run("park", tmp_path)

    # The history holds the accepted part of the turn; the held call waits in the paused run.
    assert shape(session) == [
        ("message", None),
        ("function_call", "call_look"),
        ("function_call_output", "call_look"),
    ]
    paused = session.paused_run()
    assert paused is not None and paused.tools == ["refund"] and paused.held == 1
    check = subprocess.run(
        [sys.executable, "-m", "jsonl_session", "--dir", str(tmp_path), "check", "refund"],
        check=False,
        capture_output=True,
        text=True,
        env=cli_env(),
    )
    assert check.returncode == 0, check.stdout + check.stderr  # a pause is not a broken history
    (listed,) = SessionDirectory(tmp_path).list()
    assert listed.paused and listed.held == 1
    row = index_row(listed)  # the viewer's index (and /api/sessions)
    assert row["held"] == 1 and row["notes"] == ["paused run, 1 item held back"]
    assert "paused (needs approval; 1 item held back)" in cli(tmp_path, "ls").out
    assert orjson.loads(cli(tmp_path, "ls", "--json").out)["held"] == 1
    assert cli(tmp_path, "show", "refund").out.startswith(
        "paused run: 1 item held back, written when it resumes\n"
    )

    assert run("resume", tmp_path) == "Refunded."
    assert shape(session) == [
        ("message", None),
        ("function_call", "call_look"),
        ("function_call_output", "call_look"),
        ("function_call", "call_refund"),
        ("function_call_output", "call_refund"),
        ("message", None),
    ]
    assert session.paused_run() is None
    assert run("resume", tmp_path) == "no paused run"  # a second resume finds nothing to write
    assert len(session.get_items_sync()) == 6
