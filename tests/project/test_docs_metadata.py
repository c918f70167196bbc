"""docs/metadata.md's Python example runs as shown and prints what its comments say."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from cli_helpers import cli_env

ROOT = Path(__file__).resolve().parents[2]


def test_the_metadata_example_runs_and_prints_its_comments(tmp_path: Path) -> None:
    page = (ROOT / "docs" / "metadata.md").read_text(encoding="utf-8")
    code = re.findall(r"```python\n(.*?)\n```", page, flags=re.DOTALL)[0]
    expected = [line[2:] for line in code.splitlines() if line.startswith("# ")]
    for _ in range(2):  # and again in the same folder: the same output
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=cli_env(PYTHONPATH=str(ROOT)),
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == expected
    assert (tmp_path / "sessions" / "refund-a1042.jsonl.meta").is_file()
