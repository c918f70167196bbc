"""The usage ledger's arithmetic on incomplete input: what a missing or odd counter counts as.

Log lines written by hand, by an older version or by another tool may lack a counter; the
SDK's usage objects may lack a detail; a counter may hold something that is not a number.
Each counts as 0 (never as 1, never a crash), and a resumed run's share is computed per
counter. These were the survivors of mutation testing: each test names the mutant
it kills.
"""

from __future__ import annotations

import gc
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from jsonl_session.history.turns import Turn
from jsonl_session.history.usage import (
    COUNTERS,
    RecordedResults,
    counters_of,
    model_of,
    result_counters,
    session_usage,
    since,
    turn_hash,
    turn_usage,
)

ZEROS = dict.fromkeys(COUNTERS, 0)


@pytest.mark.parametrize(
    "usage",
    [
        {},
        SimpleNamespace(),
        {"input_tokens_details": {}, "output_tokens_details": {}},
        SimpleNamespace(input_tokens_details=SimpleNamespace(), output_tokens_details=SimpleNamespace()),
        {"requests": True, "input_tokens": "5", "output_tokens": None, "total_tokens": 1.5},
    ],
    ids=["empty-json", "empty-object", "empty-json-details", "empty-object-details", "not-ints"],
)
def test_a_missing_or_odd_counter_counts_as_zero(usage: Any) -> None:
    """Catches: a missing counter or detail read as 1 or -1; ``True`` or ``"5"`` taken for a number."""
    assert counters_of(usage) == ZEROS


def test_the_counters_of_a_saved_run_state_add_up_its_details() -> None:
    usage = {
        "requests": 2,
        "input_tokens": 10,
        "output_tokens": 4,
        "total_tokens": 14,
        "input_tokens_details": [{"cached_tokens": 3}, {"cached_tokens": 1}],
        "output_tokens_details": [{"reasoning_tokens": 2}, {}],
    }
    assert counters_of(usage) == {
        **dict(zip(COUNTERS[:4], (2, 10, 4, 14))),
        "cached_tokens": 4,
        "reasoning_tokens": 2,
    }


def test_a_result_without_usage_counts_zero_and_a_model_is_named_as_well_as_can_be() -> None:
    """Catches: a result without usage counted as 1s; ``None`` or a model's name read as an object."""
    assert result_counters(object()) == ZEROS
    named = SimpleNamespace(model="gpt-4.1")

    def agent_with(model: Any) -> SimpleNamespace:
        return SimpleNamespace(last_agent=SimpleNamespace(model=model))

    assert model_of(agent_with(None)) is None
    assert model_of(agent_with("gpt-4.1")) == "gpt-4.1"
    assert model_of(agent_with(named)) == "gpt-4.1"
    assert model_of(agent_with(SimpleNamespace(model=None))) == "SimpleNamespace"


def test_a_resumed_runs_share_is_counted_per_counter_even_when_a_line_lacks_one() -> None:
    """An older log line may lack a counter: it counted 0, so all of the run's counter is new.

    Catches: the missing counter read as 1 or -1 on either side, and a smaller counter (another
    run) not noticed when the other side lacks it."""
    assert since({"requests": 2}, {"requests": 1}) == {**ZEROS, "requests": 1}
    assert since({"requests": 2, "input_tokens": 5}, {"requests": 1}) == {
        **ZEROS,
        "requests": 1,
        "input_tokens": 5,
    }
    # Less of a counter than recorded: another run, all of it new.
    assert since({"requests": 5}, {"requests": 1, "input_tokens": 1}) == {"requests": 5}
    assert since(ZEROS, None) == ZEROS


def test_totals_count_a_missing_counter_as_zero() -> None:
    """Catches: a log line without a counter read as 1 (session totals) or -1 (turn totals)."""
    records: list[dict[str, Any]] = [
        {"requests": 1, "turn": 1, "turn_sha256": None},
        {"input_tokens": 5, "turn": 1},
    ]
    totals = session_usage(records)
    assert totals is not None
    assert {name: totals[name] for name in COUNTERS} == {**ZEROS, "requests": 1, "input_tokens": 5}


def test_turn_usage_skips_turns_without_records_and_goes_on() -> None:
    """Catches: the first turn without records ending the answer; a missing counter read as -1."""
    items = [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}]
    turns = [Turn(1, 0, 1, "one"), Turn(2, 1, 2, "two")]
    records = [{"turn": 2, "turn_sha256": turn_hash(items[1]), "requests": 1, "model": "m", "at": "t"}]
    [answer] = turn_usage(records, items, turns)
    assert answer["user_turn_number"] == 2
    assert (answer["requests"], answer["input_tokens"], answer["output_tokens_details"]) == (
        1,
        0,
        {"reasoning_tokens": 0},
    )


class Result:
    """A run result: any object that can be weakly referenced."""


def test_a_recorded_result_is_found_again_and_forgotten_when_freed(tmp_path: Path) -> None:
    """Catches: the weak reference's check turned around or made on the record (the lookup
    failing or crashing), a second session forgetting the first, and an entry kept after its
    result is freed (the table only grows)."""
    results, path, record = RecordedResults(), tmp_path / "s.jsonl", {"requests": 1}
    result = Result()
    results.remember(result, path, record)
    assert results.get(result, path) == record
    assert results.get(result, tmp_path / "other.jsonl") is None
    assert results.get(Result(), path) is None
    other = {"requests": 2}
    results.remember(result, tmp_path / "other.jsonl", other)  # the same result, another session
    assert (results.get(result, path), results.get(result, tmp_path / "other.jsonl")) == (record, other)
    del result
    gc.collect()
    assert results._records == {}


def test_a_result_that_cannot_be_weakly_referenced_is_not_remembered(tmp_path: Path) -> None:
    """Catches: ``remember`` raising for such a result instead of leaving it out."""
    results = RecordedResults()
    results.remember(12345, tmp_path / "s.jsonl", {"requests": 1})
    assert results.get(12345, tmp_path / "s.jsonl") is None
