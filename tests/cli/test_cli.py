"""The ``jsonl-session`` console script, run as a real subprocess on real session files."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest
from cli_helpers import SCRIPT, cli_env, run, run_on_terminal, write_lines
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_session import JSONLSession, SessionDirectory
from jsonl_session.cli.commands import _HANDLERS, handler_for, main
from jsonl_session.cli.parser import build_parser
from jsonl_session.cli.sessions import iso_utc
from jsonl_session.render.sizes import human_size

CONVERSATION: list[dict[str, Any]] = [
    {"role": "user", "content": "What is the weather in Paris?"},
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Need the weather tool."}],
    },
    {"type": "function_call", "name": "get_weather", "arguments": '{"city":"Paris"}', "call_id": "call_1"},
    {"type": "function_call_output", "call_id": "call_1", "output": "Sunny, 21C " + "x" * 400},
    {"role": "assistant", "content": [{"type": "output_text", "text": "It is sunny in Paris, 21°C."}]},
]


def without_times(shown: str) -> list[str]:
    """``show``'s lines without the time column (tests/cli/test_cli_timestamps.py checks it)."""
    return [
        re.sub(r"^( *\d+)  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d  ", r"\1  ", line) for line in shown.splitlines()
    ]


def make(
    sessions_dir: Path, session_id: str = "convo", items: list[dict[str, Any]] | None = None
) -> JSONLSession:
    session = JSONLSession(session_id, sessions_dir)
    session.add_items_sync(CONVERSATION if items is None else items)
    return session


def every_command() -> dict[str, object]:
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return dict(action.choices)  # type: ignore[arg-type]


def test_help_lists_every_command_and_every_command_has_an_example() -> None:
    commands = every_command()
    assert {
        "ls",
        "show",
        "tail",
        "add",
        "pop",
        "clear",
        "rm",
        "fork",
        "check",
        "edit",
        "grep",
        "stats",
        "export",
        "import",
        "redact",
    } <= set(commands)
    assert set(commands) == set(_HANDLERS)  # every command the grammar knows runs a function
    assert all(callable(handler_for(name)) for name in commands)
    for name, parser in commands.items():
        assert "Example:" in parser.epilog and f"jsonl-session {name}" in parser.epilog, name  # type: ignore[attr-defined]
        assert any("--dir" in action.option_strings for action in parser._actions), name  # type: ignore[attr-defined]

    result = run(None, "--help", script=True)  # the installed console script, not just -m
    assert result.code == 0
    for name in commands:
        assert f"\n    {name} " in result.out, name

    result = run(None, "show", "-h")
    assert result.code == 0 and "Example:" in result.out and "jsonl-session show convo_123" in result.out


def test_add_text_then_stdin_then_show_ls_and_pop(sessions_dir: Path) -> None:
    assert run(sessions_dir, "add", "c1", "Hello there").code == 0
    assert run(sessions_dir, "add", "c1", "Hi! How can I help?", "--role", "assistant").code == 0
    items = "\n".join(json.dumps(item) for item in CONVERSATION[1:4]) + "\n"
    result = run(sessions_dir, "add", "c1", "-", input=items)
    assert (result.code, result.err) == (0, "c1: added 3 items\n")

    stored = JSONLSession("c1", sessions_dir).get_items_sync()
    assert stored[:2] == [
        {"role": "user", "content": "Hello there"},
        {"role": "assistant", "content": "Hi! How can I help?"},
    ]
    assert stored[2:] == CONVERSATION[1:4]

    show = run(sessions_dir, "show", "c1")
    assert show.code == 0
    lines = without_times(show.out)
    assert lines[0] == "   1  user: Hello there"
    assert lines[2] == "   3  reasoning: Need the weather tool."
    assert lines[3] == '   4  tool call get_weather {"city":"Paris"}  [call_1]'
    assert lines[4].startswith("   5  tool output [call_1]: Sunny, 21C xxx") and lines[4].endswith("…")
    assert len(lines[4]) < 250  # the 400-character output is shortened
    assert "\x1b[" not in show.out  # not a terminal: no colour

    newest = run(sessions_dir, "show", "c1", "-n", "2", "--json")
    assert [json.loads(line) for line in newest.out.splitlines()] == stored[-2:]

    make(sessions_dir, "older", [{"role": "user", "content": "x"}])
    os.utime(sessions_dir / "older.jsonl", (1_000_000_000, 1_000_000_000))
    (sessions_dir / "older.jsonl.times").unlink()  # no item times: ls shows the file's time
    listing = run(sessions_dir, "ls")
    assert listing.code == 0
    rows = listing.out.splitlines()
    assert rows[0].split() == ["ID", "ITEMS", "SIZE", "LAST", "ACTIVITY", "(UTC)", "TITLE"]
    assert rows[1].split()[:2] == ["c1", "5"] and rows[2].split()[:2] == ["older", "1"]  # newest first
    assert rows[2].endswith('  "x"')  # no title set: the first user message, in quotes
    as_json = [json.loads(line) for line in run(sessions_dir, "ls", "--json").out.splitlines()]
    assert [(row["id"], row["items"]) for row in as_json] == [("c1", 5), ("older", 1)]
    assert as_json[1]["modified"].startswith("2001-09-09T01:46:40")

    popped = run(sessions_dir, "pop", "c1")
    assert (popped.code, json.loads(popped.out)) == (0, CONVERSATION[3])
    assert JSONLSession("c1", sessions_dir).get_items_sync() == stored[:-1]


