"""The docs site's tools install as one extra, the versions the test suite builds the site with."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE_TOOLS = ("mkdocs", "mkdocs-material", "mkdocstrings")


def extra(name: str) -> list[str]:
    """The requirements of one extra, as pyproject.toml lists them (comments left out)."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    found = re.search(rf"^{name} = \[(.*?)\]$", section, re.MULTILINE | re.DOTALL)
    assert found, f"no {name} extra"
    body = "\n".join(line.split("#", 1)[0] for line in found.group(1).splitlines())
    return re.findall(r'"([^"]+)"', body)


def test_the_docs_extra_pins_the_site_tools_as_the_test_extra_does() -> None:
    in_tests = [requirement for requirement in extra("test") if requirement.startswith(SITE_TOOLS)]
    assert len(in_tests) == len(SITE_TOOLS)
    assert extra("docs") == in_tests


@pytest.mark.parametrize("page", ["README.md", "docs/index.md"])
def test_the_docs_command_installs_the_extra(page: str) -> None:
    text = (ROOT / page).read_text(encoding="utf-8")
    assert "pip install -e '.[docs]'" in text
    assert "pip install mkdocs" not in text
