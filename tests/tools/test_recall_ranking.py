"""The recall tool ranks: ``order="relevance"`` puts the best matches first (BM25
at query time), ``order="newest"`` keeps newest sessions first, and the answer stays bounded."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jsonl_session import JSONLSession
from jsonl_session.tools import recall
from jsonl_session.tools.recall import search_sessions


def at(folder: Path, session_id: str, when: int, *texts: str) -> None:
    JSONLSession(session_id, folder).add_items_sync([{"role": "user", "content": text} for text in texts])
    os.utime(folder / f"{session_id}.jsonl", (when, when))


def fill(folder: Path) -> None:
    """The newest session mentions both words once, in a long message; an older one is about them."""
    at(
        folder,
        "newest",
        3_000,
        "I went on holiday and the weather was fine; we also saw paris briefly "
        + "and then a long story about trains and food and museums " * 20,
    )
    at(folder, "focused", 2_000, "paris weather: paris in spring, weather mild, paris again")
    # "weather" (the longest word: what the search reads) is common; "paris" is rare among those items
    at(folder, "common", 1_000, *[f"weather report {n}: rain" for n in range(30)])
    at(folder, "weather-heavy", 1_500, "weather weather weather and once paris")


def test_relevance_puts_the_best_match_first_and_newest_keeps_its_order(sessions_dir: Path) -> None:
    fill(sessions_dir)
    newest = search_sessions(sessions_dir, "paris weather")
    best = search_sessions(sessions_dir, "paris weather", order="relevance")
    assert newest.total == best.total == 3
    assert [s.session_id for s in newest.snippets] == ["newest", "focused", "weather-heavy"]
    # "paris" is rare among the items holding "weather", so repeating it counts most; a long item
    # with one mention of each counts least
    assert [s.session_id for s in best.snippets] == ["focused", "weather-heavy", "newest"]


def test_ranking_is_bounded_and_still_counts_every_match(
    sessions_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at(sessions_dir, "many", 1_000, *[f"zurich trip note {n}" + " zurich" * (n % 5) for n in range(50)])
    monkeypatch.setattr(recall, "RANKED_MATCHES", 10)
    found = search_sessions(sessions_dir, "zurich trip", order="relevance", max_results=3)
    assert found.total == 50 and len(found.snippets) == 3
    # only the first 10 found were ranked (notes 0-9), and of those the ones that say zurich most
    numbers = [int(s.text.split()[3]) for s in found.snippets]
    assert all(number < 10 for number in numbers), numbers
    assert all(s.text.count("zurich") >= 4 for s in found.snippets), found.snippets
    with pytest.raises(ValueError, match="order"):
        search_sessions(sessions_dir, "zurich", order="oldest")


@pytest.mark.sdk
def test_an_agent_gets_the_best_match_first_through_the_runner(sessions_dir: Path) -> None:
    agents = pytest.importorskip("agents")
    from test_recall import CallsTheToolThenAnswers

    from jsonl_session import session_search_tool

    agents.set_tracing_disabled(True)
    fill(sessions_dir)
    model = CallsTheToolThenAnswers({"query": "paris weather", "session_id": None})
    tool = session_search_tool(sessions_dir, order="relevance", max_results=1, exclude=["today"])
    assert "best matches first" in tool.description
    agent = agents.Agent(name="Assistant", model=model, tools=[tool])
    agents.Runner.run_sync(
        agent, "What did I say about Paris weather?", session=JSONLSession("today", sessions_dir)
    )
    (output,) = [item for item in model.inputs[1] if item.get("type") == "function_call_output"]
    assert output["output"].startswith(
        "3 matches for 'paris weather' (showing 1):\n- [session focused, turn 1"
    )
