"""Peak memory of whole-file operations on one big session: ``show -n 1``, ``ls``, a durable clear.

Each operation runs in a fresh process on a session of ``--size-mb`` megabytes (300 by
default, realistic chat lines) and reports its peak resident memory (``VmHWM``), next to the
peak of a process that only imports the package. Each is to stay under ~80 MB on 300 MB,
a whole ``show --html`` too: the page is streamed, never built whole.

Run:
    python benchmarks/memory.py --quick            # 30 MB, one run each: a check, not a result
    python benchmarks/memory.py --update-results   # 300 MB, writes benchmarks/results/memory.json
    python benchmarks/memory.py --out DIR          # memory.json into DIR (default benchmarks/output/)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import items as item_source  # benchmarks/items.py
import outputs  # benchmarks/outputs.py

OPERATIONS = {
    "baseline (imports only)": "pass",
    "show ID -n 1": "main(['show', 'big', '-n', '1', '--dir', folder])",
    "show ID -n 1 --html": "main(['show', 'big', '-n', '1', '--html', '--dir', folder])",
    "show ID --html -o FILE": "main(['show', 'big', '--html', '-o', folder + '.html', '--dir', folder])",
    "ls": "main(['ls', '--dir', folder])",
    "check ID": "main(['check', 'big', '--dir', folder])",
    "clear_session() (durable)": "JSONLSession('big', folder).clear_session_sync()",
}

PROBE = """
import sys
from jsonl_session import JSONLSession
from jsonl_session.cli.commands import main
folder = sys.argv[1]
{operation}
with open("/proc/self/status") as status:
    print(next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")), file=sys.stderr)
"""


def write_session(path: Path, size: int) -> int:
    """~``size`` bytes of realistic lines, fast: one 1,000-item block repeated."""
    block = b"".join(orjson.dumps(item) + b"\n" for item in item_source.sample(1000, seed=3))
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as file:
        written = 0
        while written < size:
            written += file.write(block)
    return written


def peak_kib(folder: Path, operation: str) -> int:
    """Peak resident memory (KiB) of a fresh process running ``operation`` on ``folder``."""
    completed = subprocess.run(
        [sys.executable, "-c", PROBE.format(operation=operation), str(folder)],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(completed.stderr.strip().splitlines()[-1])


def measure(size: int, runs: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(dir=HERE.parent) as tmp:  # the repo's disk, not a tmpfs in RAM
        folder = Path(tmp) / "sessions"
        written = write_session(folder / "big.jsonl", size)
        for name, operation in OPERATIONS.items():
            peaks = []
            for _ in range(runs):
                if not (folder / "big.jsonl").stat().st_size:  # the clear emptied it: refill
                    write_session(folder / "big.jsonl", size)
                peaks.append(peak_kib(folder, operation))
            results[name] = {"peak_rss_mb": round(statistics.median(peaks) / 1024, 1), "runs": runs}
    return {"file_mb": round(written / 1e6, 1), "operations": results}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    outputs.add_options(parser, quick="30 MB and one run each (a check, not a result)")
    parser.add_argument("--size-mb", type=int, default=300, help="session size (default 300)")
    args = parser.parse_args(argv)
    size_mb, runs = (30, 1) if args.quick else (args.size_mb, 3)
    results = measure(size_mb * 1_000_000, runs)
    for name, result in results["operations"].items():
        print(f"{name:<28} peak RSS {result['peak_rss_mb']:>7.1f} MB  ({results['file_mb']} MB session)")
    print(f"written to {outputs.write_json(args, 'memory.json', results)}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("NO_COLOR", "1")
    sys.exit(main())
