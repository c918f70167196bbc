"""The line the README quotes from ``check`` on a conflicted file is one the docs show it printing.

tests/project/test_docs_examples.py runs docs/workflows.md's conflict example (``$ cat`` of the
conflicted file, then ``$ jsonl-session check``) and compares what ``check`` prints with the
page; this test ties the README's inline quote to that example, which no runner reads.
"""

from __future__ import annotations

import re
from pathlib import Path

from docs_helpers import console_commands

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_quotes_a_line_check_prints_in_the_conflict_example() -> None:
    workflows = (ROOT / "docs" / "workflows.md").read_text(encoding="utf-8")
    printed = [
        line
        for block in re.findall(r"```console\n(.*?)\n```", workflows, flags=re.DOTALL)
        if "<<<<<<<" in block
        for command, shown in console_commands(block)
        if command.startswith("jsonl-session check")
        for line in shown
    ]
    assert printed, "docs/workflows.md lost its conflict-marker example"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quoted = re.search(r"reports each marker as\n`([^`]+)`", readme)
    assert quoted is not None and quoted.group(1) in printed
