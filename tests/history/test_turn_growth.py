"""Context growth per turn: bytes, context, recorded input tokens, largest outputs.

The numbers are checked on a session recorded by the real Runner (a scripted model, its usage
logged by ``record_usage``) against the file's own line lengths; the CLI's ``show --turns`` and
``stats --turns`` print them and flag a session that outgrew ``--context-window``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run

from jsonl_session import JSONLSession, MalformedLineError
from jsonl_session.history.turn_growth import BYTES_PER_TOKEN, read_growth, turn_growth

agents = pytest.importorskip("agents")
helpers = pytest.importorskip("history_helpers")


def recorded(sessions_dir: Path) -> JSONLSession:
    agent, _ = helpers.weather_agent(["Paris", "Oslo"])
    session = JSONLSession("weather", sessions_dir)
    for city in ("Paris", "Oslo"):
        session.record_usage_sync(agents.Runner.run_sync(agent, f"Weather in {city}?", session=session))
    return session


def test_growth_of_a_recorded_session_matches_its_file_and_usage_log(sessions_dir: Path) -> None:
    session = recorded(sessions_dir)
    sizes = [len(line) for line in session.path.read_bytes().splitlines()]
    growth = read_growth(session.path)
    first, second = growth.turns
    assert (first.items, first.bytes, first.context_bytes) == (4, sum(sizes[:4]), sum(sizes[:4]))
    assert (second.bytes, second.context_bytes) == (sum(sizes[4:]), sum(sizes))
    # The scripted model's usage: 100 + 120 input tokens over 2 requests, then 200 + 220.
    assert (first.input_tokens, first.requests, second.input_tokens, second.requests) == (220, 2, 420, 2)
    assert first.estimated_tokens == -(-sum(sizes[:4]) // BYTES_PER_TOKEN)
    assert first.context_tokens == max(first.estimated_tokens, 110)
    assert second.context_tokens == max(second.estimated_tokens, 210)
    assert [(output.line, output.tool, output.bytes) for output in first.largest] == [
        (3, "get_weather", sizes[2])
    ]
    assert growth.first_over(second.context_tokens) is None
    assert growth.first_over(first.context_tokens) is second


def test_the_largest_outputs_come_first_and_items_before_the_first_turn_count_as_context() -> None:
    def output(call: str, size: int) -> dict[str, Any]:
        return {"type": "function_call_output", "call_id": call, "output": "x" * size}

    entries = [
        (1, 1000, {"role": "system", "content": "rules"}),
        (2, 10, {"role": "user", "content": "go"}),
        *[(3 + n, 50, {"type": "function_call", "call_id": f"c{n}", "name": f"tool{n}"}) for n in range(4)],
        (7, 300, output("c0", 300)),
        (9, 900, output("c2", 900)),
        (10, 500, output("c3", 500)),
        (11, 100, {"type": "custom_tool_call_output", "call_id": "c1", "output": "y"}),
    ]
    growth = turn_growth(entries, [], largest=2)
    (turn,) = growth.turns
    assert growth.preamble_bytes == 1000 and turn.context_bytes == growth.total_bytes == 3010
    assert [(output.tool, output.bytes) for output in turn.largest] == [("tool2", 900), ("tool3", 500)]
    assert turn.input_tokens is None and turn.context_tokens == 753  # ceil(3010 / 4), nothing recorded


def test_a_line_that_is_not_an_item_is_named(sessions_dir: Path) -> None:
    sessions_dir.mkdir()
    path = sessions_dir / "bad.jsonl"
    path.write_bytes(b'{"role":"user","content":"hi"}\n{oops\n')
    with pytest.raises(MalformedLineError) as raised:
        read_growth(path)
    assert raised.value.line == 2


def test_show_turns_prints_bytes_context_and_largest_output(sessions_dir: Path) -> None:
    session = recorded(sessions_dir)
    growth = read_growth(session.path)
    shown = run(sessions_dir, "show", "weather", "--turns")
    assert shown.code == 0, shown.err
    rows = shown.out.splitlines()[1:]  # under the header naming the columns
    assert [row.split()[:3] for row in rows] == [["1", "items", "1-4"], ["2", "items", "5-8"]]
    assert f"~{growth.turns[0].context_tokens:,} tok" in rows[0] and "get_weather" in rows[0]
    assert rows[1].endswith("Weather in Oslo?")
    data = [
        json.loads(line)
        for line in run(sessions_dir, "show", "weather", "--turns", "--json").out.splitlines()
    ]
    assert [(row["bytes"], row["input_tokens"], row["largest"][0]["line"]) for row in data] == [
        (growth.turns[0].bytes, 220, 3),
        (growth.turns[1].bytes, 420, 7),
    ]


def test_a_session_that_outgrew_the_window_is_flagged(sessions_dir: Path) -> None:
    recorded(sessions_dir)
    tokens = read_growth(sessions_dir / "weather.jsonl").context_tokens
    fits = run(sessions_dir, "show", "weather", "--turns", "--context-window", str(tokens))
    assert (fits.code, fits.err) == (0, "")
    over = run(sessions_dir, "stats", "weather", "--turns", "--context-window", str(tokens - 1))
    assert over.code == 1
    assert over.err.startswith(f"weather: does not fit a {tokens - 1:,}-token context window from turn 2 (~")
    lines = over.out.splitlines()
    assert lines[0] == f"weather: 2 turns, {read_growth(sessions_dir / 'weather.jsonl').total_bytes} B, " + (
        f"context ~{tokens:,} tokens"
    )
    assert lines[1].split() == ["TURN", "ITEMS", "BYTES", "CONTEXT", "~TOKENS", "INPUT", "QUESTION"]
    assert "get_weather (line 3, function_call_output)" in lines[3]
    data = json.loads(run(sessions_dir, "stats", "--turns", "--json", "--context-window", "100").out)
    assert data["id"] == "weather" and data["fits"] is False and data["over_from_turn"] == 1