def test_ls_shows_the_second_that_the_listed_datetime_shows(sessions_dir: Path) -> None:
    # ls formats times without datetime: 0.9999996 s rounds up to the next second, as datetime does
    make(sessions_dir, "up", [{"role": "user", "content": "x"}])
    make(sessions_dir, "down", [{"role": "user", "content": "x"}])
    for session_id in ("up", "down"):  # no item times: ls shows the file's
        (sessions_dir / f"{session_id}.jsonl.times").unlink()
    os.utime(sessions_dir / "up.jsonl", ns=(1_000_000_000_999_999_600,) * 2)
    os.utime(sessions_dir / "down.jsonl", ns=(1_000_000_000_999_999_400,) * 2)
    rows = [row.split() for row in run(sessions_dir, "ls").out.splitlines()[1:]]
    shown = {row[0]: " ".join(row[4:6]) for row in rows}  # id, items, size and unit, then the time
    listed = {info.session_id: info.modified for info in SessionDirectory(sessions_dir).list()}
    assert shown == {session_id: when.strftime("%Y-%m-%d %H:%M:%S") for session_id, when in listed.items()}
    assert shown == {"up": "2001-09-09 01:46:41", "down": "2001-09-09 01:46:40"}


def test_ls_json_writes_the_bytes_orjson_would(sessions_dir: Path) -> None:
    # written with the standard json module (it loads ~10 ms sooner): the same bytes, UTF-8 as is
    for session_id in ("plain", "café ☕", 'quo"te\\back', "tab\tnew\nline\x1b\x7f", "𝄞 emoji 🎉"):
        make(sessions_dir, session_id, [{"role": "user", "content": session_id}])  # default titles too
    os.utime(sessions_dir / "plain.jsonl", ns=(1_000_000_000_999_999_600,) * 2)
    (sessions_dir / "plain.jsonl.times").unlink()  # no item times: its last activity is its file's
    listed = SessionDirectory(sessions_dir).list()  # most recently active first, as ls lists them
    expected = b"".join(
        orjson.dumps(
            {
                "id": info.session_id,
                "items": info.items,
                "size": info.size,
                "modified": info.modified.isoformat(timespec="seconds"),
                "last_activity": datetime.fromtimestamp(info.last_activity, timezone.utc).isoformat(
                    timespec="seconds"
                ),
                "path": str(info.path),
                "paused": info.paused,
                "held": info.held,
                "forked_from": info.forked_from,
                "title": info.title,
                "default_title": info.default_title,
                "needs_merge": info.needs_merge,
                "tags": list(info.tags),
                "owner": info.owner,
            }
        )
        + b"\n"
        for info in listed
    )
    completed = subprocess.run(
        [sys.executable, "-m", "jsonl_session", "ls", "--json", "--dir", str(sessions_dir)],
        capture_output=True,
        env=cli_env(LC_ALL="C", PYTHONIOENCODING="ascii"),
        check=True,
    )
    assert completed.stdout == expected
    assert b"2001-09-09T01:46:41+00:00" in completed.stdout


