"""What the docs show ``check`` printing is what it prints (docs/workflows.md's conflict example).

The example's file is taken from the same console block (``$ cat sessions/chat.jsonl``), the
command is run for real, and its output must equal the block; the README quotes one line of it.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from cli_helpers import cli_env

ROOT = Path(__file__).resolve().parents[2]


def console_blocks(text: str) -> list[str]:
    return re.findall(r"```console\n(.*?)\n```", text, flags=re.DOTALL)


def commands_and_outputs(block: str) -> dict[str, list[str]]:
    """``$ command`` -> the lines printed after it, up to the next ``$``."""
    shown: dict[str, list[str]] = {}
    current: list[str] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            current = shown.setdefault(line[2:], [])
        else:
            current.append(line)
    return shown


def conflict_example() -> dict[str, list[str]]:
    workflows = (ROOT / "docs" / "workflows.md").read_text(encoding="utf-8")
    for block in console_blocks(workflows):
        if "$ cat sessions/chat.jsonl" in block and "<<<<<<<" in block:
            return commands_and_outputs(block)
    raise AssertionError("docs/workflows.md lost its conflict-marker example")


def test_check_on_a_conflicted_file_prints_what_the_docs_show(tmp_path: Path) -> None:
    example = conflict_example()
    (tmp_path / "sessions").mkdir()
    (tmp_path / "sessions" / "chat.jsonl").write_text("\n".join(example["cat sessions/chat.jsonl"]) + "\n")
    command = "jsonl-session check sessions/chat.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "jsonl_session", *command.split()[1:]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=cli_env(),
        check=False,
    )
    assert done.returncode == 1
    assert (done.stdout + done.stderr).splitlines() == example[command]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quoted = re.search(r"reports each marker as\n`([^`]+)`", readme)
    assert quoted is not None and quoted.group(1) in done.stdout.splitlines()
