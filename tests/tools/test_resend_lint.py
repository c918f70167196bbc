"""The resend lint: what the model API refuses when a history is sent again, by file and line.

Each rule has a failing and a passing case on a real file through ``check_file``; ``check
--fix`` drops only what needs no decision, through the session's lock, while another process
appends. The rules and their sources are in docs/resend-lint.md.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run

from jsonl_session import JSONLSession
from jsonl_session.history.resend_rules import CALL_PAIRS, FAKE_ID, resend_problems
from jsonl_session.tools.check import check_file

USER: dict[str, Any] = {"role": "user", "content": "hi"}
ANSWER: dict[str, Any] = {
    "type": "message",
    "role": "assistant",
    "id": "msg_1",
    "content": [{"type": "output_text", "text": "hello"}],
}
REASONING: dict[str, Any] = {"type": "reasoning", "id": "rs_1", "summary": []}
CALL: dict[str, Any] = {"type": "function_call", "name": "lookup", "arguments": "{}", "call_id": "c1"}
OUTPUT: dict[str, Any] = {"type": "function_call_output", "call_id": "c1", "output": "ok"}
REQUEST: dict[str, Any] = {
    "type": "mcp_approval_request",
    "id": "mcpr_1",
    "name": "deploy",
    "server_label": "ops",
    "arguments": "{}",
}
RESPONSE: dict[str, Any] = {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True}


def write(folder: Path, items: list[dict[str, Any]], name: str = "s") -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / f"{name}.jsonl"
    path.write_bytes(b"".join(json.dumps(item).encode() + b"\n" for item in items))
    return path


def found(path: Path) -> list[tuple[int | None, str, bool]]:
    return [(problem.line, problem.reason, problem.fixable) for problem in check_file(path)]


# -- reasoning without the item it produced ---------------------------------------------------


@pytest.mark.parametrize(
    ("after", "why"),
    [
        ([USER], "followed by a user message on line 3"),
        ([OUTPUT], "followed by a function_call_output on line 3"),
        ([RESPONSE], "followed by a mcp_approval_response on line 3"),
        ([], "it ends the history"),
    ],
)
def test_a_reasoning_item_without_its_item_is_reported_and_fixable(
    sessions_dir: Path, after: list[dict[str, Any]], why: str
) -> None:
    path = write(sessions_dir, [USER, REASONING, *after])
    problems = [problem for problem in found(path) if problem[1].startswith("reasoning")]
    assert problems == [
        (
            2,
            f"reasoning 'rs_1' is not followed by the item it produced ({why}); `check --fix` drops the line",
            True,
        )
    ]


@pytest.mark.parametrize(
    "following",
    [
        [ANSWER],
        [CALL, OUTPUT],
        [{**REASONING, "id": "rs_2"}, ANSWER],
        [{"type": "web_search_call", "id": "ws"}],
    ],
    ids=["message", "call", "second-reasoning-then-message", "hosted-call"],
)
def test_a_reasoning_item_followed_by_what_it_produced_passes(
    sessions_dir: Path, following: list[dict[str, Any]]
) -> None:
    assert found(write(sessions_dir, [USER, REASONING, *following])) == []


def test_consecutive_reasoning_items_are_all_orphaned_when_nothing_follows(sessions_dir: Path) -> None:
    path = write(sessions_dir, [USER, REASONING, {"type": "reasoning", "summary": []}, USER])
    assert [(line, fixable) for line, _, fixable in found(path)] == [(2, True), (3, True)]


# -- calls without outputs, outputs without calls ----------------------------------------------


@pytest.mark.parametrize("call_type", sorted(CALL_PAIRS))
def test_every_stored_call_kind_needs_its_output(sessions_dir: Path, call_type: str) -> None:
    call = {"type": call_type, "call_id": "c7", "id": "x7"}
    missing = write(sessions_dir, [USER, call, ANSWER], name="missing")
    assert found(missing) == [(2, f"{call_type} 'c7' has no {CALL_PAIRS[call_type]}", False)]
    answered = write(sessions_dir, [USER, call, {"type": CALL_PAIRS[call_type], "call_id": "c7"}, ANSWER])
    assert found(answered) == []
    orphan = write(sessions_dir, [USER, {"type": CALL_PAIRS[call_type], "call_id": "c8"}, ANSWER], name="o")
    assert found(orphan) == [(2, f"{CALL_PAIRS[call_type]} 'c8' answers no {call_type}", False)]


# -- approval requests without responses --------------------------------------------------------


def test_an_approval_request_without_its_response_is_reported(sessions_dir: Path) -> None:
    path = write(sessions_dir, [USER, REQUEST, ANSWER])
    assert found(path) == [(2, "mcp_approval_request 'mcpr_1' has no mcp_approval_response", False)]
    assert found(write(sessions_dir, [USER, REQUEST, RESPONSE, ANSWER])) == []


def test_an_approval_a_paused_run_waits_for_is_not_reported(sessions_dir: Path) -> None:
    path = write(sessions_dir, [USER, REQUEST])
    # The paused run records a hosted MCP approval with no call id (history.paused_runs.pending_of).
    run_file = sessions_dir / "s.jsonl.run"
    run_file.write_text(json.dumps({"pending": [{"tool": "deploy", "call_id": None}], "state": {}}))
    assert found(path) == []
    run_file.unlink()
    assert [line for line, _, _ in found(path)] == [2]


# -- duplicate ids ------------------------------------------------------------------------------


def test_duplicate_ids_are_reported_and_only_a_repeated_copy_is_fixable(sessions_dir: Path) -> None:
    changed = {**ANSWER, "content": [{"type": "output_text", "text": "other"}]}
    path = write(sessions_dir, [USER, ANSWER, ANSWER, USER, changed])
    assert found(path) == [
        (
            3,
            "duplicate id 'msg_1' (line 2): a repeated copy of the line before it; "
            + "`check --fix` drops the line",
            True,
        ),
        (5, "duplicate id 'msg_1' (line 2): which item belongs is unknown", False),
    ]


def test_distinct_ids_and_the_sdks_placeholder_id_pass(sessions_dir: Path) -> None:
    fake = {**ANSWER, "id": FAKE_ID}
    assert found(write(sessions_dir, [USER, fake, USER, fake, USER, {**ANSWER, "id": "msg_2"}, ANSWER])) == []


def test_the_rules_are_a_pure_function_of_numbered_items() -> None:
    numbered = [(1, USER), (4, REASONING), (9, USER)]  # blank lines between: numbers are the file's
    assert [(problem.line, problem.fixable) for problem in resend_problems(numbered)] == [(4, True)]


# -- check --fix ---------------------------------------------------------------------------------


def test_fix_drops_only_what_needs_no_decision_and_reports_the_rest(sessions_dir: Path) -> None:
    items = [USER, REASONING, USER, ANSWER, ANSWER, CALL, {**REQUEST}, {**OUTPUT, "call_id": "c9"}]
    path = write(sessions_dir, items)
    problems = check_file(path, fix=True)
    assert [(problem.line, problem.fixed) for problem in problems] == [
        (2, True),
        (5, True),
        (6, False),
        (7, False),
        (8, False),
    ]
    assert problems[0].reason.endswith("; dropped; kept in s.jsonl.dropped")
    kept = [json.loads(line) for line in path.read_text().splitlines()]
    assert kept == [USER, USER, ANSWER, CALL, REQUEST, {**OUTPUT, "call_id": "c9"}]
    assert [problem.fixed for problem in check_file(path, fix=True)] == [False, False, False]


def test_fix_reports_nothing_left_on_a_line_it_dropped(sessions_dir: Path) -> None:
    """A dropped line takes its other problems with it: ``--fix`` once reported a duplicate id on
    the line it had just removed (and exited 1 on a file it had repaired). Found by mutation testing.
    """
    later = {**REASONING, "summary": [{"type": "summary_text", "text": "again"}]}
    path = write(sessions_dir, [USER, REASONING, ANSWER, later])
    assert [(line, fixable) for line, _, fixable in found(path)] == [(4, False), (4, True)]
    problems = check_file(path, fix=True)
    assert [(problem.line, problem.fixed) for problem in problems] == [(4, True)]
    assert problems[0].fixable and problems[0].reason.endswith("; dropped; kept in s.jsonl.dropped")
    assert [json.loads(line) for line in path.read_text().splitlines()] == [USER, REASONING, ANSWER]
    assert check_file(path) == []
    write(sessions_dir, [USER, REASONING, ANSWER, later], name="c")
    fixed = run(sessions_dir, "check", "c", "--fix")
    assert (fixed.code, fixed.out.count("\n")) == (0, 1), fixed.out + fixed.err


def test_fix_leaves_the_file_alone_when_a_line_is_not_an_item(sessions_dir: Path) -> None:
    path = write(sessions_dir, [USER, REASONING, USER])
    path.write_bytes(path.read_bytes() + b"{oops\n")
    before = path.read_bytes()
    problems = check_file(path, fix=True)
    assert [(problem.line, problem.fixed) for problem in problems] == [(2, False), (4, False)]
    assert path.read_bytes() == before


def test_cli_check_names_the_lines_and_fix_prints_each_change(sessions_dir: Path) -> None:
    write(sessions_dir, [USER, REASONING, USER, ANSWER], name="c")
    shown = run(sessions_dir, "check")
    assert shown.code == 1
    expected = (
        f"{sessions_dir / 'c.jsonl'}:2: reasoning 'rs_1' is not followed by the item it produced "
        "(followed by a user message on line 3); `check --fix` drops the line"
    )
    assert shown.out.splitlines() == [expected]
    fixed = run(sessions_dir, "check", "c", "--fix")
    assert fixed.code == 0, fixed.err
    assert fixed.out.startswith(f"fixed: {sessions_dir / 'c.jsonl'}:2: reasoning 'rs_1'")
    assert fixed.out.rstrip().endswith("; dropped; kept in c.jsonl.dropped")
    assert "1 problem, 1 fixed" in fixed.err
    assert run(sessions_dir, "check").code == 0


APPENDER = textwrap.dedent(
    """
    import sys
    from jsonl_session import JSONLSession
    session = JSONLSession("busy", sys.argv[1])
    for number in range(int(sys.argv[2])):
        session.add_items_sync([{"role": "user", "content": f"q{number}"},
                                {"role": "assistant", "content": f"a{number}"}])
        if number == 0:
            print("appending", flush=True)
    """
)


def test_fix_goes_through_the_lock_while_another_process_appends(sessions_dir: Path) -> None:
    path = write(sessions_dir, [USER, REASONING, USER, ANSWER], name="busy")
    rounds = 300
    writer = subprocess.Popen(
        [sys.executable, "-c", APPENDER, str(sessions_dir), str(rounds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "appending"
        fixed = [problem for problem in check_file(path, fix=True) if problem.fixed]
        assert [(problem.line, problem.reason.split(" (")[0]) for problem in fixed] == [
            (2, "reasoning 'rs_1' is not followed by the item it produced")
        ]
        for _ in range(5):  # more fixes while it appends: nothing left to drop, nothing lost
            assert not [problem for problem in check_file(path, fix=True) if problem.fixed]
    finally:
        assert writer.wait(timeout=60) == 0
    items = JSONLSession("busy", sessions_dir).get_items_sync()
    assert items[:3] == [USER, USER, ANSWER]
    appended = [item["content"] for item in items[3:]]
    assert appended == [text for number in range(rounds) for text in (f"q{number}", f"a{number}")]
    assert check_file(path) == []
