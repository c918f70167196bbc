"""The version matrix stays honest: CI's "oldest SDK" run tests exactly the floor pyproject.toml allows."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_extra_has_the_floor_that_ci_tests() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    floors = set(re.findall(r'"openai-agents(?:\[[a-z,]+\])?>=([0-9.]+)"', pyproject))
    ci = re.search(r"^OLDEST_AGENTS=([0-9.]+)$", (ROOT / ".ci" / "run").read_text(), re.MULTILINE)
    assert ci is not None
    assert floors == {ci.group(1)}
    assert (
        len(re.findall(r'"openai-agents[\[>]', pyproject)) == 6
    )  # agents, redis, sqlalchemy, postgresql, test, bench


def test_ci_runs_every_file_with_sdk_tests_in_the_oldest_sdk_run() -> None:
    listed = set(re.findall(r"tests/(\w+/test_\w+\.py)", (ROOT / ".ci" / "run").read_text()))
    marked = {
        path.relative_to(ROOT / "tests").as_posix()
        for path in (ROOT / "tests").glob("*/test_*.py")
        if "mark.sdk" in path.read_text()
    }
    assert marked - {"sdk/test_sdk_matrix.py"} <= listed
