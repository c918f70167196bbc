"""docs/guarantees.md and the README's guarantees section name only tests that exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _defined_tests() -> set[str]:
    names = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        names.add(path.stem)
        for match in re.finditer(
            r"^(?:async )?def (test_\w+)|^(test_\w+) = ", path.read_text(), re.MULTILINE
        ):
            names.add(match.group(1) or match.group(2))
    return names


def _guarantee_texts() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("<!-- section: guarantees -->")[1].split("<!-- /section: guarantees -->")[0]
    return [(ROOT / "docs" / "guarantees.md").read_text(), section]


def test_every_test_the_guarantees_name_exists() -> None:
    defined = _defined_tests()
    for text in _guarantee_texts():
        named = set(re.findall(r"\btest_\w+", text))
        assert named, "the guarantees must name their tests"
        assert named <= defined, f"named but not defined: {sorted(named - defined)}"


def test_every_promise_in_the_docs_names_a_test() -> None:
    promised = (ROOT / "docs" / "guarantees.md").read_text().split("## Not promised")[0]
    for section in promised.split("\n### ")[1:]:
        assert re.search(r"\btest_\w+", section), f"no test named for: {section.splitlines()[0]}"
