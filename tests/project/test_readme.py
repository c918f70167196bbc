"""The README's first screen keeps its promise: two set-up commands, the second is what CI runs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def first_screen_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_screen = readme.split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", first_screen, flags=re.DOTALL)


def test_first_screen_has_exactly_two_setup_commands() -> None:
    commands = first_screen_commands()
    assert len(commands) == 2, commands
    demo, tests = commands
    assert "examples/quickstart.py" in demo
    assert "pytest" in tests and ".[test]" in tests


def test_ci_runs_the_readme_test_command() -> None:
    _, test_command = first_screen_commands()
    assert test_command.strip() in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_every_public_name_is_exported_and_sorted() -> None:
    import jsonl_session

    assert jsonl_session.__all__ == sorted(jsonl_session.__all__)
    for name in jsonl_session.__all__:
        assert getattr(jsonl_session, name).__doc__, f"{name} needs a docstring"
