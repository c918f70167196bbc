"""Hostile content: odd shapes and deep nesting get clear outcomes, no crash.

Each test here failed before its fix: ``check`` crashed on an unhashable ``type``, deep items
raised ``RecursionError`` or "internal error", and ``redact`` dropped a value.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from cli_helpers import run, write_lines

from jsonl_session import ItemNotStorableError, JSONLSession
from jsonl_session.core.codec import MAX_DEPTH, MAX_READ_DEPTH, depth_of
from jsonl_session.tools.check import check_file
from jsonl_session.tools.secrets import redact_session

USER = '{"role":"user","content":"hi"}'


def nested(levels: int) -> Any:
    """A value that is ``levels`` containers deep: ``[[...[1]...]]``."""
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def deep_line(levels: int) -> bytes:
    """An item (level 1) holding a list nest, ``levels`` containers deep in all."""
    inner = levels - 1
    return b'{"role":"user","content":' + b"[" * inner + b'"deep"' + b"]" * inner + b"}"


# -- point 1: check on items whose type or call_id is not a string ----------------------------


@pytest.mark.parametrize(
    "line",
    [
        '{"type":["function_call"],"call_id":"c1"}',
        '{"type":{"a":1},"call_id":"c1"}',
        '{"type":"function_call","name":"f","arguments":"{}","call_id":["c1"]}',
        '{"type":"function_call_output","call_id":{"id":"c1"},"output":"x"}',
    ],
)
def test_check_reports_a_type_or_call_id_that_is_not_a_string(sessions_dir: Path, line: str) -> None:
    path = write_lines(sessions_dir / "odd.jsonl", [USER, line, USER])
    problems = check_file(path)
    assert [problem.line for problem in problems] == [2]
    assert "not a string" in problems[0].reason
    result = run(sessions_dir, "check")
    assert result.code == 1 and "internal error" not in result.err
    assert f"{path}:2: " in result.out


# -- point 2: deep nesting ---------------------------------------------------------------------


def test_the_documented_limit_is_what_orjson_writes_and_reads() -> None:
    # If a new orjson moves either limit, this fails and docs/format.md must follow.
    orjson.dumps(nested(MAX_DEPTH))
    with pytest.raises(TypeError):
        orjson.dumps(nested(MAX_DEPTH + 1))
    orjson.loads(b"[" * MAX_READ_DEPTH + b"]" * MAX_READ_DEPTH)
    with pytest.raises(ValueError):
        orjson.loads(b"[" * (MAX_READ_DEPTH + 1) + b"]" * (MAX_READ_DEPTH + 1))
    assert depth_of(nested(10_000)) == 10_000  # iterative: no RecursionError


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 10_000])
def test_adding_an_item_nested_too_deeply_is_refused_with_the_error_tree(
    session: JSONLSession, levels: int
) -> None:
    session.add_items_sync([{"role": "user", "content": "kept"}])
    with pytest.raises(ItemNotStorableError, match=f"nested more than {MAX_DEPTH} levels deep"):
        session.add_items_sync([{"role": "user", "content": nested(levels - 1)}])
    assert session.get_items_sync() == [{"role": "user", "content": "kept"}]


def test_a_self_referencing_item_is_refused_with_the_error_tree(session: JSONLSession) -> None:
    item: dict[str, Any] = {"role": "user", "content": []}
    item["content"].append({"again": item})
    with pytest.raises(ItemNotStorableError, match="contains itself"):
        session.add_items_sync([item])
    assert not session.path.exists()


def test_the_deepest_storable_item_round_trips(session: JSONLSession) -> None:
    item = {"role": "user", "content": nested(MAX_DEPTH - 1)}
    session.add_items_sync([item])
    assert session.get_items_sync() == [item]


@pytest.fixture
def deep_file(sessions_dir: Path) -> Path:
    """A hand-written session with a 1,000-deep line: readable, but not writable by orjson."""
    return write_lines(sessions_dir / "deep.jsonl", [USER.encode(), deep_line(1_000), USER.encode()])


def test_a_readable_deep_line_is_read_and_reported_by_check(deep_file: Path) -> None:
    items = JSONLSession("deep", deep_file.parent).get_items_sync()
    assert len(items) == 3 and depth_of(items[1]) == 1_000
    problems = check_file(deep_file)
    assert [(problem.line, problem.fixable) for problem in problems] == [(2, False)]
    assert f"nested 1000 levels deep (more than {MAX_DEPTH})" in problems[0].reason


@pytest.mark.parametrize(
    "command",
    [
        ["show", "deep"],
        ["show", "deep", "--json"],
        ["tail", "deep"],
        ["tail", "deep", "--json"],
        ["stats"],
        ["stats", "deep"],
        ["grep", "deep"],
        ["grep", "deep", "--json"],
    ],
)
def test_reading_commands_show_a_deep_line_without_an_internal_error(
    deep_file: Path, command: list[str]
) -> None:
    result = run(deep_file.parent, *command)
    assert result.code == 0, result.err
    assert "error" not in result.err
    if "--json" in command and command[0] != "grep":
        lines = result.out.splitlines()
        assert len(lines) == 3
        assert depth_of(orjson.loads(lines[1])) == 1_000  # exact JSON, not a placeholder


def test_fork_of_a_deep_line_is_refused_clearly_and_creates_nothing(deep_file: Path) -> None:
    result = run(deep_file.parent, "fork", "deep", "copy")
    assert result.code == 1
    assert "internal error" not in result.err and f"nested more than {MAX_DEPTH} levels deep" in result.err
    assert not (deep_file.parent / "copy.jsonl").exists()


def test_rewrite_of_a_file_with_a_deep_line(deep_file: Path) -> None:
    session = JSONLSession("deep", deep_file.parent)
    before = deep_file.read_bytes()
    with session.rewrite() as draft:  # unchanged: the file is not touched
        assert len(draft.items) == 3
    assert deep_file.read_bytes() == before
    with pytest.raises(ItemNotStorableError, match="item 1 .*nested more than"), session.rewrite() as draft:
        draft.items.append({"role": "user", "content": "more"})
    assert deep_file.read_bytes() == before
    with session.rewrite() as draft:  # dropping the deep item makes the rest writable
        del draft.items[1]
    assert session.get_items_sync() == [json.loads(USER), json.loads(USER)]


def test_a_line_deeper_than_the_parser_reads_is_a_malformed_line(sessions_dir: Path) -> None:
    path = write_lines(sessions_dir / "x.jsonl", [USER.encode(), deep_line(MAX_READ_DEPTH + 1)])
    problems = check_file(path)
    assert [problem.line for problem in problems] == [2]
    assert problems[0].reason.startswith("not valid JSON")


# -- point 4: redact keeps every value when secrets are keys of one object ---------------------


def test_redact_keeps_both_values_when_two_secret_keys_collide(session: JSONLSession) -> None:
    first = "sk-" + "proj-" + "A1b2C3d4E5f6G7h8J9k0" * 2
    second = "sk-" + "proj-" + "Z9y8X7w6V5u4T3s2R1q0" * 2
    session.add_items_sync(
        [
            {
                "role": "user",
                "content": "x",
                "keys": {first: "one", second: "two", "[REDACTED:openai-key] 2": "three"},
            }
        ]
    )
    findings = redact_session(session)
    assert len(findings) == 2
    (item,) = session.get_items_sync()
    assert sorted(item["keys"].values()) == ["one", "three", "two"]
    assert all(first not in key and second not in key for key in item["keys"])
    assert item["keys"]["[REDACTED:openai-key]"] == "one"


def test_redact_refuses_a_secret_it_cannot_write_back_and_leaves_a_deep_line_alone(
    sessions_dir: Path,
) -> None:
    key = "sk-" + "proj-" + "A1b2C3d4E5f6G7h8J9k0" * 2
    path = write_lines(sessions_dir / "d.jsonl", [USER.encode(), deep_line(1_000)])
    assert redact_session(JSONLSession("d", sessions_dir)) == []  # nothing to redact: untouched
    secret_inside = deep_line(1_000).replace(b'"deep"', f'"{key}"'.encode())
    write_lines(path, [USER.encode(), secret_inside])
    before = path.read_bytes()
    with pytest.raises(ItemNotStorableError, match="item 1 .*holds a secret"):
        redact_session(JSONLSession("d", sessions_dir))
    assert path.read_bytes() == before
