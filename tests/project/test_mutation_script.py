"""``mutation/mutation.py`` (mutation testing, not run in CI) stays usable: its map names real files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_mutation_map_names_existing_modules_and_tests() -> None:
    listed = subprocess.run(
        [sys.executable, str(ROOT / "mutation" / "mutation.py"), "--list"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.splitlines()
    assert listed
    for line in listed:
        module, tests = line.split(": ", 1)
        assert (ROOT / "jsonl_session" / module).is_file(), module
        for test in tests.split():
            assert (ROOT / test).exists(), f"{module}: {test} does not exist"
