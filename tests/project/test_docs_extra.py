"""The docs site's tools install as one extra, the versions the test suite builds the site with."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

if sys.version_info < (3, 11):
    pytest.skip("tomllib is Python 3.11+", allow_module_level=True)

import tomllib

ROOT = Path(__file__).resolve().parents[2]
SITE_TOOLS = ("mkdocs", "mkdocs-material", "mkdocstrings")


def test_the_docs_extra_pins_the_site_tools_as_the_test_extra_does() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    in_tests = [requirement for requirement in extras["test"] if requirement.startswith(SITE_TOOLS)]
    assert len(in_tests) == len(SITE_TOOLS)
    assert extras["docs"] == in_tests


@pytest.mark.parametrize("page", ["README.md", "docs/index.md"])
def test_the_docs_command_installs_the_extra(page: str) -> None:
    text = (ROOT / page).read_text(encoding="utf-8")
    assert "pip install -e '.[docs]'" in text
    assert "pip install mkdocs" not in text
