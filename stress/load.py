"""Load run: 8 processes x 2,000 appends on one session with readers and a watcher, then 1,000 sessions.

Checks that nothing is lost or reordered (every writer's items, in order; the watcher's live
mirror equals the file) and prints the throughput, which docs/guarantees.md quotes.

Example:
    python stress/load.py                 # durable (fsync per append), the default
    python stress/load.py --no-durable --appends 5000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from reliability import loadkit


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], epilog="Example: python stress/load.py --no-durable"
    )
    parser.add_argument("--writers", type=int, default=8, help="writer processes (default 8)")
    parser.add_argument("--appends", type=int, default=2000, help="appends per writer (default 2000)")
    parser.add_argument("--readers", type=int, default=2, help="reader processes (default 2)")
    parser.add_argument("--sessions", type=int, default=1000, help="sessions in one folder (default 1000)")
    parser.add_argument("--no-watch", action="store_true", help="run without the live watcher")
    parser.add_argument("--no-durable", action="store_true", help="skip fsync (durable=False)")
    parser.add_argument("--dir", type=Path, help="where to write (default: a new temporary folder)")
    args = parser.parse_args(argv)
    root = args.dir or Path(tempfile.mkdtemp(prefix="load-"))
    durable = not args.no_durable
    try:
        one = loadkit.one_session(
            root / "one",
            writers=args.writers,
            appends=args.appends,
            readers=args.readers,
            watch=not args.no_watch,
            durable=durable,
        )
        many = loadkit.many_sessions(root / "many", sessions=args.sessions, durable=durable)
    except AssertionError as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    print(
        f"one session: {one.writers} writers x {one.appends} appends "
        f"({'durable' if durable else 'not durable'}),"
        f" {args.readers} readers, watcher: {'on' if one.watch_changes is not None else 'off'}\n"
        f"  {one.writers * one.appends:,} items in {one.seconds:.2f} s "
        f"= {one.appends_per_second:,.0f} appends/s;"
        f" {one.reads:,} reads meanwhile; nothing lost or reordered; watcher mirror == file\n"
        f"{many.sessions:,} sessions in one folder: created in {many.create_seconds:.2f} s,"
        f" listed in {many.list_seconds:.2f} s, read back in {many.read_seconds:.2f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
