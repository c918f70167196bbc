"""Turns: listing them, turn-aware history (``turn_limit``), ``rewind`` and ``fork --at-turn``."""

from __future__ import annotations

import asyncio
import os
import warnings
from pathlib import Path
from typing import Any

import orjson
import pytest
from cli_helpers import run

from jsonl_session import JSONLSession, MalformedLineError, SessionDirectory, TornTailWarning

agents = pytest.importorskip("agents")
helpers = pytest.importorskip("history_helpers")

CITIES = ["Paris", "Zürich", "Oslo"]


def texts(model_input: Any) -> list[str]:
    return [str(item.get("content")) for item in model_input if item.get("role") == "user"]


@pytest.fixture
def three_turns(sessions_dir: Path) -> JSONLSession:
    """A session written by the real Runner: three questions, each answered through a tool call."""
    agent, _ = helpers.weather_agent(CITIES)
    session = JSONLSession("weather", sessions_dir)
    for city in CITIES:
        agents.Runner.run_sync(agent, f"Weather in {city}?", session=session)
    return session


def test_turns_list_each_question_with_its_tool_call_and_answer(three_turns: JSONLSession) -> None:
    turns = three_turns.turns()
    assert [(t.index, t.start, t.end, t.text) for t in turns] == [
        (1, 0, 4, "Weather in Paris?"),
        (2, 4, 8, "Weather in Zürich?"),
        (3, 8, 12, "Weather in Oslo?"),
    ]
    items = three_turns.get_items_sync()
    assert [item.get("type", "message") for item in items[4:8]] == [
        "message",
        "function_call",
        "function_call_output",
        "message",
    ]


def test_turn_limit_returns_whole_turns_where_an_item_limit_cuts_a_tool_call_off(
    three_turns: JSONLSession, sessions_dir: Path
) -> None:
    cut = three_turns.get_items_sync(limit=6)
    assert cut[0]["type"] == "function_call_output"  # what an item limit does: its call is gone
    by_turns = JSONLSession("weather", sessions_dir, turn_limit=2)
    items = by_turns.get_items_sync()
    assert items == three_turns.get_items_sync()[4:]
    assert items[0] == {"content": "Weather in Zürich?", "role": "user"}
    assert (
        JSONLSession("weather", sessions_dir, turn_limit=9).get_items_sync() == three_turns.get_items_sync()
    )
    assert by_turns.get_items_sync(limit=1) == items[-1:]  # an explicit item limit still counts items


def test_the_runner_sends_the_model_only_the_newest_whole_turns(
    three_turns: JSONLSession, sessions_dir: Path
) -> None:
    agent, model = helpers.weather_agent(["Rome"])
    session = JSONLSession("weather", sessions_dir, turn_limit=1)
    agents.Runner.run_sync(agent, "Weather in Rome?", session=session)
    first_call = model.calls[0].input
    assert texts(first_call) == ["Weather in Oslo?", "Weather in Rome?"]
    assert first_call[0]["role"] == "user"  # history starts with a question, not a tool output
    assert len(three_turns.turns()) == 4


def test_turn_limit_reads_from_the_end_only(sessions_dir: Path) -> None:
    """A bad line far up is not read: the cost follows what is returned, not the file."""
    session = JSONLSession("long", sessions_dir, turn_limit=2)
    session.path.parent.mkdir(parents=True)
    lines = [b"{not json"] + [
        orjson.dumps(item)
        for number in range(2000)
        for item in (
            {"role": "user", "content": f"q{number}"},
            {"role": "assistant", "content": f"a{number}"},
        )
    ]
    session.path.write_bytes(b"\n".join(lines) + b"\n")
    assert [item["content"] for item in session.get_items_sync()] == ["q1998", "a1998", "q1999", "a1999"]
    with pytest.raises(MalformedLineError):
        JSONLSession("long", sessions_dir).get_items_sync()


def test_turn_limit_and_an_item_limit_are_not_both_allowed(sessions_dir: Path) -> None:
    with pytest.raises(ValueError, match="not both"):
        JSONLSession("x", sessions_dir, turn_limit=2, session_settings={"limit": 5})
    with pytest.raises(ValueError, match="turn_limit"):
        JSONLSession("x", sessions_dir, turn_limit=-1)


def test_rewind_truncates_whole_turns_in_place(three_turns: JSONLSession) -> None:
    before = three_turns.get_items_sync()
    inode = os.stat(three_turns.path).st_ino
    removed = three_turns.rewind_sync(2)
    assert removed == before[4:]
    assert three_turns.get_items_sync() == before[:4]
    assert os.stat(three_turns.path).st_ino == inode  # a truncation, not a rewrite
    assert three_turns.path.read_bytes().endswith(b"\n")


