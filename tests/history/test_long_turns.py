"""``turn_limit`` and ``rewind`` on turns longer than the first guess of items per turn.

Both scan back from the end in growing batches (8 items per turn at first). A turn of ~20
items, tool calls and their outputs included, must still come back whole, starting at its
user message: ``turn_limit=1`` once returned 8 items beginning mid-turn at a
``function_call``, the very cut ``turn_limit`` exists to prevent.
"""

from __future__ import annotations

import asyncio
import dataclasses
import pickle
from pathlib import Path
from typing import Any

import pytest

from jsonl_session import JSONLSession, MalformedLineError
from jsonl_session.history.turns import TooFewTurnsError


def long_turn(question: str, calls: int) -> list[dict[str, Any]]:
    """A user message, ``calls`` function_call/function_call_output pairs, reasoning, an answer."""
    items: list[dict[str, Any]] = [{"role": "user", "content": question}]
    for number in range(calls):
        call_id = f"{question}-call-{number}"
        items.append({"type": "reasoning", "id": f"rs-{call_id}", "summary": []})
        items.append(
            {"type": "function_call", "call_id": call_id, "name": "lookup", "arguments": f'{{"n":{number}}}'}
        )
        items.append({"type": "function_call_output", "call_id": call_id, "output": f"result {number}"})
    items.append({"role": "assistant", "content": f"answer to {question}"})
    return items


SYSTEM = {"role": "system", "content": "be brief"}


@pytest.mark.parametrize("calls", [6, 13, 40], ids=["20-items", "41-items", "122-items"])
def test_turn_limit_returns_the_whole_newest_turn_from_its_user_message(
    sessions_dir: Path, calls: int
) -> None:
    """Catches: ``newest_turns`` returning the batch it read when no user message is in it."""
    first, second = long_turn("first", 2), long_turn("second", calls)
    JSONLSession("s", sessions_dir).add_items_sync([SYSTEM, *first, *second])
    session = JSONLSession("s", sessions_dir, turn_limit=1)
    assert session.get_items_sync() == second
    assert asyncio.run(session.get_items()) == second
    assert session.get_items_sync()[0] == {"role": "user", "content": "second"}
    session.turn_limit = 2
    assert session.get_items_sync() == [*first, *second]
    session.turn_limit = 3  # more turns than the file holds: everything, the system prompt included
    assert session.get_items_sync() == [SYSTEM, *first, *second]


@pytest.mark.parametrize("calls", [6, 40], ids=["20-items", "122-items"])
def test_rewind_removes_a_whole_long_turn_and_nothing_before_it(sessions_dir: Path, calls: int) -> None:
    first, second = long_turn("first", 2), long_turn("second", calls)
    session = JSONLSession("s", sessions_dir)
    session.add_items_sync([SYSTEM, *first, *second])
    assert session.rewind_sync(1) == second
    assert session.get_items_sync() == [SYSTEM, *first]
    session.add_items_sync(second)
    assert asyncio.run(session.rewind(1)) == second
    assert session.get_items_sync() == [SYSTEM, *first]
    assert session.rewind_sync(1) == first  # never the items before the first user message
    assert session.get_items_sync() == [SYSTEM]