@settings(max_examples=3000, deadline=None)
@given(st.floats(min_value=-6e10, max_value=2.5e11, allow_nan=False))  # years ~100 to ~9900
def test_ls_json_times_read_as_datetime_writes_them(mtime: float) -> None:
    expected = datetime.fromtimestamp(mtime, tz=timezone.utc).isoformat(timespec="seconds")
    assert iso_utc(mtime) == expected


def test_add_from_stdin_writes_nothing_when_one_line_is_bad(sessions_dir: Path) -> None:
    session = make(sessions_dir)
    before = session.path.read_bytes()
    result = run(
        sessions_dir, "add", "convo", "-", input='{"role":"user","content":"ok"}\n[1, 2]\n{"role":"x"}\n'
    )
    assert result.code == 1
    assert result.err == "jsonl-session: error: <stdin>:2: not a JSON object (a list): '[1, 2]'\n"
    assert session.path.read_bytes() == before

    result = run(sessions_dir, "add", "convo", "-", input='{"n": 1e999}\n')  # would read back as null
    assert result.code == 1 and "<stdin>:1:" in result.err and "Traceback" not in result.err
    assert session.path.read_bytes() == before


def test_errors_are_one_line_with_meaningful_exit_codes(sessions_dir: Path) -> None:
    sessions_dir.mkdir()
    missing = run(sessions_dir, "show", "nope")
    assert (missing.code, missing.out, missing.err) == (
        1,
        "",
        f"jsonl-session: error: nope: no such session in {sessions_dir}\n",
    )

    usage = run(sessions_dir, "show")
    assert usage.code == 2 and "the following arguments are required: id" in usage.err
    assert run(sessions_dir, "tail", "x", "-n", "-3").code == 2
    assert run(None, "frobnicate").code == 2

    write_lines(sessions_dir / "bad.jsonl", ['{"role":"user","content":"a"}', '{"role": oops}'])
    broken = run(
        sessions_dir, "show", "bad", "--json"
    )  # as text it is shown, flagged (test_cli_bad_lines.py)
    assert broken.code == 1
    assert broken.err.startswith(f"jsonl-session: error: {sessions_dir / 'bad.jsonl'}:2: not valid JSON")
    assert broken.err.count("\n") == 1 and "Traceback" not in broken.err


def test_tail_prints_the_newest_items(sessions_dir: Path) -> None:
    make(sessions_dir)
    result = run(sessions_dir, "tail", "convo", "-n", "2")
    assert result.code == 0
    lines = result.out.splitlines()
    assert len(lines) == 2
    assert (
        lines[0].startswith("tool output [call_1]: Sunny")
        and lines[1] == "assistant: It is sunny in Paris, 21°C."
    )


def test_clear_and_rm_ask_first_and_yes_skips_the_question(sessions_dir: Path) -> None:
    session = make(sessions_dir)
    declined = run(sessions_dir, "clear", "convo")  # stdin at end: no answer, so no
    assert declined.code == 2 and "clear all 5 items of convo? [y/N]" in declined.err
    assert len(session.get_items_sync()) == 5

    assert run(sessions_dir, "clear", "convo", "--yes").code == 0
    assert session.path.read_bytes() == b""  # emptied, the file stays

    removed = run(sessions_dir, "rm", "convo", input="y\n")
    assert removed.code == 0 and not session.path.exists()
    gone = run(sessions_dir, "rm", "convo", "--yes")
    assert gone.code == 1 and "no such session" in gone.err


def test_fork_copies_the_first_n_items_and_never_overwrites(sessions_dir: Path) -> None:
    make(sessions_dir)
    result = run(sessions_dir, "fork", "convo", "retry", "--at", "2")
    assert (result.code, result.err) == (0, "retry: forked 2 items from convo\n")
    assert JSONLSession("retry", sessions_dir).get_items_sync() == CONVERSATION[:2]

    again = run(sessions_dir, "fork", "convo", "retry")
    assert again.code == 1 and "already exists" in again.err
    assert JSONLSession("retry", sessions_dir).get_items_sync() == CONVERSATION[:2]


