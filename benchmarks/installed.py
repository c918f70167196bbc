"""Whole-command benchmarks time the package as ``pip install`` leaves it: bytecode compiled.

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
from pathlib import Path

import jsonl_session

PACKAGE = Path(jsonl_session.__file__).resolve().parent


def compile_package() -> str:
    """Write the package's bytecode (a no-op where it is up to date); say how it went, for the results."""
    ok = compileall.compile_dir(PACKAGE, quiet=1)
    return "compiled" if ok else "not compiled (could not write __pycache__)"
