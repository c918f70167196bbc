"""Start-up: ``jsonl-session ls`` against a bare ``python -c pass``, in the same run.

A short command's time is mostly interpreter start-up and imports. In the same run, a floor: a
bare script that imports ``re`` (as pip's console script does) and ``argparse`` and builds an
empty parser, what any console script with an argparse command line pays. The target is
``ls`` (20 small sessions, listing cache warm, as for every ``ls`` after the first) within 2.5x
a bare interpreter; ``ls`` without the cache (``JSONL_SESSION_CACHE=off``: it counts every
session and reads each one's default title) is timed beside it. ``tests/project/test_startup.py``
pins *which* modules ``ls`` imports, this script measures the time. Runs are interleaved (each
repetition runs every command) so load hits them alike; medians are reported. The package is
byte-compiled first, as ``pip install`` leaves it (``benchmarks/installed.py`` says why), and the
listing cache lives in the run's own folder.

Run: ``python benchmarks/startup.py [--quick] [--update-results | --out DIR]``; writes
``startup.json`` to ``benchmarks/output/``, or to the committed ``benchmarks/results/`` with
``--update-results``. For where the rest goes: ``python -X importtime -m jsonl_session ls``.
Each is measured twice: in this (editable) venv, and in a new venv with a regular
``pip install .`` of the repository, where the bare interpreter is ~15 ms faster.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import tempfile
import time
from pathlib import Path

import outputs  # benchmarks/outputs.py (this script's folder is on sys.path)
from installed import compile_package, regular_install  # benchmarks/installed.py

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from jsonl_session import JSONLSession

TARGET_RATIO = 2.5
# The floor: what any console script with an argparse command line pays before it does anything,
# in the same run (pip's script imports re; argparse, gettext and locale follow).
FLOOR = "import re, argparse; argparse.ArgumentParser(prog='x').parse_args([])"


def measure(folder: Path, runs: int, python: Path) -> dict[str, float]:
    cli = str(python.with_name("jsonl-session"))
    env = dict(os.environ, XDG_CACHE_HOME=str(folder.parent / "cache"))
    cold = dict(env, JSONL_SESSION_CACHE="off")
    commands = {
        "python -c pass": ([str(python), "-c", "pass"], env),
        "floor: python -c 'import re, argparse' and a parser": ([str(python), "-c", FLOOR], env),
        "jsonl-session ls": ([cli, "ls", "--dir", str(folder)], env),
        "jsonl-session ls --json": ([cli, "ls", "--json", "--dir", str(folder)], env),
        "jsonl-session ls, no listing cache": ([cli, "ls", "--dir", str(folder)], cold),
        "jsonl-session show ID -n 1": ([cli, "show", "s0", "-n", "1", "--dir", str(folder)], env),
    }
    outputs.timed(commands["jsonl-session ls"][0], cwd=folder, env=env)  # fills the listing cache
    tasks = {
        name: functools.partial(outputs.timed, command, cwd=folder, env=command_env)
        for name, (command, command_env) in commands.items()
    }
    result = outputs.medians(outputs.interleaved(tasks, runs))
    result["ls / python -c pass"] = result["jsonl-session ls"] / result["python -c pass"]
    result["floor / python -c pass"] = (
        result["floor: python -c 'import re, argparse' and a parser"] / result["python -c pass"]
    )
    result["ls without the cache / python -c pass"] = (
        result["jsonl-session ls, no listing cache"] / result["python -c pass"]
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Time jsonl-session ls against a bare python -c pass.",
        epilog="Example:\n  python benchmarks/startup.py --quick",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    outputs.add_options(parser, quick="smoke test: 5 runs")
    parser.add_argument("--runs", type=int, default=41, help="repetitions per command (median; default 41)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "sessions"
        for n in range(20):
            JSONLSession(f"s{n}", folder).add_items_sync(
                [{"role": "user", "content": f"hello {i}"} for i in range(50)]
            )
        made = time.monotonic()
        bytecode = compile_package()  # as pip install leaves it (benchmarks/installed.py)
        outputs.wait_until_cacheable(made)
        runs = 5 if args.quick else args.runs
        editable = measure(folder, runs, Path(sys.executable))
        regular = measure(folder, runs, regular_install(Path(tmp) / "venv") / "python")
    result: dict[str, object] = {
        "editable install (this venv)": editable,
        "regular install (pip install .)": regular,
    }
    result["bytecode"] = bytecode
    result["target"] = {
        "ls within 2.5x python -c pass, editable install": editable["ls / python -c pass"] <= TARGET_RATIO,
        "ls within 2.5x python -c pass, regular install": regular["ls / python -c pass"] <= TARGET_RATIO,
        "quick": args.quick,
    }
    written = outputs.write_json(args, "startup.json", result)
    for install, times in (("editable", editable), ("regular", regular)):
        print(f"{install} install:")
        for name, value in times.items():
            print(f"  {name:32} {value * 1000:8.1f} ms" if "/" not in name else f"  {name:32} {value:8.2f}x")
    print(f"written to {written}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
