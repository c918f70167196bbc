"""Long crash loop: SIGKILL a writer thousands of times while a second writer and a reader run.

The suite runs 200 kills (tests/reliability/test_crash_loop.py); this runs as many as you
ask, with the same checks after every kill (see tests/reliability/crashkit.py): every batch
whose ``add_items`` returned is present, whole and in order; no line is half-written or
glued to another; a torn tail is moved to the sidecar by the next writer.

Example:
    python stress/crash_loop.py --kills 5000 --durable
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from reliability import crashkit


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Example: python stress/crash_loop.py --kills 5000 --durable",
    )
    parser.add_argument("--kills", type=int, default=2000, help="how many SIGKILLs (default 2000)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument("--durable", action="store_true", help="fsync every write (slower)")
    parser.add_argument(
        "--big-every", type=int, default=10, help="every Nth victim writes 12 MiB in one call (0: never)"
    )
    parser.add_argument("--max-delay", type=float, default=0.01, help="longest wait before a kill, s")
    parser.add_argument("--dir", type=Path, help="sessions folder (default: a new temporary one)")
    args = parser.parse_args(argv)
    directory = args.dir or Path(tempfile.mkdtemp(prefix="crash-loop-")) / "sessions"
    print(f"crash loop in {directory}", flush=True)
    try:
        stats = crashkit.run(
            directory,
            kills=args.kills,
            seed=args.seed,
            durable=args.durable,
            big_every=args.big_every,
            max_delay=args.max_delay,
            log=lambda line: print(line, flush=True),
        )
    except AssertionError as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    print(f"passed: {stats}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
