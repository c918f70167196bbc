"""Where a benchmark writes its results: scratch by default, the committed files only when asked.

``benchmarks/results/`` holds the numbers docs/benchmarks.md quotes, from one run on a quiet machine.
A run to try something out must not replace them, so every benchmark writes to
``benchmarks/output/`` (ignored by git) unless given ``--out DIR`` or ``--update-results``.

Example:
    >>> parser = argparse.ArgumentParser()
    >>> add_options(parser)
    >>> results_dir(parser.parse_args([])).name, results_dir(parser.parse_args(["--update-results"])).name
    ('output', 'results')
"""

from __future__ import annotations

import argparse
from pathlib import Path

HERE = Path(__file__).resolve().parent
COMMITTED = HERE / "results"
SCRATCH = HERE / "output"


def add_options(parser: argparse.ArgumentParser) -> None:
    """``--out DIR`` and ``--update-results`` (one or the other)."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="write the results into DIR (default: benchmarks/output/, ignored by git)",
    )
    where.add_argument(
        "--update-results",
        action="store_true",
        help="overwrite the committed results in benchmarks/results/ (a final run on a quiet machine)",
    )


def results_dir(args: argparse.Namespace) -> Path:
    """The folder chosen by :func:`add_options`' options (created if missing)."""
    folder: Path = args.out if args.out is not None else COMMITTED if args.update_results else SCRATCH
    folder.mkdir(parents=True, exist_ok=True)
    return folder
