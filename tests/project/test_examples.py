"""The examples run as the README says (``python examples/<name>.py``), offline, in real processes."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def offline_env() -> dict[str, str]:
    """The environment without an API key (so the examples use their scripted models)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "JSONL_SESSION_RECORD")}
    env["PYTHONPATH"] = str(REPO)  # the checkout under test, even if another copy is installed
    return env


def run_example(name: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        check=False,
        cwd=cwd,
        env=offline_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_quickstart_runs_offline_and_writes_the_committed_file_byte_for_byte(tmp_path: Path) -> None:
    first = run_example("quickstart.py", tmp_path)

    assert first.returncode == 0, first.stderr
    written = tmp_path / "sessions" / "quickstart.jsonl"
    assert written.read_bytes() == (REPO / "sessions" / "quickstart.jsonl").read_bytes()
    assert "model: scripted (offline)" in first.stdout
    assert "sessions/quickstart.jsonl (6 items, one per line):" in first.stdout
    assert '"type":"function_call"' in first.stdout and '"type":"function_call_output"' in first.stdout
    for line in written.read_text(encoding="utf-8").splitlines():
        assert line in first.stdout.splitlines()
    # that the README shows this output: tests/project/test_docs_examples.py

    second = run_example("quickstart.py", tmp_path)  # cleared first, so re-running changes nothing

    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout
    assert written.read_bytes() == (REPO / "sessions" / "quickstart.jsonl").read_bytes()


def test_fixture_example_passes_and_leaves_the_committed_files_untouched() -> None:
    committed = [REPO / "sessions" / "tool_call.jsonl", *sorted((EXAMPLES / "recordings").rglob("*.jsonl"))]
    before = [digest(path) for path in committed]

    result = run_example("test_fixture_example.py", REPO)

    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"\b3 passed\b", result.stdout), result.stdout
    assert [digest(path) for path in committed] == before


def test_follow_runs_offline_and_leaves_nothing_untracked(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    result = run_example("follow.py", tmp_path)
    assert result.returncode == 0, result.stderr
    assert "the list rebuilt from the changes equals the file" in result.stdout
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert status.stdout == ""