def test_rewind_keeps_what_precedes_the_first_question_and_saves_a_torn_tail(sessions_dir: Path) -> None:
    session = JSONLSession("s", sessions_dir)
    system = {"role": "system", "content": "Be brief."}
    session.add_items_sync(
        [system, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    )
    with session.path.open("ab") as file:
        file.write(b'{"role":"assist')  # a writer killed mid-line
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert len(session.rewind_sync(1)) == 2
    assert any(issubclass(w.category, TornTailWarning) for w in caught)
    assert session.get_items_sync() == [system]
    assert session.sidecar_path.read_bytes() == b'{"role":"assist\n'
    assert session.rewind_sync(0) == []


def test_rewinding_more_turns_than_there_are_is_an_error_that_removes_nothing(
    three_turns: JSONLSession, sessions_dir: Path
) -> None:
    before = three_turns.get_items_sync()
    with pytest.raises(ValueError, match="has 3 turns; cannot rewind 10"):
        three_turns.rewind_sync(10)
    with pytest.raises(ValueError, match="has 3 turns; cannot rewind 4"):
        asyncio.run(three_turns.rewind(4))
    assert three_turns.get_items_sync() == before
    assert len(three_turns.rewind_sync(3)) == len(before)  # all of them is fine
    with pytest.raises(ValueError, match="has 0 turns; cannot rewind 1"):
        three_turns.rewind_sync(1)
    result = run(sessions_dir, "rewind", "weather")
    assert (result.code, result.err.count("\n")) == (1, 1) and "has 0 turns; cannot rewind 1" in result.err


def test_forking_at_a_turn_beyond_the_last_is_an_error(three_turns: JSONLSession, sessions_dir: Path) -> None:
    store = SessionDirectory(sessions_dir)
    with pytest.raises(ValueError, match="has 3 turns; cannot fork at turn 4"):
        store.fork("weather", "w2", at_turn=4)
    assert not (sessions_dir / "w2.jsonl").exists()
    assert len(store.fork("weather", "w3", at_turn=3).get_items_sync()) == 12  # every turn is fine
    result = run(sessions_dir, "fork", "weather", "w4", "--at-turn", "99")
    assert (result.code, result.err.count("\n")) == (1, 1) and "cannot fork at turn 99" in result.err
    assert not (sessions_dir / "w4.jsonl").exists()


def test_fork_at_turn_copies_whole_turns(three_turns: JSONLSession, sessions_dir: Path) -> None:
    store = SessionDirectory(sessions_dir)
    fork = store.fork("weather", "weather-b", at_turn=2)
    assert fork.get_items_sync() == three_turns.get_items_sync()[:8]
    assert store.fork("weather", "weather-c", at_turn=0).get_items_sync() == []
    with pytest.raises(ValueError, match="not both"):
        store.fork("weather", "weather-d", at=1, at_turn=1)


def test_cli_show_turns_rewind_and_fork_at_turn(three_turns: JSONLSession, sessions_dir: Path) -> None:
    shown = run(sessions_dir, "show", "weather", "--turns")
    assert shown.code == 0, shown.err
    rows = shown.out.splitlines()[1:]  # under the header naming the columns
    assert [row.split()[:3] for row in rows] == [
        ["1", "items", "1-4"],
        ["2", "items", "5-8"],
        ["3", "items", "9-12"],
    ]
    assert rows[1].endswith("Weather in Zürich?")

    forked = run(sessions_dir, "fork", "weather", "w2", "--at-turn", "1")
    assert (forked.code, forked.err.strip()) == (0, "w2: forked 4 items from weather")

    rewound = run(sessions_dir, "rewind", "weather", "--turns", "2")
    assert rewound.code == 0, rewound.err
    assert rewound.err.strip() == "weather: removed 2 turns (8 items)"
    assert rewound.out.splitlines()[0] == "user: Weather in Zürich?"
    assert "tool call get_weather" in rewound.out
    assert len(three_turns.get_items_sync()) == 4

    assert run(sessions_dir, "rewind", "w2", "--turns", "1").code == 0
    nothing = run(sessions_dir, "rewind", "w2")
    assert (nothing.code, nothing.err.strip()) == (
        1,
        "jsonl-session: error: w2: has 0 turns; cannot rewind 1",
    )
    assert run(sessions_dir, "rewind", "missing").code == 1
    assert run(sessions_dir, "rewind", "weather", "--turns", "x").code == 2


def _hold_the_lock(directory: str, held: Any, release: Any) -> None:
    """Another program editing the session: holds its write lock until told to stop."""
    with JSONLSession("weather", directory).rewrite():
        held.set()
        release.wait(60)


def test_rewind_waits_for_the_lock_another_process_holds(three_turns: JSONLSession) -> None:
    import multiprocessing

    from jsonl_session import LockTimeout

    ctx = multiprocessing.get_context("spawn")  # a separate program: no inherited descriptors
    held, release = ctx.Event(), ctx.Event()
    editor = ctx.Process(target=_hold_the_lock, args=(str(three_turns.directory), held, release))
    editor.start()
    try:
        assert held.wait(60)
        waiting = JSONLSession("weather", three_turns.directory, lock_timeout=0.2)
        with pytest.raises(LockTimeout):
            waiting.rewind_sync(1)
        assert len(three_turns.path.read_bytes().splitlines()) == 12  # nothing removed meanwhile
    finally:
        release.set()
        editor.join(60)
    assert editor.exitcode == 0
    assert len(waiting.rewind_sync(1)) == 4 and len(three_turns.turns()) == 2


def test_recording_usage_finds_the_newest_turn_without_parsing_every_item(sessions_dir: Path) -> None:
    session = JSONLSession("s", sessions_dir)
    session.path.parent.mkdir(parents=True)
    lines = [
        b'\xef\xbb\xbf{"role":"user","content":"first"}',  # a BOM before the first question
        b'{"type":"function_call_output","call_id":"c1","output":"the user said \\"role\\":\\"user\\""}',
        b'{"role":"system","content":"no user here"}',
        b'{"content":"second","role":"user"}',
        b'{"role":"assistant","content":"ok"}',
    ]
    session.path.write_bytes(b"\n".join(lines) + b"\n" + b'{"role":"us')  # and a torn tail
    record = session.record_usage_sync(object())
    assert record["turn"] == 2 and [turn.index for turn in session.turns()] == [1, 2]
    entries = session.get_turn_usage_sync()
    assert isinstance(entries, list) and [entry["user_turn_number"] for entry in entries] == [2]