def test_stats_counts_roles_types_characters_and_tool_calls(sessions_dir: Path) -> None:
    make(sessions_dir)
    make(sessions_dir, "other", [{"role": "user", "content": "hey"}])
    one = json.loads(run(sessions_dir, "stats", "convo", "--json").out)
    assert one["items"] == 5 and one["tool_calls"] == 1 and one["tools"] == {"get_weather": 1}
    assert one["by_role"] == {
        "user": 1,
        "reasoning": 1,
        "function_call": 1,
        "function_call_output": 1,
        "assistant": 1,
    }
    expected_chars = (
        len(CONVERSATION[0]["content"])
        + len("Need the weather tool.")
        + len('get_weather({"city":"Paris"})')
        + len(CONVERSATION[3]["output"])
        + len("It is sunny in Paris, 21°C.")
    )
    assert one["characters"] == expected_chars

    every = run(sessions_dir, "stats")
    assert every.code == 0
    on_disk = human_size(sum(path.stat().st_size for path in sessions_dir.glob("*.jsonl")))
    assert every.out.splitlines()[0] == (
        f"2 sessions: 6 items, {expected_chars + 3} characters, 1 tool call, {on_disk} on disk"
    )


def test_grep_prints_id_line_role_snippet_and_filters_by_role(sessions_dir: Path) -> None:
    make(sessions_dir)
    write_lines(
        sessions_dir / "notes.jsonl",
        [
            '{"role":"user","content":"paris in spring"}',
            "",
            '{"role":"assistant","content":"He said \\"PARIS\\" twice"}',
        ],
    )
    result = run(sessions_dir, "grep", "-i", "paris")
    assert result.code == 0
    assert result.out.splitlines() == [
        "convo:1: user: What is the weather in Paris?",
        'convo:3: tool call: get_weather({"city":"Paris"})',
        "convo:5: assistant: It is sunny in Paris, 21°C.",
        "notes:1: user: paris in spring",
        'notes:3: assistant: He said "PARIS" twice',
    ]
    assistant = run(sessions_dir, "grep", "Paris", "convo", "--role", "assistant", "--json")
    assert [json.loads(line)["line"] for line in assistant.out.splitlines()] == [5]
    # show and grep name tool items alike; --role takes that name or the item's type.
    shown = without_times(run(sessions_dir, "show", "convo").out)
    assert shown[2].startswith("   3  tool call get_weather") and shown[3].startswith("   4  tool output [")
    for role in ("tool call", "function_call"):
        calls = run(sessions_dir, "grep", "Paris", "convo", "--role", role)
        assert calls.out == 'convo:3: tool call: get_weather({"city":"Paris"})\n'
    outputs = run(sessions_dir, "grep", "Sunny", "convo", "--role", "tool output")
    assert outputs.out.startswith("convo:4: tool output: ")

    # A pattern that spans a JSON escape (the quote) is matched against the decoded text.
    quoted = run(sessions_dir, "grep", 'said "P')
    assert quoted.out == 'notes:3: assistant: He said "PARIS" twice\n'

    nothing = run(sessions_dir, "grep", "london")
    assert (nothing.code, nothing.out) == (1, "")
    bad = run(sessions_dir, "grep", "(")
    assert bad.code == 2 and "bad pattern" in bad.err


def test_dir_comes_from_the_environment_and_defaults_to_sessions(tmp_path: Path) -> None:
    make(tmp_path / "elsewhere", "from-env")
    result = run(None, "ls", "--json", env=cli_env(JSONL_SESSION_DIR=str(tmp_path / "elsewhere")))
    assert [json.loads(line)["id"] for line in result.out.splitlines()] == ["from-env"]

    make(tmp_path / "sessions", "from-cwd")
    completed = subprocess.run(
        [sys.executable, "-m", "jsonl_session", "ls", "--json"],
        cwd=tmp_path,
        capture_output=True,
        env=cli_env(),
        check=False,
    )
    assert [json.loads(line)["id"] for line in completed.stdout.splitlines()] == ["from-cwd"]


