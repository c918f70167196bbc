"""How ``jsonl-session grep`` compares with the shell pipelines people would write instead.

Builds 20 sessions of 10,000 chat items (~60 MB) in a temporary folder, then times, as whole
commands (startup included), a rare term (~200 hits) and a common one (~190,000 hits):

* ``jsonl-session grep TERM``: message text only, ``id:line: role: snippet``;
* ``grep -Hn TERM | jq``: fast, but matches raw JSON (keys, escapes) rather than message text;
* ``jq 'select(.content|test(TERM))'``: the jq-only search that gives grep's answer.

Run: ``python benchmarks/grep_vs_jq.py`` (needs ``grep`` and ``jq``); writes
``benchmarks/results/grep.json``.
"""

from __future__ import annotations

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

RESULTS = Path(__file__).resolve().parent / "results" / "grep.json"
WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "lazy",
    "dog",
    "weather",
    "Paris",
    "sunny",
    "cloudy",
    "rain",
    "agent",
    "tool",
]


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


def timed(command: str, cwd: Path, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, shell=True, cwd=cwd, stdout=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    if not (shutil.which("grep") and shutil.which("jq")):
        print("needs grep and jq on PATH", file=sys.stderr)
        return 2
    cli = Path(sys.executable).with_name("jsonl-session")
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        build(folder)
        for label, term in (
            ("rare term (~200 hits)", "zanzibar"),
            ("common term (~190,000 hits)", "weather"),
        ):
            results[label] = {
                "jsonl-session grep": timed(f"{cli} grep {term} --dir .", folder),
                "grep -Hn | jq": timed(
                    f"grep -Hn {term} *.jsonl | cut -d: -f3- | jq -r '.role + \": \" + .content[0:60]'",
                    folder,
                ),
                "jq select(test)": timed(
                    f'jq -r \'select(.content|test("{term}")) | .role + ": " + .content[0:60]\' *.jsonl',
                    folder,
                ),
            }
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(
        f"{'seconds (median of 5, whole command)':40} "
        f"{'jsonl-session grep':>18} {'grep | jq':>10} {'jq only':>8}"
    )
    for label, row in results.items():
        print(
            f"{label:40} {row['jsonl-session grep']:>18.2f} "
            f"{row['grep -Hn | jq']:>10.2f} {row['jq select(test)']:>8.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
