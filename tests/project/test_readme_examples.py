"""A newcomer can run the README's examples as written, and sees what the README shows.

The quickstart's ``demo.py`` is taken from the README's Python block, saved in a fresh folder
and run with the venv's interpreter; then ``jsonl-session show demo`` (the installed console
script) must print the README's console block, and ``examples/quickstart.py`` followed by the
CLI section's ``jsonl-session grep -i weather`` must print what the CLI section shows.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import cli_env

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SCRIPT = Path(sys.executable).with_name("jsonl-session")


def shown_after(command: str) -> list[str]:
    """The lines the README's console blocks show after ``$ command``, up to the next ``$``."""
    blocks: list[str] = re.findall(r"```console\n(.*?)\n```", README, flags=re.DOTALL)
    for block in blocks:
        lines = block.splitlines()
        if f"$ {command}" in lines:
            after = lines[lines.index(f"$ {command}") + 1 :]
            return after[: next((i for i, line in enumerate(after) if line.startswith("$ ")), len(after))]
    raise AssertionError(f"the README no longer shows `{command}`")


def untimed(lines: list[str]) -> list[str]:
    return [re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "<time>", line) for line in lines]


def run(command: list[str], cwd: Path) -> list[str]:
    done = subprocess.run(
        command, cwd=cwd, env=cli_env(), capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    printed: str = done.stdout
    return printed.splitlines()


def test_the_quickstart_demo_runs_and_show_prints_what_the_readme_shows(tmp_path: Path) -> None:
    pytest.importorskip("agents.testing", reason="agents.testing.ScriptedModel needs a recent openai-agents")
    quickstart = README.split("## Quickstart", 1)[1]
    demo = re.search(r"```python\n(.*?)\n```", quickstart, flags=re.DOTALL)
    assert demo is not None, "the README's quickstart lost its demo.py"
    (tmp_path / "demo.py").write_text(demo.group(1) + "\n", encoding="utf-8")

    printed = run([sys.executable, "demo.py"], tmp_path)

    assert printed == ["Hi, I'm Ada. -> Nice to meet you, Ada.", "What's my name? -> Your name is Ada."]
    # when each item was added differs from run to run: compare the lines without it
    assert untimed(run([str(SCRIPT), "show", "demo"], tmp_path)) == untimed(
        shown_after("jsonl-session show demo")
    )


def test_the_cli_sections_grep_example_prints_what_the_readme_shows(tmp_path: Path) -> None:
    pytest.importorskip("agents", reason="the quickstart needs the Agents SDK")
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    run([sys.executable, "examples/quickstart.py"], tmp_path)
    assert run([str(SCRIPT), "grep", "-i", "weather"], tmp_path) == shown_after(
        "jsonl-session grep -i weather"
    )