def test_colour_only_on_a_terminal_and_never_with_no_color(sessions_dir: Path) -> None:
    make(sessions_dir)
    coloured = run_on_terminal(
        [sys.executable, "-m", "jsonl_session", "show", "convo", "--dir", str(sessions_dir)]
    )
    assert "\x1b[1;32muser\x1b[0m: What is the weather" in coloured
    plain = run_on_terminal(
        [sys.executable, "-m", "jsonl_session", "show", "convo", "--dir", str(sessions_dir)], NO_COLOR="1"
    )
    assert "user: What is the weather" in plain and "\x1b[" not in plain


def test_console_script_is_installed_next_to_the_interpreter(sessions_dir: Path) -> None:
    make(sessions_dir)
    assert SCRIPT.exists()
    result = run(sessions_dir, "ls", "--json", script=True)
    assert result.code == 0 and json.loads(result.out)["id"] == "convo"


def test_tail_follow_prints_appends_pops_and_clears_as_they_happen(sessions_dir: Path) -> None:
    session = make(sessions_dir, "live", [{"role": "user", "content": f"old {n}"} for n in range(3)])
    process = subprocess.Popen(
        [sys.executable, "-m", "jsonl_session", "tail", "live", "-n", "2", "-f", "--dir", str(sessions_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    stdout = process.stdout
    assert stdout is not None

    def read_lines() -> None:
        for line in stdout:
            lines.put(line)

    reader = threading.Thread(target=read_lines, daemon=True)
    reader.start()

    def next_line() -> str:
        try:
            return lines.get(timeout=60)
        except queue.Empty:
            raise AssertionError("tail -f printed nothing for 60 s") from None

    try:
        assert [next_line(), next_line()] == ["user: old 1\n", "user: old 2\n"]
        session.add_items_sync([{"role": "assistant", "content": "new answer"}])
        assert next_line() == "assistant: new answer\n"
        session.pop_item_sync()
        assert next_line() == "-- 1 item removed --\n"
        session.clear_session_sync()
        assert next_line() == "-- session cleared --\n"
        session.add_items_sync([{"role": "user", "content": "after the clear"}])
        assert next_line() == "user: after the clear\n"
    finally:
        process.terminate()
        process.wait(timeout=60)
        reader.join(timeout=60)
        for stream in (process.stdout, process.stderr):
            if stream:
                stream.close()


def test_grep_finds_text_behind_json_escapes(sessions_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Written by another tool: ASCII-only JSON with \u escapes and an escaped slash.
    write_lines(sessions_dir / "escaped.jsonl", [r'{"role":"user","content":"caf\u00e9 and\/or t\u00e9"}'])
    for pattern in ("café", "and/or", "CAFÉ"):
        assert main(["grep", "-i", pattern, "--dir", str(sessions_dir)]) == 0, pattern
        assert capsys.readouterr().out == "escaped:1: user: café and/or té\n"
    assert main(["grep", "and/or", "--role", "assistant", "--dir", str(sessions_dir)]) == 1


def test_every_command_is_documented_in_the_readme() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("<!-- section: cli -->", 1)[1].split("<!-- /section: cli -->", 1)[0]
    for name in every_command():
        documented = re.search(rf"(\$ jsonl-session {name}\b|`{name}\b)", section)
        assert documented, f"{name} is not in the README's cli section"


@pytest.mark.parametrize(
    "args",
    [["ls"], ["ls", "--json"], ["show", "convo"], ["grep", "weather"], ["grep", "weather", "--json"]],
    ids=" ".join,
)
def test_a_reader_gone_before_the_output_is_written_ends_the_command_quietly(
    sessions_dir: Path, args: list[str]
) -> None:
    """``| head -1`` that has already exited: what was still buffered when the command returned
    hit the closed pipe as Python exited, printed "Exception ignored ... BrokenPipeError" and
    exited 120 (found in review). It is flushed while the command's own errors are handled."""
    make(sessions_dir)
    env = {key: value for key, value in cli_env().items() if key != "PYTHONUNBUFFERED"}  # buffered, as usual
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone: every write gets EPIPE
    try:
        done = subprocess.run(
            [sys.executable, "-m", "jsonl_session", *args, "--dir", str(sessions_dir)],
            stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60, env=env, check=False,
        )  # fmt: skip
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (1, "")
