"""``jsonl-session edit`` (validated, atomic), ``check --secrets`` and ``redact``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from cli_helpers import cli_env, run

from jsonl_session import JSONLSession

ITEMS = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi"}]
OPENAI_KEY = "sk-proj-" + "a1B2c3D4" * 6


def editor(tmp_path: Path, body: str) -> dict[str, str]:
    """An $EDITOR that runs ``body`` (Python, with ``path`` = the file to edit); returns the env to use."""
    script = tmp_path / "editor.py"
    script.write_text(
        "import json, pathlib, sys\n"
        "path = pathlib.Path(sys.argv[1])\n"
        f"counter = pathlib.Path({str(tmp_path / 'runs')!r})\n"
        "run = int(counter.read_text()) + 1 if counter.exists() else 1\n"
        "counter.write_text(str(run))\n" + body
    )
    return cli_env(EDITOR=f"{sys.executable} {script}", VISUAL="")


def test_edit_replaces_the_session_with_the_edited_items(tmp_path: Path, sessions_dir: Path) -> None:
    session = JSONLSession("c", sessions_dir)
    session.add_items_sync(ITEMS)
    env = editor(
        tmp_path,
        (
            "lines = path.read_text().splitlines()\n"
            "assert [json.loads(line) for line in lines] == " + repr(ITEMS) + "\n"
            "edited = json.dumps({'role': 'assistant', 'content': 'Edited'})\n"
            "path.write_text(lines[0] + '\\n\\n' + edited + '\\n')\n"
        ),
    )
    result = run(sessions_dir, "edit", "c", env=env)
    assert (result.code, result.err) == (0, "c: saved (2 -> 2 items)\n")
    assert session.get_items_sync() == [ITEMS[0], {"role": "assistant", "content": "Edited"}]


def test_invalid_edit_aborts_and_leaves_the_session_untouched(tmp_path: Path, sessions_dir: Path) -> None:
    session = JSONLSession("c", sessions_dir)
    session.add_items_sync(ITEMS)
    before = session.path.read_bytes()
    env = editor(tmp_path, 'path.write_text(\'{"role": "user"}\\n{broken\\n\')\n')
    result = run(sessions_dir, "edit", "c", env=env)  # stdin at end: "edit again?" is answered no
    assert result.code == 1
    assert result.err.startswith("jsonl-session: error: line 2: not valid JSON")
    assert "edit again? [Y/n]" in result.err and "edit abandoned; session left unchanged" in result.err
    assert session.path.read_bytes() == before

    failing = editor(tmp_path, "sys.exit(3)\n")
    result = run(sessions_dir, "edit", "c", env=failing)
    assert result.code == 1 and "editor exited with status 3" in result.err
    assert session.path.read_bytes() == before


def test_invalid_edit_reopens_the_editor_when_asked(tmp_path: Path, sessions_dir: Path) -> None:
    session = JSONLSession("c", sessions_dir)
    session.add_items_sync(ITEMS)
    env = editor(
        tmp_path,
        (
            "if run == 1:\n"
            "    path.write_text('[\"not an object\"]\\n')\n"
            "else:\n"
            "    assert path.read_text() == '[\"not an object\"]\\n'  # the broken text comes back to fix\n"
            "    path.write_text(json.dumps({'role': 'user', 'content': 'fixed'}) + '\\n')\n"
        ),
    )
    result = run(sessions_dir, "edit", "c", input="\n", env=env)  # Enter: the default, yes
    assert result.code == 0, result.err
    assert "line 1: not a JSON object (a list)" in result.err
    assert (tmp_path / "runs").read_text() == "2"
    assert session.get_items_sync() == [{"role": "user", "content": "fixed"}]


def test_check_secrets_reports_masked_findings_and_redact_replaces_them(sessions_dir: Path) -> None:
    session = JSONLSession("leaky", sessions_dir)
    session.add_items_sync([ITEMS[0], {"role": "user", "content": f"my key is {OPENAI_KEY}"}])
    JSONLSession("clean", sessions_dir).add_items_sync(ITEMS)

    found = run(sessions_dir, "check", "--secrets")
    assert found.code == 1
    assert found.out == f"{session.path}:2: openai-key: sk-pro… (56 chars)\n"
    assert OPENAI_KEY not in found.out + found.err
    # As a pre-commit hook: file names instead of ids; a clean file passes.
    assert run(None, "check", "--secrets", str(sessions_dir / "clean.jsonl")).code == 0
    as_json = run(None, "check", "--secrets", "--json", str(session.path))
    assert json.loads(as_json.out)["kind"] == "openai-key"

    redacted = run(sessions_dir, "redact", "leaky")
    assert redacted.code == 0
    assert redacted.out == f"{session.path}:2: openai-key: sk-pro… (56 chars) -> [REDACTED:openai-key]\n"
    assert session.get_items_sync()[1] == {"role": "user", "content": "my key is [REDACTED:openai-key]"}
    assert run(sessions_dir, "check", "--secrets", "leaky").code == 0


CALL = {"type": "function_call", "name": "get_weather", "arguments": "{}", "call_id": "call_1"}
OUTPUT = {"type": "function_call_output", "call_id": "call_1", "output": "Sunny"}


def test_edit_warns_when_it_leaves_either_half_of_a_tool_call_pair(
    tmp_path: Path, sessions_dir: Path
) -> None:
    session = JSONLSession("c", sessions_dir)
    session.add_items_sync([ITEMS[0], CALL, OUTPUT, ITEMS[1]])
    before = session.path.read_bytes()
    for dropped, warning in (
        (1, "function_call_output 'call_1' has no function_call"),
        (2, "function_call 'call_1' (get_weather) has no function_call_output"),
    ):
        env = editor(
            tmp_path,
            f"lines = path.read_text().splitlines()\ndel lines[{dropped}]\n"
            "path.write_text('\\n'.join(lines) + '\\n')\n",
        )
        # stdin at its end: "save anyway?" and "edit again?" are answered no
        result = run(sessions_dir, "edit", "c", env=env)
        assert result.code == 1, result
        assert f"jsonl-session: warning: {warning} (the model API rejects such a history)\n" in result.err
        assert session.path.read_bytes() == before
