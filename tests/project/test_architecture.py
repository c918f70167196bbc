"""docs/architecture.md names every package and what it may import, as the contracts say.

The page's table "The packages and what each may import" has one row per package: its name,
what it holds, *may import* and *may not import*. The contracts in ``pyproject.toml``
(``[tool.importlinter]``, read here the way import-linter reads them) are what is enforced;
this test keeps the page equal to them: every package of ``jsonl_session`` has a row, *may
import* is exactly the packages of the layers below it, and *may not import* names each
``forbidden`` contract whose sources are in the package, and each module outside the package
that such a contract forbids.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "architecture.md"
HEADING = "## The packages and what each may import"


def contracts() -> list[dict[str, Any]]:
    from importlinter import configuration
    from importlinter.application.use_cases import read_user_options

    configuration.configure()
    return list(read_user_options(str(REPO / "pyproject.toml")).contracts_options)


def layers() -> list[list[str]]:
    """The ``layers`` contract's layers, top first, each a list of sibling packages."""
    (contract,) = [contract for contract in contracts() if contract["type"] == "layers"]
    assert contract["containers"] == ["jsonl_session"], contract["containers"]
    return [[name.strip() for name in re.split(r"[|:]", layer)] for layer in contract["layers"]]


def rows() -> dict[str, list[str]]:
    """The table under :data:`HEADING`: package -> its other cells."""
    text = PAGE.read_text(encoding="utf-8")
    assert HEADING in text, f"docs/architecture.md has no {HEADING!r} section"
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    table = [line for line in section.splitlines() if line.startswith("|")]
    assert table[0].split("|")[1:5] == [" package ", " what it holds ", " may import ", " may not import "]
    found: dict[str, list[str]] = {}
    for line in table[2:]:
        first, *cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        name = first.strip("`")
        assert name not in found, f"two rows for {name}"
        found[name] = cells
    return found


def named(cell: str) -> set[str]:
    return set(re.findall(r"`([\w.-]+)`", cell))


def packages() -> set[str]:
    """The packages of ``jsonl_session`` (its folders), and the modules the layers name."""
    root = REPO / "jsonl_session"
    folders = {path.parent.name for path in root.glob("*/__init__.py")}
    return folders | {name for layer in layers() for name in layer}


def test_every_package_has_a_row_and_every_row_a_package() -> None:
    assert set(rows()) == packages()


def test_the_layers_contract_covers_every_package() -> None:
    """A package outside the contract would be free to import anything, and the page could not say."""
    assert packages() == {name for layer in layers() for name in layer}


@pytest.mark.parametrize("package", sorted(packages()))
def test_may_import_is_every_layer_below(package: str) -> None:
    stack = layers()
    (level,) = [index for index, layer in enumerate(stack) if package in layer]
    below = {name for layer in stack[level + 1 :] for name in layer}
    assert named(rows()[package][1]) == below


@pytest.mark.parametrize(
    "contract", [c for c in contracts() if c["type"] == "forbidden"], ids=lambda contract: contract["id"]
)
def test_may_not_import_names_each_forbidden_contract(contract: dict[str, Any]) -> None:
    sources = {name.split(".")[1] for name in contract["source_modules"]}
    (package,) = sources
    cell = rows()[package][2]
    assert contract["id"] in named(cell), f"the {package} row does not name the contract {contract['id']}"
    outside = {name.removeprefix("jsonl_session.") for name in contract["forbidden_modules"]}
    outside = {name for name in outside if name.split(".")[0] != package}
    assert outside <= named(cell), f"the {package} row does not name {sorted(outside - named(cell))}"


def test_a_row_without_restrictions_claims_none() -> None:
    """*May not import* stays empty where no contract forbids anything more than the layers do."""
    restricted = {
        name.split(".")[1] for c in contracts() if c["type"] == "forbidden" for name in c["source_modules"]
    }
    for package, cells in rows().items():
        assert bool(cells[2]) == (package in restricted), package