@pytest.mark.parametrize("bad", [True, False, -1, 1.0, "2"])
def test_turn_limit_must_be_a_non_negative_int(sessions_dir: Path, bad: object) -> None:
    """Catches: the check that refuses ``True`` (an int too) turned around, which refused every int."""
    with pytest.raises(ValueError, match="turn_limit must be a non-negative int or None"):
        JSONLSession("s", sessions_dir, turn_limit=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("good", [0, 1, 7, None])
def test_turn_limit_takes_any_non_negative_int(sessions_dir: Path, good: int | None) -> None:
    assert JSONLSession("s", sessions_dir, turn_limit=good).turn_limit == good


def test_turn_limit_and_a_settings_limit_do_not_mix(sessions_dir: Path) -> None:
    """Catches: the "not both" check turned around: it refused ``turn_limit`` alone."""
    with pytest.raises(ValueError, match="give turn_limit or a session_settings limit, not both"):
        JSONLSession("s", sessions_dir, turn_limit=1, session_settings={"limit": 5})
    for settings in ({"limit": None}, {"limit": -1}, None):  # no limit at all
        assert JSONLSession("s", sessions_dir, turn_limit=1, session_settings=settings).turn_limit == 1


@pytest.mark.parametrize(("count", "says"), [(1, "has 1 turn;"), (2, "has 2 turns;")])
def test_too_few_turns_says_how_many_and_crosses_processes(sessions_dir: Path, count: int, says: str) -> None:
    """Catches (mutation testing): "1 turns", and a pickled error that lost its message."""
    session = JSONLSession("s", sessions_dir)
    for number in range(count):
        turn = [{"role": "user", "content": f"q{number}"}, {"role": "assistant", "content": "a"}]
        session.add_items_sync(turn)
    with pytest.raises(TooFewTurnsError) as raised:
        session.rewind_sync(5)
    assert says in str(raised.value) and str(raised.value).endswith("cannot rewind 5")
    copy = pickle.loads(pickle.dumps(raised.value))
    assert (type(copy), str(copy), copy.count) == (TooFewTurnsError, str(raised.value), count)


def test_turn_limit_zero_returns_no_items(sessions_dir: Path) -> None:
    """Catches (mutation testing): ``turn_limit=0`` read as "from the first user message"."""
    JSONLSession("s", sessions_dir).add_items_sync([SYSTEM, *long_turn("first", 2), *long_turn("second", 2)])
    session = JSONLSession("s", sessions_dir, turn_limit=0)
    assert session.get_items_sync() == []
    assert asyncio.run(session.get_items()) == []


@pytest.mark.parametrize("calls", [6, 40], ids=["20-items", "122-items"])
def test_rewind_of_a_long_turn_whose_last_line_has_no_newline(sessions_dir: Path, calls: int) -> None:
    """A hand-edited file often ends without a newline; its last line is still an item.

    Catches (mutation testing): the batch taken for the whole file when the unterminated last
    item is counted the wrong way, which made the rewind fail with "has 0 turns".
    """
    first, second = long_turn("first", 2), long_turn("second", calls)
    path = sessions_dir / "s.jsonl"
    JSONLSession("s", sessions_dir).add_items_sync([SYSTEM, *first, *second])
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    session = JSONLSession("s", sessions_dir)
    assert session.rewind_sync(1) == second
    assert session.get_items_sync() == [SYSTEM, *first]


def test_rewind_over_a_malformed_line_names_its_problem(sessions_dir: Path) -> None:
    """Catches (mutation testing): the parser's account of the line replaced by "invalid line"."""
    path = sessions_dir / "s.jsonl"
    JSONLSession("s", sessions_dir).add_items_sync(long_turn("first", 1))
    with path.open("ab") as file:
        file.write(b'{"role": "user", "content": oops}\n{"role": "assistant", "content": "a"}\n')
    before = path.read_bytes()
    with pytest.raises(MalformedLineError) as raised:
        JSONLSession("s", sessions_dir).rewind_sync(1)
    assert "not valid JSON" in str(raised.value) and raised.value.line == 6
    assert path.read_bytes() == before


def test_turn_text_is_cut_to_sixty_characters_and_turns_are_frozen(sessions_dir: Path) -> None:
    """Catches (mutation testing): another width for a turn's text; a turn that could be changed
    (it is a value: hashable, safe to keep in a set or as a key)."""
    session = JSONLSession("s", sessions_dir)
    session.add_items_sync([{"role": "user", "content": "word " * 40}, {"role": "assistant", "content": "a"}])
    (turn,) = session.turns()
    assert len(turn.text) == 60 and turn.text.endswith("…") and turn.text.startswith("word word")
    with pytest.raises(dataclasses.FrozenInstanceError):
        turn.end = 5  # type: ignore[misc]
    assert {turn: "first"}[session.turns()[0]] == "first"
