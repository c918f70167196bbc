"""``tools.stats.folder_stats``: what a folder of real session files holds, counted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import cli_env, wait_until_at

from jsonl_session import JSONLSession, MalformedLineError, SessionDirectory
from jsonl_session.core.locking import FileHandle
from jsonl_session.render.item_text import text_of
from jsonl_session.tools.stats import Stats, folder_stats

WEATHER: list[dict[str, Any]] = [
    {"role": "user", "content": "Weather in Paris?"},
    {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Need the tool."}]},
    {"type": "function_call", "name": "get_weather", "arguments": '{"city":"Paris"}', "call_id": "c1"},
    {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
    {"type": "function_call", "name": "get_weather", "arguments": '{"city":"Oslo"}', "call_id": "c2"},
    {"type": "function_call", "name": "get_time", "arguments": "{}", "call_id": "c3"},
    {"role": "assistant", "content": "Sunny."},
]


def folder_with_sessions(sessions_dir: Path) -> SessionDirectory:
    folder = SessionDirectory(sessions_dir)
    folder.open("weather").add_items_sync(WEATHER)
    folder.open("hello").add_items_sync([{"role": "user", "content": "hey"}])
    return folder


def test_items_roles_characters_and_tool_calls_are_counted(sessions_dir: Path) -> None:
    stats = folder_stats(folder_with_sessions(sessions_dir))
    assert (stats.sessions, stats.items) == (2, 8)
    assert stats.by_role == {
        "user": 2,
        "reasoning": 1,
        "function_call": 3,
        "function_call_output": 1,
        "assistant": 1,
    }
    assert stats.tools.most_common() == [("get_weather", 2), ("get_time", 1)]
    assert stats.tool_calls == 3
    assert stats.characters == sum(len(text_of(item)) for item in WEATHER) + len("hey")
    assert stats.tokens == {} and set(stats.tokens_total.values()) == {0}


def test_only_the_sessions_asked_for(sessions_dir: Path) -> None:
    stats = folder_stats(folder_with_sessions(sessions_dir), ["hello"])
    assert (stats.sessions, stats.items, stats.tool_calls, dict(stats.by_role)) == (1, 1, 0, {"user": 1})


def test_as_dict_is_plain_json_most_common_first(sessions_dir: Path) -> None:
    record = folder_stats(folder_with_sessions(sessions_dir)).as_dict()
    assert json.loads(json.dumps(record)) == record
    assert list(record["by_role"]) == [
        "function_call",
        "user",
        "reasoning",
        "function_call_output",
        "assistant",
    ]
    assert record["tools"] == {"get_weather": 2, "get_time": 1} and record["tool_calls"] == 3
    assert record["tokens"]["by_session"] == {} and record["tokens"]["total"]["runs"] == 0


def test_usage_totals_per_session_and_overall(sessions_dir: Path) -> None:
    # Stats adds up what get_session_usage_sync answers, whichever sessions have a usage log
    stats = Stats()
    first = {"requests": 2, "input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    first |= {"cached_tokens": 1, "reasoning_tokens": 2, "runs": 1, "total_turns": 1}
    second = {name: value * 10 for name, value in first.items()}
    stats.add("a", [], first)
    stats.add("b", [{"role": "user", "content": "hi"}], None)
    stats.add("c", [], second)
    assert stats.sessions == 3 and set(stats.tokens) == {"a", "c"}
    assert stats.tokens_total == {
        "requests": 22,
        "input_tokens": 110,
        "output_tokens": 55,
        "total_tokens": 165,
        "cached_tokens": 11,
        "reasoning_tokens": 22,
        "runs": 11,
    }


def test_a_session_that_cannot_be_read_goes_to_on_error_and_is_left_out(sessions_dir: Path) -> None:
    folder = folder_with_sessions(sessions_dir)
    conflicted = JSONLSession("conflicted", sessions_dir).path
    conflicted.write_text('<<<<<<< HEAD\n{"role":"user","content":"a"}\n=======\n>>>>>>> other\n')
    skipped: list[tuple[str, Exception]] = []
    stats = folder_stats(folder, on_error=lambda session_id, exc: skipped.append((session_id, exc)))
    assert [(session_id, type(exc)) for session_id, exc in skipped] == [("conflicted", MalformedLineError)]
    assert (stats.sessions, stats.items) == (2, 8)
    with pytest.raises(MalformedLineError):
        folder_stats(folder)
    with pytest.raises(MalformedLineError):
        folder_stats(folder, ["conflicted"])


def test_a_real_usage_log_is_counted(sessions_dir: Path) -> None:
    agents = pytest.importorskip("agents")
    helpers = pytest.importorskip("history_helpers")
    agent, _ = helpers.weather_agent(["Paris"])
    session = JSONLSession("weather", sessions_dir)
    result = agents.Runner.run_sync(agent, "Weather in Paris?", session=session)
    session.record_usage_sync(result)
    JSONLSession("quiet", sessions_dir).add_items_sync([{"role": "user", "content": "hi"}])
    stats = folder_stats(SessionDirectory(sessions_dir))
    assert set(stats.tokens) == {"weather"}
    assert stats.tokens["weather"] == session.get_session_usage_sync()
    assert stats.tokens_total["runs"] == 1 and stats.tokens_total["total_tokens"] > 0


@pytest.mark.parametrize("turns", [[], ["--turns"]], ids=["stats", "stats --turns"])
def test_a_session_deleted_while_a_folder_stats_waits_for_it_is_simply_gone(
    sessions_dir: Path, turns: list[str]
) -> None:
    """Catches: a session deleted (under its lock) while ``stats`` waited for it was named as
    unreadable (``FileNotFoundError``; skipped) and the exit code was 1."""
    for name in "abc":
        JSONLSession(name, sessions_dir).add_items_sync([{"role": "user", "content": name}])
    busy = sessions_dir / "b.jsonl"
    holder = FileHandle(busy)
    command = [sys.executable, "-m", "jsonl_session", "stats", *turns, "--json", "--dir", str(sessions_dir)]
    with holder.locked(write=True, create=False):
        stats = subprocess.Popen(
            [*command, "--lock-timeout", "30"],
            env=cli_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_until_at(stats, busy)
        busy.unlink()  # under its lock, as ``rm`` deletes a session
    holder.close()
    out, err = stats.communicate(timeout=60)
    assert (err, stats.returncode) == ("", 0)
    if not turns:
        assert json.loads(out)["sessions"] == 2
    else:
        assert sorted(json.loads(line)["id"] for line in out.splitlines()) == ["a", "c"]
