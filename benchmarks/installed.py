"""Whole-command benchmarks time the package as ``pip install`` leaves it: bytecode compiled.

They time a regular install too (:func:`regular_install`): an editable install's import hook
costs every interpreter ~15 ms, bare ``python -c pass`` included, and loads ``pathlib`` and
``re`` before the command asks for them, which flatters a ratio to the bare interpreter.

A regular install writes ``__pycache__/*.pyc`` for every module; an editable install (how this
repository is developed) writes them on first import, unless ``PYTHONDONTWRITEBYTECODE`` is set,
and then every run compiles every module it imports from source again. That cost (about 50 ms
for ``jsonl-session ls``, more than the imports themselves) is not what a user pays, and the
bare ``python -c pass`` it is compared with loads the standard library's compiled bytecode. So
``startup.py`` and ``grep_vs_jq.py`` compile the package once before timing.

Example:
    >>> compile_package()       # doctest: +SKIP
    'compiled'
"""

from __future__ import annotations

import compileall
import subprocess
import sys
from pathlib import Path

import jsonl_session

PACKAGE = Path(jsonl_session.__file__).resolve().parent
REPOSITORY = Path(__file__).resolve().parent.parent


def compile_package() -> str:
    """Write the package's bytecode (a no-op where it is up to date); say how it went, for the results."""
    ok = compileall.compile_dir(PACKAGE, quiet=1)
    return "compiled" if ok else "not compiled (could not write __pycache__)"


def regular_install(folder: Path) -> Path:
    """A new venv in ``folder`` with this repository installed by ``pip install .``; its ``bin``."""
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    bin_dir = folder / "bin"
    subprocess.run(
        [
            str(bin_dir / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            str(REPOSITORY),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return bin_dir
