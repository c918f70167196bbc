"""``jsonl-session ls`` on a 50 MB folder against ``wc -l`` on the same files, in the same run.

``ls`` counts every session's items (and its conflict marker lines) and reads each untitled
one's first user message, so without its listing cache it reads every byte; the target (issues
24 and 39) is that it costs no more than its start-up plus twice what ``wc -l`` takes to count
the same lines: ``ls (20 x 2.5 MB) <= ls (20 small sessions) + 2 x wc -l (20 x 2.5 MB)``, both
cold (``JSONL_SESSION_CACHE=off``: every file counted, as after every session changed) and warm
(the listing cache filled: nothing changed since the last ``ls``). The start-up is ``ls`` of a
folder of 20 small sessions with the same names in the same cache state (what
``benchmarks/startup.py`` measures), so the difference is the counting. Runs are interleaved
(each repetition runs every command) so load hits them alike; medians are reported. The files
are in the page cache (the first run of each command is not counted), as they are for an ``ls``
right after a session ran.

The floor: the least any Python program can do for the same answer, in the same run: a bare
interpreter that reads every file in the same pieces and counts newlines with ``bytes.count``
(no blank-line rule, no listing). If the floor misses the same budget (its own start-up plus
2 x ``wc -l``), the target is set by reading through Python, not by our counting.

Run: ``python benchmarks/ls_speed.py [--quick] [--update-results | --out DIR]``; writes
``ls_speed.json`` to ``benchmarks/output/``, or to the committed ``benchmarks/results/`` with
``--update-results``.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import outputs  # benchmarks/outputs.py (this script's folder is on sys.path)
from items import conversation  # benchmarks/items.py: realistic items

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from jsonl_session import JSONLSession

SESSIONS = 20
SESSION_BYTES = 2_500_000
WC_FACTOR = 2.0
START_UP = "jsonl-session ls, 20 small sessions (start-up)"
LS = "jsonl-session ls"
CASES = {"cold": "no listing cache", "warm": "listing cache warm"}
# The floor: read in 256 kB pieces (as core/reads.count_items does) and count newlines, nothing else.
FLOOR = (
    "import os, sys\n"
    "for name in sys.argv[1:]:\n"
    "    fd, position, count = os.open(name, os.O_RDONLY), 0, 0\n"
    "    while piece := os.pread(fd, 262144, position):\n"
    "        position += len(piece)\n"
    "        count += piece.count(b'\\n')\n"
    "    os.close(fd)\n"
)


def make_folder(folder: Path, size: int) -> int:
    """``SESSIONS`` sessions of about ``size`` bytes of realistic items each; the total bytes."""
    for n in range(SESSIONS):
        items = conversation(seed=n)
        session = JSONLSession(f"s{n:02d}", folder, durable=False)
        batch: list[object] = []
        written = 0
        while written < size:
            item = next(items)
            batch.append(item)
            written += len(json.dumps(item)) + 1
        session.add_items_sync(batch)
        session.close()
    return sum(path.stat().st_size for path in folder.glob("*.jsonl"))


def measure(big: Path, small: Path, runs: int) -> dict[str, float]:
    cli = str(Path(sys.executable).with_name("jsonl-session"))
    files = sorted(str(path) for path in big.glob("*.jsonl"))
    warm = dict(os.environ, XDG_CACHE_HOME=str(big.parent / "cache"))
    envs = {"cold": dict(warm, JSONL_SESSION_CACHE="off"), "warm": warm}
    commands: dict[str, tuple[list[str], dict[str, str] | None]] = {
        "python -c pass": ([sys.executable, "-c", "pass"], None),
        "wc -l": (["wc", "-l", *files], None),
        "floor: python reading and counting newlines": ([sys.executable, "-c", FLOOR, *files], None),
    }
    for case, env in envs.items():
        commands[f"{START_UP}, {CASES[case]}"] = ([cli, "ls", "--dir", str(small)], env)
        commands[f"{LS}, {CASES[case]}"] = ([cli, "ls", "--dir", str(big)], env)
    tasks = {
        name: functools.partial(outputs.timed, command, env=env) for name, (command, env) in commands.items()
    }
    # the first round warms the page cache (and fills the listing cache)
    return outputs.medians(outputs.interleaved(tasks, runs, warmup=1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Time jsonl-session ls against wc -l on a folder of 20 sessions of 2.5 MB.",
        epilog="Example:\n  python benchmarks/ls_speed.py --quick",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    outputs.add_options(parser, quick="smoke test: 5 runs, sessions of 250 kB")
    parser.add_argument("--runs", type=int, default=31, help="repetitions per command (median; default 31)")
    args = parser.parse_args(argv)
    if shutil.which("wc") is None:
        parser.error("needs wc (coreutils)")
    size = SESSION_BYTES // 10 if args.quick else SESSION_BYTES
    with tempfile.TemporaryDirectory() as tmp:
        big, small = Path(tmp) / "big", Path(tmp) / "small"
        total = make_folder(big, size)
        for n in range(SESSIONS):
            JSONLSession(f"s{n:02d}", small).add_items_sync(list(itertools.islice(conversation(seed=n), 50)))
        outputs.wait_until_cacheable(time.monotonic())
        times = measure(big, small, 5 if args.quick else args.runs)
    wc = times["wc -l"]
    floor = times["floor: python reading and counting newlines"]
    floor_budget = times["python -c pass"] + WC_FACTOR * wc
    target: dict[str, object] = {}
    ratios: dict[str, float] = {}
    budgets: dict[str, float] = {}
    for case, described in CASES.items():
        start_up, listed = times[f"{START_UP}, {described}"], times[f"{LS}, {described}"]
        budgets[case] = budget = start_up + WC_FACTOR * wc
        target[f"{case}: ls <= start-up + 2 x wc -l"] = listed <= budget
        target[f"{case}: budget_seconds"] = budget
        ratios[f"{case}: ls counting (ls - start-up) / wc -l"] = (listed - start_up) / wc
    target |= {
        "floor <= python start-up + 2 x wc -l": floor <= floor_budget,
        "floor_budget_seconds": floor_budget,
        "quick": args.quick,
    }
    result = {
        "date": date.today().isoformat(),
        "machine": f"{platform.machine()}, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}",
        "sessions": SESSIONS,
        "folder_bytes": total,
        "runs": 5 if args.quick else args.runs,
        "median_seconds": times,
        **ratios,
        "floor counting (floor - python -c pass) / wc -l": (floor - times["python -c pass"]) / wc,
        "target": target,
    }
    written = outputs.write_json(args, "ls_speed.json", result)
    print(f"{SESSIONS} sessions, {total / 1e6:.1f} MB, median of {result['runs']} runs:")
    for name, value in times.items():
        print(f"  {name:72} {value * 1000:8.1f} ms")
    for case in CASES:
        met = "met" if target[f"{case}: ls <= start-up + 2 x wc -l"] else "MISSED"
        print(f"  {case}: ls <= start-up + 2 x wc -l = {budgets[case] * 1000:.1f} ms: {met}")
    floor_met = "met" if floor <= floor_budget else "MISSED"
    print(f"  floor:  floor <= python start-up + 2 x wc -l = {floor_budget * 1000:.1f} ms: {floor_met}")
    print(f"written to {written}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
