"""Usage log and paused runs, with the real Runner and an offline model; resumed in a second process."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import run

from jsonl_session import JSONLSession, SessionDirectory
from jsonl_session.tools.check import check_file

agents = pytest.importorskip("agents")
helpers = pytest.importorskip("history_helpers")
HELPER = Path(__file__).parents[1] / "history_helpers.py"


def two_runs(sessions_dir: Path) -> JSONLSession:
    agent, _ = helpers.weather_agent(["Paris", "Oslo"])
    session = JSONLSession("weather", sessions_dir)
    for city in ("Paris", "Oslo"):
        result = agents.Runner.run_sync(agent, f"Weather in {city}?", session=session)
        session.record_usage_sync(result)
    return session


def test_record_usage_appends_one_line_per_run(sessions_dir: Path) -> None:
    session = two_runs(sessions_dir)
    lines = (sessions_dir / "weather.jsonl.usage").read_bytes().splitlines()
    assert len(lines) == 2
    first = json.loads(lines[0])
    assert list(first) == sorted(first)  # stable bytes
    assert {
        key: first[key]
        for key in (
            "requests",
            "input_tokens",
            "output_tokens",
            "cached_tokens",
            "reasoning_tokens",
            "total_tokens",
            "turn",
            "paused",
        )
    } == {
        "requests": 2,
        "input_tokens": 220,
        "output_tokens": 25,
        "cached_tokens": 50,
        "reasoning_tokens": 5,
        "total_tokens": 245,
        "turn": 1,
        "paused": False,
    }
    assert first["model"] == "ScriptedModel" and first["at"].endswith("Z")
    assert session.get_items_sync()[0] == {"content": "Weather in Paris?", "role": "user"}  # items only


def test_usage_answers_what_advanced_sqlite_session_answers(sessions_dir: Path) -> None:
    session = two_runs(sessions_dir)
    totals = asyncio.run(session.get_session_usage())
    assert totals is not None
    assert {
        key: totals[key]
        for key in ("requests", "input_tokens", "output_tokens", "total_tokens", "total_turns")
    } == {
        "requests": 4,
        "input_tokens": 640,
        "output_tokens": 50,
        "total_tokens": 690,
        "total_turns": 2,
    }
    per_turn = session.get_turn_usage_sync()
    assert isinstance(per_turn, list)
    assert [(entry["user_turn_number"], entry["total_tokens"]) for entry in per_turn] == [(1, 245), (2, 445)]
    assert per_turn[1]["input_tokens_details"] == {"cached_tokens": 50}
    assert per_turn[1]["output_tokens_details"] == {"reasoning_tokens": 5}
    assert session.get_turn_usage_sync(2) == per_turn[1] and session.get_turn_usage_sync(7) == {}
    assert JSONLSession("none", sessions_dir).get_session_usage_sync() is None


def test_a_rewound_turn_keeps_its_cost_but_not_its_place(sessions_dir: Path) -> None:
    session = two_runs(sessions_dir)
    session.rewind_sync(1)
    session.add_items_sync([{"role": "user", "content": "Something else"}])
    turns = session.get_turn_usage_sync()
    assert isinstance(turns, list) and [entry["user_turn_number"] for entry in turns] == [1]
    totals = session.get_session_usage_sync()
    assert totals is not None and totals["total_tokens"] == 690  # the tokens were spent


def test_stats_and_show_report_tokens_and_times(sessions_dir: Path) -> None:
    two_runs(sessions_dir)
    JSONLSession("quiet", sessions_dir).add_items_sync([{"role": "user", "content": "hi"}])
    stats = run(sessions_dir, "stats", "--json")
    assert stats.code == 0, stats.err
    tokens = json.loads(stats.out)["tokens"]
    assert tokens["total"]["total_tokens"] == 690 and tokens["total"]["runs"] == 2
    assert list(tokens["by_session"]) == ["weather"]
    text = run(sessions_dir, "stats").out
    assert "tokens:" in text and text.splitlines()[-1].split() == [
        "weather",
        "2",
        "4",
        "640",
        "100",
        "50",
        "10",
        "690",
    ]
    shown = run(sessions_dir, "show", "weather", "--turns", "--json")
    rows = [json.loads(line) for line in shown.out.splitlines()]
    assert [(row["turn"], row["total_tokens"]) for row in rows] == [(1, 245), (2, 445)]
    assert all(row["at"].endswith("Z") for row in rows)
    plain = run(sessions_dir, "show", "weather", "--turns").out.splitlines()[1:]  # under the header
    assert "245 tok" in plain[0] and rows[0]["at"].replace("T", " ").rstrip("Z") in plain[0]


def run_helper(step: str, sessions_dir: Path) -> subprocess.CompletedProcess[str]:
    """One step of the run in a process of its own (``HELPER``), as two runs of a program are."""
    return subprocess.run(
        [sys.executable, str(HELPER), step, str(sessions_dir)],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_paused_run_is_resumed_by_another_process(sessions_dir: Path) -> None:
    pause = run_helper("pause", sessions_dir)
    assert pause.returncode == 0, pause.stderr
    session = JSONLSession("refund", sessions_dir)
    paused = session.paused_run()
    assert paused is not None and paused.tools == ["refund"]
    assert paused.pending[0]["arguments"] == '{"order":"A1"}'
    assert SessionDirectory(sessions_dir).list()[0].paused
    listing = run(sessions_dir, "ls")
    assert listing.out.splitlines()[1].endswith("paused (needs approval)")
    assert check_file(session.path) == []  # the unanswered call waits for approval: not a problem
    saved = (sessions_dir / "refund.jsonl.run").read_bytes()
    assert saved.endswith(b"}\n") and json.loads(saved)["recorded"]["total_tokens"] == 110

    resume = run_helper("resume", sessions_dir)
    assert resume.returncode == 0, resume.stderr
    assert resume.stdout.strip() == "Refunded A1.|A1"  # the approved tool ran once, in the second process
    assert session.paused_run() is None and not (sessions_dir / "refund.jsonl.run").exists()
    assert [item.get("type", "message") for item in session.get_items_sync()] == [
        "message",
        "function_call",
        "function_call_output",
        "message",
    ]
    records = session.usage_records()
    assert [(r["paused"], r["total_tokens"]) for r in records] == [(True, 110), (False, 220)]  # not 330
    assert [info.paused for info in SessionDirectory(sessions_dir).list()] == [False]


def test_save_load_and_clear_run_state_explicitly(sessions_dir: Path) -> None:
    session = JSONLSession("refund", sessions_dir)
    agent = helpers.refund_agent(list(helpers.PAUSE_STEPS))

    async def main() -> None:
        result = await agents.Runner.run(agent, "Refund order A1", session=session)
        await session.save_run_state(result.to_state())
        state = await session.load_run_state(agent)
        assert state is not None and [item.tool_name for item in state.get_interruptions()] == ["refund"]
        assert await session.clear_run_state() is True
        assert await session.load_run_state(agent) is None
        session.save_run_state_sync(result)  # the result itself is accepted too
        result_again = session.record_usage_sync(result)
        assert result_again["total_tokens"] == 110  # saving first does not hide the run's usage
        with pytest.raises(FileNotFoundError):
            JSONLSession("missing", sessions_dir).save_run_state_sync(result)

    asyncio.run(main())
    assert session.paused_run() is not None
    session.rewind_sync(1)  # the paused turn is gone, so is its run
    assert session.paused_run() is None
    with pytest.raises(TypeError, match="RunState"):
        session.save_run_state_sync(object())


def test_the_history_example_pauses_and_a_second_process_approves(tmp_path: Path) -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "history.py"
    folder = tmp_path / "sessions"

    def example_run(*extra: str) -> str:
        done = subprocess.run(
            [sys.executable, str(example), str(folder), *extra],
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert example_run() == "refund: paused, waiting for approval of ['refund']"
    infos = {info.session_id: info for info in SessionDirectory(folder).list()}
    assert infos["refund"].paused and infos["trip-rome"].forked_from == "trip" and infos["trip"].items == 12
    assert example_run("--approve") == "refund: Order A-1042 has been refunded."
    assert not SessionDirectory(folder).list()[0].paused
    assert example_run().startswith("refund: paused")  # re-running starts over


# -- metadata follows its session ----------------------------------------------------


class _State:
    """A stand-in RunState waiting for one approval (no model run needed)."""

    def to_json(self) -> dict[str, object]:
        return {"fake": True}

    def get_interruptions(self) -> list[object]:
        return [{"raw_item": {"name": "refund", "call_id": "call_1"}}]


class _Result:
    """A stand-in finished run result: its usage, and no interruptions."""

    def __init__(self, tokens: int = 10, *, is_complete: bool | None = None) -> None:
        self.context_wrapper = type("Context", (), {"usage": helpers.usage(tokens, 1)})()
        self.interruptions: list[object] = []
        if is_complete is not None:
            self.is_complete = is_complete


def paused_with_usage(sessions_dir: Path, session_id: str = "x") -> JSONLSession:
    session = JSONLSession(session_id, sessions_dir)
    session.add_items_sync([{"role": "user", "content": "Refund A1"}])
    session.record_usage_sync(_Result(100))
    session.save_run_state_sync(_State())
    assert session.paused_run() is not None
    return session


@pytest.mark.parametrize("way", ["sync", "async", "cli"])
def test_clearing_a_session_ends_its_paused_run_and_keeps_its_usage_ledger(
    sessions_dir: Path, way: str
) -> None:
    session = paused_with_usage(sessions_dir)
    if way == "sync":
        session.clear_session_sync()
    elif way == "async":
        asyncio.run(session.clear_session())
    else:
        assert run(sessions_dir, "clear", "x", "--yes").code == 0
    assert session.paused_run() is None and not (sessions_dir / "x.jsonl.run").exists()
    assert [info.paused for info in SessionDirectory(sessions_dir).list()] == [False]
    assert [record["total_tokens"] for record in session.usage_records()] == [101]  # the ledger stays
    stats = run(sessions_dir, "stats", "x")
    assert stats.code == 0 and "101" in stats.out and "cleared or rewound" in stats.out


@pytest.mark.parametrize("way", ["add", "fork", "rewrite"])
def test_a_new_session_never_inherits_the_metadata_of_a_removed_one(sessions_dir: Path, way: str) -> None:
    old = paused_with_usage(sessions_dir)
    JSONLSession("source", sessions_dir).add_items_sync([{"role": "user", "content": "hi"}])
    SessionDirectory(sessions_dir).fork("source", "x-fork")
    os.remove(old.path)  # `rm sessions/x.jsonl` by hand: its .run and .usage stay behind
    leftovers = sorted(path.name for path in sessions_dir.glob("x.jsonl.*"))
    assert leftovers == ["x.jsonl.run", "x.jsonl.times", "x.jsonl.usage"]
    if way == "add":
        JSONLSession("x", sessions_dir).add_items_sync([{"role": "user", "content": "new"}])
    elif way == "fork":
        SessionDirectory(sessions_dir).fork("source", "x")
    else:
        JSONLSession("x", sessions_dir).replace_items_sync([{"role": "user", "content": "new"}])
    new = JSONLSession("x", sessions_dir)
    assert new.paused_run() is None and new.usage_records() == [] and new.get_session_usage_sync() is None
    assert [info.paused for info in SessionDirectory(sessions_dir).list() if info.session_id == "x"] == [
        False
    ]
    stats = run(sessions_dir, "stats", "x")
    assert stats.code == 0 and "101" not in stats.out
    assert (new.lineage is not None) == (way == "fork")


def test_record_usage_refuses_a_streamed_run_that_has_not_finished(sessions_dir: Path) -> None:
    session = JSONLSession("s", sessions_dir)
    session.add_items_sync([{"role": "user", "content": "hi"}])
    with pytest.raises(ValueError, match="has not finished"):
        session.record_usage_sync(_Result(5, is_complete=False))
    with pytest.raises(ValueError, match="has not finished"):
        asyncio.run(session.record_usage(_Result(5, is_complete=False)))
    assert session.usage_records() == [] and not (sessions_dir / "s.jsonl.usage").exists()
    assert session.record_usage_sync(_Result(5, is_complete=True))["total_tokens"] == 6


def test_record_usage_of_a_real_streamed_run_waits_for_its_end(sessions_dir: Path) -> None:
    agent, _ = helpers.weather_agent(["Paris"])
    session = JSONLSession("weather", sessions_dir)

    async def main() -> None:
        result = agents.Runner.run_streamed(agent, "Weather in Paris?", session=session)
        with pytest.raises(ValueError, match="has not finished"):
            await session.record_usage(result)
        async for _ in result.stream_events():
            pass
        first = await session.record_usage(result)
        assert first["requests"] == 2
        assert session.record_usage_sync(result) == first  # the SDK's result, recorded twice: once

    asyncio.run(main())
    assert len(session.usage_records()) == 1


def test_recording_the_same_result_twice_counts_it_once(sessions_dir: Path) -> None:
    session = JSONLSession("s", sessions_dir)
    session.add_items_sync([{"role": "user", "content": "hi"}])
    result = _Result(7)
    first = session.record_usage_sync(result)
    assert session.record_usage_sync(result) == first
    assert asyncio.run(session.record_usage(result)) == first
    assert JSONLSession("s", sessions_dir).record_usage_sync(result) == first  # another object, same file
    assert [record["total_tokens"] for record in session.usage_records()] == [8]
    session.record_usage_sync(_Result(7))  # another run, even with the same numbers, counts
    assert len(session.usage_records()) == 2
