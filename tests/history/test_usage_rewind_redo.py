"""The usage ledger across a rewind and a redo of the same turn.

Rewinding a turn keeps its usage lines (those tokens were spent); redoing it records a new run
under the same turn number. Every run must count: the session's totals hold all of them, and
a turn's usage is credited while its number *and* user message match (docs/history.md). A
ledger that counted a rewound and redone turn once (one run per turn) went unnoticed (issue
29). Recording the *same* result object twice still counts it once (another helper's change):
a redo is another result.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from jsonl_session import JSONLSession


class Details:
    def __init__(self, **values: int) -> None:
        self.__dict__.update(values)


class Result:
    """A finished run's result as the SDK hands it over: only what ``record_usage`` reads."""

    def __init__(self, input_tokens: int, output_tokens: int) -> None:
        usage = Details(
            requests=1,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            total_tokens=input_tokens + output_tokens,
        )
        usage.input_tokens_details = Details(cached_tokens=0)  # type: ignore[attr-defined]
        usage.output_tokens_details = Details(reasoning_tokens=0)  # type: ignore[attr-defined]
        self.context_wrapper = Details()
        self.context_wrapper.usage = usage  # type: ignore[attr-defined]
        self.interruptions: list[Any] = []


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def answer(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def record(session: JSONLSession, result: Result, way: str) -> dict[str, Any]:
    if way == "async":
        return asyncio.run(session.record_usage(result))
    return session.record_usage_sync(result)


@pytest.mark.parametrize("way", ["sync", "async"])
def test_a_rewound_and_redone_turn_counts_every_run(sessions_dir: Path, way: str) -> None:
    """Catches: totals or records keyed by turn (number and hash), which counted the redo once."""
    session = JSONLSession("s", sessions_dir)
    session.add_items_sync([user("q1"), answer("a1")])
    record(session, Result(100, 10), way)
    session.add_items_sync([user("q2"), answer("a2")])
    first_try = Result(200, 20)
    record(session, first_try, way)
    removed = session.rewind_sync(1) if way == "sync" else asyncio.run(session.rewind(1))
    assert removed == [user("q2"), answer("a2")]
    session.add_items_sync([user("q2"), answer("a2, better")])  # the same question, asked again
    redo = Result(400, 40)
    line = record(session, redo, way)
    assert line["turn"] == 2 and line["total_tokens"] == 440

    records = session.usage_records()
    assert [(entry["turn"], entry["total_tokens"]) for entry in records] == [(1, 110), (2, 220), (2, 440)]
    assert records[1]["turn_sha256"] == records[2]["turn_sha256"]  # the same turn, by number and message
    totals = session.get_session_usage_sync()
    assert totals is not None
    assert (totals["runs"], totals["requests"], totals["total_tokens"]) == (3, 3, 770)
    assert asyncio.run(session.get_session_usage()) == totals
    per_turn = session.get_turn_usage_sync()
    assert isinstance(per_turn, list)
    # Turn 2's number and user message match both of its runs: both were spent on it.
    assert [(entry["user_turn_number"], entry["requests"], entry["total_tokens"]) for entry in per_turn] == [
        (1, 1, 110),
        (2, 2, 660),
    ]

    assert record(session, redo, way) == line  # the same result again: counted once
    assert len(session.usage_records()) == 3


def test_a_turn_redone_with_another_question_is_credited_only_with_the_new_run(sessions_dir: Path) -> None:
    session = JSONLSession("s", sessions_dir)
    session.add_items_sync([user("q1")])
    session.record_usage_sync(Result(100, 10))
    session.add_items_sync([user("q2")])
    session.record_usage_sync(Result(200, 20))
    session.rewind_sync(1)
    session.add_items_sync([user("q2, put otherwise")])
    session.record_usage_sync(Result(400, 40))
    per_turn = session.get_turn_usage_sync()
    assert isinstance(per_turn, list)
    assert [(entry["user_turn_number"], entry["total_tokens"]) for entry in per_turn] == [(1, 110), (2, 440)]
    one = session.get_turn_usage_sync(2)
    assert isinstance(one, dict) and one["requests"] == 1
    totals = session.get_session_usage_sync()
    assert totals is not None and (totals["runs"], totals["total_tokens"], totals["total_turns"]) == (
        3,
        770,
        3,
    )
