"""Does metadata next to sessions slow ``ls`` down? ``SessionDirectory.list()`` on 1,000 sessions.

Usage (from the repository root)::

    .venv/bin/python benchmarks/ls_metadata.py                   # the table, into benchmarks/output/
    .venv/bin/python benchmarks/ls_metadata.py --update-results  # into benchmarks/results/ls_metadata.json
    .venv/bin/python benchmarks/ls_metadata.py --quick           # 100 sessions, 3 repetitions

Two folders hold the same 1,000 sessions (20 items each). In the second, every session has a
usage log, one in ten is a fork (``.lineage``) and one in twenty has a paused run (``.run``):
the listing tells ``list()`` which sidecars exist, so only forks cost a read more. Both folders
are listed with the listing cache warm (as every ``ls`` after the first) and without it
(``JSONL_SESSION_CACHE=off``: every session read), in interleaved rounds, so noise on the
shared machine hits all four; medians are compared.
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import outputs  # benchmarks/outputs.py (this script's folder is on sys.path)

from jsonl_session import JSONLSession, SessionDirectory
from jsonl_session.core.sidecar_files import LINEAGE, RUN, USAGE, sidecar, stable_json, write_json
from jsonl_session.history.lineage import new_lineage

ITEMS = [
    {"role": "user" if n % 2 == 0 else "assistant", "content": f"message {n} " + "x" * 200} for n in range(20)
]


def build(folder: Path, sessions: int, *, metadata: bool) -> None:
    for number in range(sessions):
        session = JSONLSession(f"s{number:04d}", folder, durable=False)
        session.add_items_sync(ITEMS)
        if not metadata:
            continue
        usage = {
            "at": "2026-12-02T18:00:00Z",
            "requests": 2,
            "input_tokens": 900,
            "total_tokens": 950,
            "turn": 1,
        }
        sidecar(session.path, USAGE).write_bytes(stable_json(usage, indent=False) * 3)
        if number % 10 == 1:
            write_json(sidecar(session.path, LINEAGE), new_lineage("s0000", ITEMS).to_json(), durable=False)
        if number % 20 == 2:
            write_json(
                sidecar(session.path, RUN), {"pending": [], "saved_at": "x", "state": {}}, durable=False
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    outputs.add_options(parser, quick="100 sessions, 3 repetitions (smoke test)")
    args = parser.parse_args(argv)
    if args.quick and args.update_results:
        parser.error("a --quick run is a smoke test, not a result: it does not update the committed results")
    sessions, repetitions = (100, 3) if args.quick else (1000, 15)
    scratch = Path(tempfile.mkdtemp(prefix="ls-metadata-"))
    # The listing cache of these folders goes with them, not into the user's own cache.
    os.environ["XDG_CACHE_HOME"] = str(scratch / "cache")
    try:
        plain, rich = scratch / "plain", scratch / "with-metadata"
        build(plain, sessions, metadata=False)
        build(rich, sessions, metadata=True)
        # Without this wait the cache would fill part-way through the rounds.
        outputs.wait_until_cacheable(time.monotonic())

        def listing(folder: Path, cache: bool) -> float:
            os.environ["JSONL_SESSION_CACHE"] = "on" if cache else "off"
            start = time.perf_counter()
            infos = SessionDirectory(folder).list()
            elapsed = time.perf_counter() - start
            assert len(infos) == sessions
            return elapsed

        timings = outputs.interleaved(
            {
                f"{name}, {'cache warm' if cache else 'no cache'}": functools.partial(listing, folder, cache)
                for name, folder in (("plain", plain), ("with-metadata", rich))
                for cache in (True, False)
            },
            repetitions,
            warmup=1,  # fills the cache, as the first ls after the writes does
        )
        paused = sum(info.paused for info in SessionDirectory(rich).list())
        forks = sum(info.forked_from is not None for info in SessionDirectory(rich).list())
    finally:
        shutil.rmtree(scratch)
    medians = {name: value * 1000 for name, value in outputs.medians(timings).items()}
    ratios = {
        cache: medians[f"with-metadata, {cache}"] / medians[f"plain, {cache}"]
        for cache in ("cache warm", "no cache")
    }
    print(f"SessionDirectory.list() on {sessions} sessions ({repetitions} repetitions, median ms)")
    print(f"{'':38} {'cache warm':>10} {'no cache':>10}")
    for name, label in (
        ("plain", "plain folder"),
        ("with-metadata", f"+ usage logs, {forks} forks, {paused} paused"),
    ):
        print(f"  {label:36} {medians[f'{name}, cache warm']:10.1f} {medians[f'{name}, no cache']:10.1f}")
    print(f"  {'ratio':36} {ratios['cache warm']:9.2f}x {ratios['no cache']:9.2f}x")
    result = {
        "sessions": sessions,
        "repetitions": repetitions,
        "median_ms": {name: round(value, 2) for name, value in medians.items()},
        "ratio": {cache: round(value, 3) for cache, value in ratios.items()},
        "forks": forks,
        "paused": paused,
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    print(f"written to {outputs.write_json(args, 'ls_metadata.json', result, sort_keys=True)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
