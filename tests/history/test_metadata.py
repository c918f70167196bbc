"""Per-session metadata: title, tags, owner and a free-form mapping in ``.meta``.

Set and read through the library (blocking and async), stored beside the session under its lock
and atomically, carried by ``rm`` and by a session created in a deleted one's place, listed by
``SessionDirectory.list`` (with ``tags`` / ``owner`` filters), and shown on the page
(``history.page_data.page_about``).
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import warnings
from pathlib import Path
from typing import Any

import pytest

from jsonl_session import (
    JSONLSession,
    SessionDirectory,
    SessionFileError,
    SessionMetadata,
    SkippedSessionWarning,
)
from jsonl_session.history.metadata import MAX_BYTES, meta_path
from jsonl_session.history.page_data import page_about
from jsonl_session.history.turn_growth import read_growth

QUESTION = {
    "role": "user",
    "content": "What's the   weather\nin Paris tomorrow, and should I take an umbrella?",
}
CONVERSATION = [
    {"role": "system", "content": "You are a weather assistant."},
    QUESTION,
    {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": '{"city":"Paris"}'},
    {"type": "function_call_output", "call_id": "c1", "output": "rain " * 300},
    {"role": "assistant", "content": "Take an umbrella."},
    {"role": "user", "content": "Thanks!"},
]


def make(sessions_dir: Path, session_id: str = "trip", items: list[Any] | None = None) -> JSONLSession:
    session = JSONLSession(session_id, sessions_dir)
    session.add_items_sync(CONVERSATION if items is None else items)
    return session


def test_set_then_get_round_trips_and_only_what_is_given_changes(sessions_dir: Path) -> None:
    session = make(sessions_dir)
    first = session.set_metadata_sync(title="Umbrella?", tags=["weather"], owner="user-42", extra={"n": 1})
    assert (first.title, first.tags, first.owner, dict(first.extra)) == (
        "Umbrella?",
        ("weather",),
        "user-42",
        {"n": 1},
    )
    second = session.set_metadata_sync(add_tags=["paris"])
    assert (second.title, second.tags, second.owner) == ("Umbrella?", ("paris", "weather"), "user-42")
    again = JSONLSession("trip", sessions_dir).get_metadata_sync()  # another object reads the file
    assert again == second and again.updated_at is not None


def test_the_async_twins_do_the_same(sessions_dir: Path) -> None:
    session = make(sessions_dir)

    async def scenario() -> SessionMetadata:
        await session.set_metadata(title="Async", add_tags=["a", "b"])
        await session.set_metadata(remove_tags=["a"], owner="me")
        return await session.get_metadata()

    got = asyncio.run(scenario())
    assert (got.title, got.tags, got.owner) == ("Async", ("b",), "me")
    assert got == session.get_metadata_sync()


def test_tags_are_sorted_kept_once_and_extra_merges_with_none_removing_a_key(sessions_dir: Path) -> None:
    session = make(sessions_dir)
    session.set_metadata_sync(add_tags=["bug", "billing", "bug"], extra={"ticket": "T-1", "channel": "web"})
    got = session.set_metadata_sync(remove_tags=["nope"], extra={"channel": None, "priority": 2})
    assert got.tags == ("billing", "bug")
    assert dict(got.extra) == {"ticket": "T-1", "priority": 2}
    assert session.set_metadata_sync(tags=[]).tags == ()


def test_the_file_is_stable_json_and_goes_away_when_nothing_is_set(sessions_dir: Path) -> None:
    session = make(sessions_dir)
    session.set_metadata_sync(title="T", add_tags=["b", "a"], owner="o", extra={"k": [1, "é"]})
    path = meta_path(session.path)
    assert path.name == "trip.jsonl.meta"
    stored = json.loads(path.read_bytes())
    assert list(stored) == ["extra", "owner", "tags", "title", "updated_at"]  # keys sorted
    assert stored["tags"] == ["a", "b"] and stored["extra"] == {"k": [1, "é"]}
    assert path.read_bytes().endswith(b"}\n") and "é".encode() in path.read_bytes()
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert not [name for name in path.parent.iterdir() if name.name.endswith(".tmp")]
    session.set_metadata_sync(title=None, tags=[], owner=None, extra={"k": None})
    assert not path.exists()
    assert session.get_metadata_sync().is_empty


def test_the_default_title_is_the_first_user_message_shortened_and_not_stored(sessions_dir: Path) -> None:
    session = make(sessions_dir)
    got = session.get_metadata_sync()
    assert got.title is None
    assert got.default_title == " ".join(QUESTION["content"].split())[:59] + "…"
    assert got.default_title.startswith("What's the weather in Paris tomorrow")
    assert len(got.default_title) == 60 and got.shown_title == got.default_title
    assert not meta_path(session.path).exists()
    titled = session.set_metadata_sync(title="Umbrella")
    assert titled.shown_title == "Umbrella" and titled.default_title == got.default_title
    assert "default_title" not in json.loads(meta_path(session.path).read_bytes())
    assert (
        make(sessions_dir, "quiet", [{"role": "system", "content": "x"}]).get_metadata_sync().default_title
        is None
    )


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"title": ""}, "must not be empty"),
        ({"title": "two\nlines"}, "one line"),
        ({"owner": "\x1b[31m"}, "control characters"),
        ({"title": "x" * 201}, "limit is 200"),
        ({"add_tags": ["t" * 65]}, "limit is 64"),
        ({"add_tags": "bug"}, "list of strings"),
        ({"add_tags": [f"t{n}" for n in range(65)]}, "at most 64 tags"),
        ({"extra": {"n": float("nan")}}, "JSON cannot store"),
        ({"extra": {"n": 2**64}}, "beyond 64 bits"),
        ({"extra": {"n": {1, 2}}}, "JSON cannot store"),
        ({"extra": {"": "v"}}, "must not be empty"),
        ({"extra": {"big": "x" * MAX_BYTES}}, "the limit is 65536"),
        ({"title": 5}, "must be a str"),
    ],
)
def test_bad_values_are_refused_and_nothing_is_written(
    sessions_dir: Path, changes: dict[str, Any], message: str
) -> None:
    session = make(sessions_dir)
    session.set_metadata_sync(title="kept")
    before = meta_path(session.path).read_bytes()
    with pytest.raises((ValueError, TypeError), match=message):
        session.set_metadata_sync(**changes)
    assert meta_path(session.path).read_bytes() == before


def test_a_hand_broken_file_is_named_and_left_alone(sessions_dir: Path) -> None:
    session = make(sessions_dir)
    for broken in (b"{not json", b'{"tags": "bug"}\n', b'{"title": "t", "colour": "red"}\n'):
        meta_path(session.path).write_bytes(broken)
        with pytest.raises(SessionFileError, match=r"trip\.jsonl\.meta"):
            session.get_metadata_sync()
        with pytest.raises(SessionFileError):
            session.set_metadata_sync(title="new")
        assert meta_path(session.path).read_bytes() == broken


def test_setting_metadata_on_a_session_without_a_file_creates_it_empty(sessions_dir: Path) -> None:
    session = JSONLSession("new", sessions_dir)
    assert session.get_metadata_sync() == SessionMetadata()  # nothing there: empty, nothing made
    assert not session.path.exists()
    session.set_metadata_sync(owner="user-7")
    assert session.path.read_bytes() == b"" and session.get_metadata_sync().owner == "user-7"


def test_rm_removes_it_clear_keeps_it_and_a_new_session_in_its_place_starts_without_it(
    sessions_dir: Path,
) -> None:
    session = make(sessions_dir)
    session.set_metadata_sync(title="T")
    session.clear_session_sync()
    assert session.get_metadata_sync().title == "T"
    assert SessionDirectory(sessions_dir).delete("trip")
    assert not meta_path(session.path).exists()
    make(sessions_dir).set_metadata_sync(owner="someone")
    session.path.unlink()  # by hand: the sidecar stays behind...
    assert meta_path(session.path).exists()
    assert make(sessions_dir).get_metadata_sync().is_empty  # ...and a new session does not inherit it


def _tag_many(folder: str, prefix: str, count: int, start: Any) -> None:
    start.wait()
    session = JSONLSession("shared", folder)
    for number in range(count):
        session.set_metadata_sync(add_tags=[f"{prefix}{number}"], extra={prefix: number})


def test_two_processes_tagging_at_once_both_keep_every_tag(sessions_dir: Path) -> None:
    make(sessions_dir, "shared")
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    workers = [
        context.Process(target=_tag_many, args=(str(sessions_dir), prefix, 15, start)) for prefix in "ab"
    ]
    for worker in workers:
        worker.start()
    start.set()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    got = JSONLSession("shared", sessions_dir).get_metadata_sync()
    assert set(got.tags) == {f"{prefix}{number}" for prefix in "ab" for number in range(15)}
    assert dict(got.extra) == {"a": 14, "b": 14}


def test_the_listing_reads_title_tags_and_owner_and_filters_on_them(sessions_dir: Path) -> None:
    make(sessions_dir, "plain")
    make(sessions_dir, "bug-1").set_metadata_sync(title="Crash", add_tags=["bug", "ios"], owner="ana")
    make(sessions_dir, "bug-2").set_metadata_sync(add_tags=["bug"], owner="ben")
    folder = SessionDirectory(sessions_dir)
    by_id = {info.session_id: info for info in folder.list()}
    assert (by_id["bug-1"].title, by_id["bug-1"].tags, by_id["bug-1"].owner) == (
        "Crash",
        ("bug", "ios"),
        "ana",
    )
    assert (by_id["plain"].title, by_id["plain"].tags, by_id["plain"].owner) == (None, (), None)
    assert sorted(info.session_id for info in folder.list(tags=["bug"])) == ["bug-1", "bug-2"]
    assert [info.session_id for info in folder.list(tags=["bug", "ios"])] == ["bug-1"]
    assert [info.session_id for info in folder.list(owner="ben")] == ["bug-2"]
    assert folder.list(tags=["Bug"]) == []  # exact, case included
    with pytest.raises(TypeError, match="list of strings"):
        folder.list(tags="bug")


def test_a_session_with_a_broken_meta_file_is_listed_without_it_and_named(sessions_dir: Path) -> None:
    make(sessions_dir, "good")
    meta_path(make(sessions_dir, "bad").path).write_bytes(b"[]")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        listed = SessionDirectory(sessions_dir).list()
    assert sorted(info.session_id for info in listed) == ["bad", "good"]
    assert any(
        issubclass(w.category, SkippedSessionWarning) and "bad.jsonl.meta" in str(w.message) for w in caught
    )


def test_the_page_gets_the_metadata_and_each_turns_growth(sessions_dir: Path) -> None:
    session = make(sessions_dir)
    session.set_metadata_sync(add_tags=["weather"], owner="user-42")
    about = page_about(session.path)
    assert about["title"] is None and about["default_title"].startswith("What's the weather in Paris")
    assert (about["tags"], about["owner"], about["extra"]) == (["weather"], "user-42", {})
    first, second = about["turns"]
    lines = session.path.read_bytes().splitlines()
    assert (first["turn"], first["first_line"], first["items"]) == (1, 2, 4)
    assert first["bytes"] == sum(len(line) for line in lines[1:5])
    assert first["largest"] == [
        {"line": 4, "type": "function_call_output", "tool": "get_weather", "bytes": len(lines[3])}
    ]
    assert (second["turn"], second["first_line"], second["text"]) == (2, 6, "Thanks!")
    assert about["context_tokens"] == -(-len(b"".join(lines)) // 4)
    assert page_about(session.path, turns=False)["turns"] is None


def test_the_pages_turns_are_the_numbers_turn_growth_gives(sessions_dir: Path) -> None:
    items = [
        *CONVERSATION,
        *CONVERSATION[2:],
        {"type": "function_call_output", "call_id": "c9", "output": "x"},
    ]
    items += [
        {"role": "user", "content": "again"},
        {"type": "function_call", "call_id": "c1", "name": "other"},
    ]
    session = make(sessions_dir, "mixed", items)
    (session.path.parent / "mixed.jsonl.usage").write_text(
        json.dumps({"turn": 1, "turn_sha256": "no match", "input_tokens": 5, "requests": 1}) + "\n"
    )
    growth = read_growth(session.path)
    fields = ("turn", "first_line", "items", "bytes", "context_tokens", "input_tokens", "largest", "text")
    expected = [{name: turn.as_dict()[name] for name in fields} for turn in growth.turns]
    about = page_about(session.path)
    assert about["turns"] == expected and len(expected) == 4
    assert about["context_tokens"] == growth.context_tokens


def test_a_hand_broken_meta_file_does_not_stop_the_page(sessions_dir: Path) -> None:
    session = make(sessions_dir)
    meta_path(session.path).write_bytes(b'{"tags": 5}\n')
    about = page_about(session.path)
    assert "trip.jsonl.meta" in about["problem"] and about["tags"] == [] and about["title"] is None
    assert len(about["turns"]) == 2
    assert page_about(make(sessions_dir, "fine").path)["problem"] is None
