"""How ``jsonl-session grep`` compares with the shell pipelines people would write instead.

Builds 20 sessions of 8,500 chat items (~50 MB) in a temporary folder (with ``--big``, also 150
sessions of 10,000, ~440 MB), then times, as whole commands (start-up included), a rare term
(~170 hits), a common one (~160,000 hits) and a common phrase (~30,000 hits):

* ``jsonl-session grep TERM``: message text only, ``id:line: role: snippet``, from this
  (editable) venv and from a regular ``pip install .`` (``installed.regular_install``);
* ``grep -F TERM | jq``: the fast shell answer (matches raw JSON, keys and escapes too);
* ``jq 'select(.content|test(TERM))'``: the jq-only search that gives grep's answer.

The commands are interleaved (each repetition runs all of them) so load hits them alike, and
the package is byte-compiled first, as ``pip install`` leaves it (``benchmarks/installed.py``).
A run of ``jsonl-session grep`` of its own records its peak resident memory (its own or its
greps', whichever is higher) and its number of hits: the one should not follow the other. The
commands run without ``PYTHONUNBUFFERED``, as in a user's shell. Targets:
every term within 2x of ``grep -F | jq`` (``grep`` first finds the term in the raw bytes and
decodes only the lines that contain it), memory flat in the hits.

Run: ``python benchmarks/grep_vs_jq.py [--quick] [--big] [--update-results | --out DIR]`` (needs
``grep`` and ``jq``); writes ``grep.json`` to ``benchmarks/output/``, or to the committed
``benchmarks/results/`` with ``--update-results``.
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson
import outputs  # benchmarks/outputs.py (this script's folder is on sys.path)
from installed import compile_package, regular_install  # benchmarks/installed.py

WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog"]
WORDS += ["weather", "Paris", "sunny", "cloudy", "rain", "agent", "tool"]
TERMS = {"rare term": "zanzibar", "common term": "weather", "common phrase": "sunny weather"}
TARGET_RATIO = 2.0
ONLY_OURS = "jsonl-session grep"  # the command whose memory and hits are recorded


def build(folder: Path, sessions: int = 20, items: int = 8_500) -> None:
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
        "jsonl-session grep": f"exec {cli} grep '{term}' --dir .",
        "jsonl-session grep, regular install": f"exec {regular / 'jsonl-session'} grep '{term}' --dir .",
        "grep -F | jq": f"grep -F -h '{term}' *.jsonl | jq -r '{show}'",
        "jq select(test)": f"jq -r 'select(.content|test(\"{term}\")) | {show}' *.jsonl",
    }


# The commands run as in a user's shell: PYTHONUNBUFFERED (set in some containers and CI
# images) would make Python write each printed line with its own system call.
ENV = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}


def peak_and_hits(command: str, cwd: Path) -> tuple[float | None, int]:
    """Peak resident MB of ``command`` (its own or its greps', whichever is higher: GNU time's
    %M, from ``wait4``) and the lines it printed, in a run of its own (not timed)."""
    with tempfile.NamedTemporaryFile("r") as report:
        time_command = (
            ["/usr/bin/time", "-f", "%M", "-o", report.name] if Path("/usr/bin/time").exists() else []
        )
        done = subprocess.run(
            [*time_command, "sh", "-c", command], cwd=cwd, stdout=subprocess.PIPE, check=True, env=ENV
        )
        peak = report.read().strip().splitlines()[-1] if time_command else ""
    return (round(int(peak) / 1024, 1) if peak.isdigit() else None), done.stdout.count(b"\n")


def measure(
    folder: Path, runs: int, regular: Path, terms: dict[str, str]
) -> dict[str, dict[str, float | None]]:
    results: dict[str, dict[str, float | None]] = {}
    for label, term in terms.items():
        pipelines = commands(term, regular)
        tasks = {
            name: functools.partial(outputs.timed, command, shell=True, cwd=folder, env=ENV)
            for name, command in pipelines.items()
        }
        medians = outputs.medians(outputs.interleaved(tasks, runs))
        row: dict[str, float | None] = dict(medians)
        floor = medians["grep -F | jq"]
        row["ratio to grep -F | jq"] = medians[ONLY_OURS] / floor
        row["ratio to grep -F | jq, regular install"] = medians[f"{ONLY_OURS}, regular install"] / floor
        row["peak MB"], row["hits"] = peak_and_hits(pipelines[f"{ONLY_OURS}, regular install"], folder)
        results[label] = row
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Time jsonl-session grep against grep -F | jq and jq alone on ~60 MB of sessions.",
        epilog="Example:\n  python benchmarks/grep_vs_jq.py --quick",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    outputs.add_options(parser, quick="smoke test: 2 small sessions, 3 runs")
    parser.add_argument("--runs", type=int, default=9, help="repetitions per command (median; default 9)")
    parser.add_argument(
        "--big",
        action="store_true",
        help="also a ~440 MB folder (common term and phrase, 3 runs; ~2 GB free)",
    )
    args = parser.parse_args(argv)
    if not (shutil.which("grep") and shutil.which("jq")):
        print("needs grep and jq on PATH", file=sys.stderr)
        return 2
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as venv:
        bytecode = compile_package()  # as pip install leaves it (benchmarks/installed.py)
        regular = regular_install(Path(venv))
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            if args.quick:
                build(folder, sessions=2, items=2_000)
            else:
                build(folder)
            size = sum(path.stat().st_size for path in folder.iterdir())
            results["folder MB"] = round(size / 1e6)
            results.update(measure(folder, 3 if args.quick else args.runs, regular, TERMS))
        if args.big:
            with tempfile.TemporaryDirectory() as tmp:  # deleted once measured
                folder = Path(tmp)
                build(folder, sessions=150, items=10_000)
                big = {f"{label}, ~440 MB": term for label, term in TERMS.items() if label != "rare term"}
                results["big folder MB"] = round(sum(path.stat().st_size for path in folder.iterdir()) / 1e6)
                results.update(measure(folder, 3, regular, big))
    results["bytecode"] = bytecode
    rows = {label: row for label, row in results.items() if isinstance(row, dict)}
    results["target"] = {
        **{
            f"{label} within 2x of grep -F | jq": row["ratio to grep -F | jq"] <= TARGET_RATIO
            for label, row in rows.items()
        },
        **{
            f"{label} within 2x of grep -F | jq, regular install": (
                row["ratio to grep -F | jq, regular install"] <= TARGET_RATIO
            )
            for label, row in rows.items()
        },
        "quick": args.quick,
    }
    written = outputs.write_json(args, "grep.json", results)
    head = f"{'jsonl-session grep':>18} {'(regular install)':>17} {'grep -F | jq':>12} {'jq only':>8}"
    print(f"{'seconds (median, whole command)':32} {head}")
    for label, row in rows.items():
        ours, regular_time = row["jsonl-session grep"], row["jsonl-session grep, regular install"]
        ratios = f"{row['ratio to grep -F | jq']:.2f}x, {row['ratio to grep -F | jq, regular install']:.2f}x"
        print(
            f"{label:32} {ours:>18.3f} {regular_time:>17.3f} {row['grep -F | jq']:>12.3f} "
            f"{row['jq select(test)']:>8.3f}   ({ratios} grep -F | jq; {row['hits']:.0f} hits, "
            f"{row['peak MB']} MB peak)"
        )
    print(f"written to {written}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
