"""Every module of ``transfer`` belongs to one wing, or to the ground both stand on.

The import-linter contracts in ``pyproject.toml`` (``transfer-wings``,
``transfer-copies-not-mirror``, ``transfer-shared``; run by ``tests/project/test_layers.py``)
keep the copies and the mirror from importing each other, but they name the copy wing's modules
one by one: a new copy module left out of them would be checked by nothing. So each module of
the package must be named by the contracts (the mirror package as a whole), and each name there
must be a module.
"""

from __future__ import annotations

import pkgutil
from pathlib import Path

import jsonl_session.transfer

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
MIRROR = "jsonl_session.transfer.mirror"


def contracts() -> dict[str, dict[str, list[str]]]:
    """The contracts by id, read the way import-linter reads them."""
    from importlinter import configuration
    from importlinter.application.use_cases import read_user_options

    configuration.configure()
    found = read_user_options(str(PYPROJECT)).contracts_options
    return {str(contract["id"]): contract for contract in found}


def transfer_modules() -> set[str]:
    package = jsonl_session.transfer
    return {f"{package.__name__}.{info.name}" for info in pkgutil.iter_modules(package.__path__)}


def test_every_transfer_module_is_in_a_wing_or_in_the_shared_ground() -> None:
    by_id = contracts()
    copies = set(by_id["transfer-copies-not-mirror"]["source_modules"])
    shared = set(by_id["transfer-shared"]["source_modules"])
    assert by_id["transfer-wings"]["source_modules"] == [MIRROR]
    assert set(by_id["transfer-wings"]["forbidden_modules"]) == copies, "both directions name the same copies"
    assert by_id["transfer-copies-not-mirror"]["forbidden_modules"] == [MIRROR]
    assert set(by_id["transfer-shared"]["forbidden_modules"]) == copies | {MIRROR}
    assert not copies & shared
    assert transfer_modules() == copies | shared | {MIRROR}
