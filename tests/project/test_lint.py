"""The house style is part of the test suite: ``ruff check``, ``ruff format --check`` and ``mypy --strict``.

The README's one test command (and ``.ci/run``, which runs it) therefore fails on a lint error, a
badly formatted file or a type error, in the package, the tests, the benchmarks, the mutation
script and the examples.
The linters come from the ``test`` extra (pinned to a minor release: new releases add rules).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TYPED = ["jsonl_session", "tests", "benchmarks", "mutation", "examples"]


def run_tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args],
        check=False,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.parametrize(
    "command",
    [("ruff", "check", "."), ("ruff", "format", "--check", ".")],
    ids=["ruff-check", "ruff-format"],
)
def test_ruff_is_clean(command: tuple[str, ...]) -> None:
    result = run_tool(*command)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_is_clean_on_package_tests_benchmarks_and_examples() -> None:
    result = run_tool("mypy", "--strict", *TYPED)
    assert result.returncode == 0, result.stdout + result.stderr
