"""The layer map is enforced: every import-linter contract in ``pyproject.toml`` passes.

``[tool.importlinter]`` in ``pyproject.toml`` holds the contracts that keep the layers of
docs/architecture.md (a layer imports only the layers below it; siblings do not import each
other; the CLI does not lock, read or write session files itself). Each contract has an ``id``
and is one test case here, run as ``lint-imports --contract <id>`` would run it, so a broken
contract names itself in the test report and its import-linter report (which import, on which
line) is the failure message. A contract added to ``pyproject.toml`` is picked up without editing this file.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = REPO / "pyproject.toml"
# The console script sits next to the interpreter of the venv that runs the tests.
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def contract_ids() -> list[str]:
    """The ids of the contracts in ``pyproject.toml``, read the way import-linter reads them."""
    from importlinter import configuration
    from importlinter.application.use_cases import read_user_options

    configuration.configure()
    options = read_user_options(str(PYPROJECT))
    ids = [str(contract.get("id", "")) for contract in options.contracts_options]
    assert ids, "no import-linter contracts in pyproject.toml"
    assert all(ids), f"every contract in [tool.importlinter] needs an id: {options.contracts_options}"
    return ids


def test_contract_ids_are_unique() -> None:
    ids = contract_ids()
    assert len(set(ids)) == len(ids), ids


@pytest.mark.parametrize("contract", contract_ids())
def test_import_contract_is_kept(contract: str) -> None:
    result = subprocess.run(
        # --no-cache: no .import_linter_cache left in the checkout; the graph takes a second.
        [str(LINT_IMPORTS), "--no-cache", "--no-logo", "--contract", contract, str(PYPROJECT)],
        check=False,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if result.returncode != 0 or "1 kept, 0 broken" not in result.stdout:
        pytest.fail(f"import-linter contract {contract!r} is broken:\n{result.stdout}{result.stderr}", False)
