"""Listing a folder of 100,000 sessions: the first page, the whole listing warm and cold.

An application's sidebar asks for the 20 most recently active sessions; ``ls`` lists them all.
Both rank every session by last activity, which needs one ``lstat`` per session file (two with
a ``.times`` sidecar); counts and activity come from the listing cache when the files are
unchanged (``jsonl_session/session/listing_cache.py``). Targets: the first page of 20
in <= 100 ms; the whole listing, warm, <= 3x ``ls -l`` of the same folder; cold (an empty
listing cache, every session counted), at disk speed: reported against a bare interpreter that
reads every file once (the floor of counting).

The floors, in the same run: ``ls -l`` (stats every file, prints a line each) and ``ls -lt``
(the same, sorted newest first: what any newest-first page must at least do, since the newest
file can be any of them). Commands are interleaved (each repetition runs every one) and medians
reported; the folder is in the page cache.

Run: ``python benchmarks/listing.py [--quick] [--sessions N] [--update-results | --out DIR]``;
writes ``listing.json`` to ``benchmarks/output/``, or to ``benchmarks/results/`` with
``--update-results``.
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import outputs  # benchmarks/outputs.py (this script's folder is on sys.path)

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from jsonl_session import JSONLSession

PAGE = """
import sys
from jsonl_session import SessionDirectory
SessionDirectory(sys.argv[1]).list(limit=20)
"""
# What a correct cold listing must at least do per session: read it under its shared lock (a
# count must not see a writer's half line) and read the newest records of its .times sidecar.
LOCKED_FLOOR = (
    "import fcntl, os, sys\n"
    "folder = sys.argv[1]\n"
    "for name in os.listdir(folder):\n"
    "    if name.endswith('.jsonl'):\n"
    "        fd = os.open(os.path.join(folder, name), os.O_RDONLY)\n"
    "        fcntl.flock(fd, fcntl.LOCK_SH)\n"
    "        while os.read(fd, 262144):\n"
    "            pass\n"
    "        fcntl.flock(fd, fcntl.LOCK_UN)\n"
    "        os.close(fd)\n"
    "    elif name.endswith('.jsonl.times'):\n"
    "        fd = os.open(os.path.join(folder, name), os.O_RDONLY)\n"
    "        os.pread(fd, 1472, max(0, os.fstat(fd).st_size - 1472))\n"
    "        os.close(fd)\n"
)
FLOOR = (
    "import os, sys\n"
    "folder = sys.argv[1]\n"
    "for name in os.listdir(folder):\n"
    "    if name.endswith('.jsonl'):\n"
    "        fd = os.open(os.path.join(folder, name), os.O_RDONLY)\n"
    "        while os.read(fd, 262144):\n"
    "            pass\n"
    "        os.close(fd)\n"
)


def make_folder(folder: Path, sessions: int) -> None:
    """``sessions`` small sessions with timestamps (the default), one in ten with an owner."""
    for n in range(sessions):
        session = JSONLSession(f"user-{n % 997}-chat-{n:06d}", folder, durable=False, timestamps=True)
        session.add_items_sync(
            [
                {"role": "user", "content": f"question {n}"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
            ]
        )
        if n % 10 == 0:
            session.set_metadata_sync(owner=f"user-{n % 997}")
        session.close()


def drop_page_cache() -> bool:
    """Empty the kernel's page cache (root only), so the next reads come from the disk."""
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as control:
            control.write("3\n")
    except OSError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Time listing 100,000 sessions: first page, whole listing warm and cold, against ls -l.",
        epilog="Example:\n  python benchmarks/listing.py --quick",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="smoke test: 2,000 sessions, 3 runs")
    parser.add_argument("--sessions", type=int, default=100_000, help="how many sessions (default 100,000)")
    parser.add_argument("--runs", type=int, default=11, help="repetitions per command (median; default 11)")
    outputs.add_options(parser)
    args = parser.parse_args(argv)
    sessions = 2_000 if args.quick else args.sessions
    runs = 3 if args.quick else args.runs
    cli = str(Path(sys.executable).with_name("jsonl-session"))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "sessions"
        env = {**os.environ, "XDG_CACHE_HOME": str(Path(tmp) / "cache")}
        started = time.perf_counter()
        make_folder(folder, sessions)
        made = time.perf_counter() - started
        outputs.wait_until_cacheable(time.monotonic())
        cold = outputs.timed([cli, "ls", "--dir", str(folder)], env=env)  # the first listing fills the cache
        floor_read = outputs.timed([sys.executable, "-c", FLOOR, str(folder)], env=env)
        floor_locked = outputs.timed([sys.executable, "-c", LOCKED_FLOOR, str(folder)], env=env)
        # The same three from the disk (an empty page cache before each; root only).
        disk: dict[str, float] = {}
        fresh_cache = {**env, "XDG_CACHE_HOME": str(Path(tmp) / "cache-disk")}
        for name, command in (
            ("floor: read every file", [sys.executable, "-c", FLOOR, str(folder)]),
            ("floor: locked reads + .times tails", [sys.executable, "-c", LOCKED_FLOOR, str(folder)]),
            ("jsonl-session ls, empty listing cache", [cli, "ls", "--dir", str(folder)]),
        ):
            if drop_page_cache():
                disk[name] = outputs.timed(command, env=fresh_cache)
        commands: dict[str, tuple[list[str], bool]] = {
            "python -c pass": ([sys.executable, "-c", "pass"], False),
            "ls -l": ([f"ls -l {folder}"], True),
            "ls -lt | head -20": ([f"ls -lt {folder} | head -20"], True),
            "SessionDirectory.list(limit=20)": ([sys.executable, "-c", PAGE, str(folder)], False),
            "jsonl-session ls --limit 20": ([cli, "ls", "--limit", "20", "--dir", str(folder)], False),
            "jsonl-session ls": ([cli, "ls", "--dir", str(folder)], False),
        }
        tasks = {
            name: functools.partial(outputs.timed, command, env=env, shell=shell)
            for name, (command, shell) in commands.items()
        }
        medians = outputs.medians(outputs.interleaved(tasks, runs))
    ls_l = medians["ls -l"]
    page = medians["jsonl-session ls --limit 20"]
    result = {
        "date": date.today().isoformat(),
        "machine": f"{platform.machine()}, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}",
        "sessions": sessions,
        "runs": runs,
        "seconds_to_make": made,
        "median_seconds": medians,
        "cold: jsonl-session ls with an empty listing cache (one run)": cold,
        "floor of cold: python reading every file once (one run)": floor_read,
        "floor of cold: each file read under its shared lock, each .times tail read (one run)": floor_locked,
        "from the disk (page cache dropped before each; one run each)": disk,
        "targets": {
            "first page (jsonl-session ls --limit 20) <= 0.1 s": page <= 0.1,
            "floor: ls -lt | head -20 <= 0.1 s": medians["ls -lt | head -20"] <= 0.1,
            "warm listing / ls -l": medians["jsonl-session ls"] / ls_l,
            "warm listing <= 3 x ls -l": medians["jsonl-session ls"] <= 3 * ls_l,
            "cold listing / floor": cold / floor_read,
            "cold listing / locked floor": cold / floor_locked,
            "from the disk: cold listing / locked floor": (
                disk["jsonl-session ls, empty listing cache"] / disk["floor: locked reads + .times tails"]
                if len(disk) == 3
                else None
            ),
            "quick": args.quick,
        },
    }
    written = outputs.write_json(args, "listing.json", result)
    print(f"{sessions:,} sessions (made in {made:.1f} s), median of {runs} runs:")
    for name, value in medians.items():
        print(f"  {name:40} {value * 1000:9.1f} ms")
    print(f"  {'cold jsonl-session ls (one run)':40} {cold * 1000:9.1f} ms")
    print(f"  {'floor: read every file (one run)':40} {floor_read * 1000:9.1f} ms")
    print(f"  {'floor: locked reads + .times tails (one run)':40} {floor_locked * 1000:9.1f} ms")
    for name, value in disk.items():
        print(f"  from the disk: {name:38} {value * 1000:9.1f} ms")
    print(f"written to {written}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
