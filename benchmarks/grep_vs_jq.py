"""How ``jsonl-session grep`` compares with the shell pipelines people would write instead.

Builds 20 sessions of 10,000 chat items (~60 MB) in a temporary folder, then times, as whole
commands (start-up included), a rare term (~200 hits) and a common one (~190,000 hits):

* ``jsonl-session grep TERM``: message text only, ``id:line: role: snippet``, from this
  (editable) venv and from a regular ``pip install .`` (``installed.regular_install``);
* ``grep -F TERM | jq``: the fast shell answer (matches raw JSON, keys and escapes too);
* ``jq 'select(.content|test(TERM))'``: the jq-only search that gives grep's answer.

The commands are interleaved (each repetition runs all of them) so load hits them alike, and
the package is byte-compiled first, as ``pip install`` leaves it (``benchmarks/installed.py``).
Target: the rare term within 2x of ``grep -F | jq`` (``grep`` first finds the term in the raw
bytes and decodes only the lines that contain it).

Run: ``python benchmarks/grep_vs_jq.py [--quick] [--update-results | --out DIR]`` (needs
``grep`` and ``jq``); writes ``grep.json`` to ``benchmarks/output/``, or to the committed
``benchmarks/results/`` with ``--update-results``.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
import outputs  # benchmarks/outputs.py (this script's folder is on sys.path)
from installed import compile_package, regular_install  # benchmarks/installed.py

WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog"]
WORDS += ["weather", "Paris", "sunny", "cloudy", "rain", "agent", "tool"]
TERMS = {"rare term (~200 hits)": "zanzibar", "common term (~190,000 hits)": "weather"}
TARGET_RATIO = 2.0


def build(folder: Path, sessions: int = 20, items: int = 10_000) -> None:
    rng = random.Random(1)
    for n in range(sessions):
        lines = []
        for _ in range(items):
            text = " ".join(rng.choice(WORDS) for _ in range(50))
            if rng.random() < 0.001:
                text += " zanzibar"
            lines.append(orjson.dumps({"role": rng.choice(["user", "assistant"]), "content": text}))
        (folder / f"chat{n}.jsonl").write_bytes(b"\n".join(lines) + b"\n")


def commands(term: str, regular: Path) -> dict[str, str]:
    cli = Path(sys.executable).with_name("jsonl-session")
    show = '.role + ": " + .content[0:60]'
    return {
        "jsonl-session grep": f"{cli} grep {term} --dir .",
        "jsonl-session grep, regular install": f"{regular / 'jsonl-session'} grep {term} --dir .",
        "grep -F | jq": f"grep -F -h {term} *.jsonl | jq -r '{show}'",
        "jq select(test)": f"jq -r 'select(.content|test(\"{term}\")) | {show}' *.jsonl",
    }


def timed(command: str, cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(command, shell=True, cwd=cwd, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def measure(folder: Path, runs: int, regular: Path) -> dict[str, dict[str, float]]:
    results: dict[str, dict[str, float]] = {}
    for label, term in TERMS.items():
        pipelines = commands(term, regular)
        times: dict[str, list[float]] = {name: [] for name in pipelines}
        for _ in range(runs):
            for name, command in pipelines.items():  # interleaved: noise hits every command
                times[name].append(timed(command, folder))
        row = {name: statistics.median(values) for name, values in times.items()}
        row["ratio to grep -F | jq"] = row["jsonl-session grep"] / row["grep -F | jq"]
        row["ratio to grep -F | jq, regular install"] = (
            row["jsonl-session grep, regular install"] / row["grep -F | jq"]
        )
        results[label] = row
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Time jsonl-session grep against grep -F | jq and jq alone on ~60 MB of sessions.",
        epilog="Example:\n  python benchmarks/grep_vs_jq.py --quick",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="smoke test: 2 small sessions, 3 runs")
    parser.add_argument("--runs", type=int, default=9, help="repetitions per command (median; default 9)")
    outputs.add_options(parser)
    args = parser.parse_args(argv)
    if not (shutil.which("grep") and shutil.which("jq")):
        print("needs grep and jq on PATH", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as venv:
        folder = Path(tmp)
        if args.quick:
            build(folder, sessions=2, items=2_000)
        else:
            build(folder)
        bytecode = compile_package()  # as pip install leaves it (benchmarks/installed.py)
        regular = regular_install(Path(venv))
        results: dict[str, object] = dict(measure(folder, 3 if args.quick else args.runs, regular))
    results["bytecode"] = bytecode
    rare = results["rare term (~200 hits)"]
    assert isinstance(rare, dict)
    results["target"] = {
        "rare term within 2x of grep -F | jq": rare["ratio to grep -F | jq"] <= TARGET_RATIO,
        "rare term within 2x of grep -F | jq, regular install": (
            rare["ratio to grep -F | jq, regular install"] <= TARGET_RATIO
        ),
        "quick": args.quick,
    }
    written = outputs.results_dir(args) / "grep.json"
    written.write_text(json.dumps(results, indent=2) + "\n")
    head = f"{'jsonl-session grep':>18} {'(regular install)':>17} {'grep -F | jq':>12} {'jq only':>8}"
    print(f"{'seconds (median, whole command)':32} {head}")
    for label in TERMS:
        row = results[label]
        assert isinstance(row, dict)
        ours, regular = row["jsonl-session grep"], row["jsonl-session grep, regular install"]
        ratios = f"{row['ratio to grep -F | jq']:.2f}x, {row['ratio to grep -F | jq, regular install']:.2f}x"
        print(
            f"{label:32} {ours:>18.3f} {regular:>17.3f} {row['grep -F | jq']:>12.3f} "
            f"{row['jq select(test)']:>8.3f}   ({ratios} grep -F | jq)"
        )
    print(f"written to {written}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
