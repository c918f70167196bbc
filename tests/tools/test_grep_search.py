"""``tools.grep.search``: the items whose text matches, from real session files, as the CLI prints them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from jsonl_session import JSONLSession, SessionDirectory, UnsafePathError
from jsonl_session.core.errors import SessionNotFoundError
from jsonl_session.tools import system_grep
from jsonl_session.tools.grep import Hit, search

WEATHER = [
    {"role": "user", "content": "What is the weather in Paris?"},
    {"type": "function_call", "name": "get_weather", "arguments": '{"city":"Paris"}', "call_id": "c1"},
    {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
    {"role": "assistant", "content": "It is sunny in PARIS today."},
]


def folder_with_sessions(sessions_dir: Path) -> SessionDirectory:
    folder = SessionDirectory(sessions_dir)
    folder.open("weather").add_items_sync(WEATHER)
    folder.open("notes").add_items_sync([{"role": "user", "content": "paris in spring"}])
    return folder


def every_session(folder: SessionDirectory) -> list[tuple[str, str]]:
    return [(session_id, folder.session_path(session_id)) for session_id in folder.ids()]


def spans(hits: list[Hit]) -> list[tuple[str, int, str, str]]:
    return [(hit.session_id, hit.line, hit.role, hit.text[hit.start : hit.end]) for hit in hits]


@pytest.mark.parametrize("pattern", ["Paris", "Par.s"])  # a plain word is pre-filtered, a regex is not
def test_hits_say_where_what_and_which_part_matched(sessions_dir: Path, pattern: str) -> None:
    folder = folder_with_sessions(sessions_dir)
    hits = list(search(every_session(folder), pattern))
    assert spans(hits) == [
        ("weather", 1, "user", "Paris"),
        ("weather", 2, "function_call", "Paris"),
    ]
    call = hits[1]
    assert call.heading == "tool call" and call.text == 'get_weather({"city":"Paris"})'
    assert call.item == WEATHER[1]


def test_ignore_case_and_the_session_order_given(sessions_dir: Path) -> None:
    folder = folder_with_sessions(sessions_dir)
    sessions = list(reversed(every_session(folder)))  # weather, then notes
    hits = list(search(sessions, "paris", ignore_case=True))
    assert [(hit.session_id, hit.line, hit.text[hit.start : hit.end]) for hit in hits] == [
        ("weather", 1, "Paris"),
        ("weather", 2, "Paris"),
        ("weather", 4, "PARIS"),
        ("notes", 1, "paris"),
    ]


def test_role_keeps_items_of_that_role_or_heading(sessions_dir: Path) -> None:
    folder = folder_with_sessions(sessions_dir)
    sessions = every_session(folder)
    assert [hit.line for hit in search(sessions, "(?i)paris", role="assistant")] == [4]
    by_type = [hit.line for hit in search(sessions, "Paris", role="function_call")]
    by_heading = [hit.line for hit in search(sessions, "Paris", role="tool call")]
    assert by_type == by_heading == [2]
    assert list(search(sessions, "Paris", role="nobody")) == []


def test_bad_lines_are_skipped_and_line_numbers_count_every_line(sessions_dir: Path) -> None:
    sessions_dir.mkdir()
    path = sessions_dir / "hand.jsonl"
    path.write_bytes(
        b'{"role":"user","content":"zebra one"}\n'
        b"\n"
        b"not json zebra\n"
        b'["zebra"]\n'
        b'{"role":"assistant","content":"zebra two"}\n'
        b'{"role":"user","content":"zebra torn'
    )
    hits = list(search([("hand", str(path))], "zebra"))
    assert [(hit.line, hit.role) for hit in hits] == [(1, "user"), (5, "assistant")]


def test_a_bad_pattern_fails_at_the_call_before_any_file_is_read(tmp_path: Path) -> None:
    with pytest.raises(re.error):
        search([("gone", str(tmp_path / "no-such-folder" / "gone.jsonl"))], "(unclosed")


def test_a_file_that_cannot_be_read_goes_to_on_error_and_the_rest_are_searched(
    sessions_dir: Path, tmp_path: Path
) -> None:
    folder = folder_with_sessions(sessions_dir)
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_text('{"role":"user","content":"Paris"}\n')
    link = sessions_dir / "link.jsonl"
    link.symlink_to(elsewhere)  # a symlink where a session belongs is refused, never followed
    sessions = [("link", str(link)), *every_session(folder)]
    errors: list[tuple[str, Exception]] = []
    hits = list(search(sessions, "Paris", on_error=lambda path, exc: errors.append((str(path), exc))))
    assert [(path, type(exc)) for path, exc in errors] == [(str(link), UnsafePathError)]
    assert [(hit.session_id, hit.line) for hit in hits] == [("weather", 1), ("weather", 2)]
    with pytest.raises(UnsafePathError):
        list(search(sessions, "Paris"))


def test_a_session_deleted_since_it_was_listed_is_no_error_without_on_error(sessions_dir: Path) -> None:
    folder = folder_with_sessions(sessions_dir)
    sessions = every_session(folder)
    JSONLSession("notes", sessions_dir).path.unlink()
    assert [hit.session_id for hit in search(sessions, "(?i)paris")] == ["weather"] * 3


@pytest.mark.parametrize("engine", ["system grep", "python"])
def test_sessions_gone_since_they_were_listed_are_told_to_on_error_in_their_place(
    sessions_dir: Path, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Catches: a gone session after the first of a system grep's batch skipped without a word
    (only the first of a batch may report; the next batch must start at it)."""
    if engine == "python":
        monkeypatch.setenv(system_grep.DISABLE_VARIABLE, "1")
    for name in "acf":
        JSONLSession(name, sessions_dir).add_items_sync([{"role": "user", "content": f"needle in {name}"}])
    sessions = [
        (name, str(sessions_dir / f"{name}.jsonl")) for name in ["a", "gone1", "c", "gone2", "gone3", "f"]
    ]
    told: list[str] = []

    def on_error(path: object, exc: Exception) -> None:
        assert isinstance(exc, SessionNotFoundError) and "deleted while grep ran" in str(exc)
        told.append(Path(str(path)).stem)

    found = [hit.session_id for hit in search(sessions, "needle", on_error=on_error)]
    assert found == ["a", "c", "f"]
    assert told == ["gone1", "gone2", "gone3"]
    before_the_error: list[str] = []

    def fail(path: object, exc: Exception) -> None:
        raise exc

    with pytest.raises(SessionNotFoundError, match="gone1"):
        for hit in search(sessions, "needle", on_error=fail):
            before_the_error.append(hit.session_id)
    assert before_the_error == ["a"]


@pytest.mark.parametrize("engine", ["system grep", "python"])
def test_a_file_named_twice_answers_for_each_of_its_names_in_turn(
    sessions_dir: Path, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Catches: the system grep's hits of a file named twice in one grep's files all went to
    its last name (``x, y`` for the same file gave ``y, y``)."""
    if engine == "python":
        monkeypatch.setenv(system_grep.DISABLE_VARIABLE, "1")
    for name in ("p", "c"):
        JSONLSession(name, sessions_dir).add_items_sync(
            [{"role": "user", "content": f"needle {n} in {name}"} for n in range(2)]
        )
    p, c = str(sessions_dir / "p.jsonl"), str(sessions_dir / "c.jsonl")
    # more names than greps run at once (system_grep.MAX_PROCESSES): one grep gets several
    sessions = [(f"p{n}", p) for n in range(9)] + [("c", c)] + [("p9", p)]
    found = [(hit.session_id, hit.line) for hit in search(sessions, "needle")]
    assert found == [(f"p{n}", line) for n in range(9) for line in (1, 2)] + [
        ("c", 1),
        ("c", 2),
        ("p9", 1),
        ("p9", 2),
    ]
