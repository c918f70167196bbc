"""Long fuzzing run: the suite's hypothesis tests with many times more examples.

Runs tests/reliability/test_fuzz.py (random add/pop/clear/get/rewrite sequences against an
in-memory model, and random bytes against the reader) with ``JSONL_SESSION_FUZZ_SCALE``
set, so each test tries ``scale`` times as many examples as in the suite.

Example:
    python stress/fuzz.py --scale 200
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], epilog="Example: python stress/fuzz.py --scale 200"
    )
    parser.add_argument(
        "--scale", type=int, default=100, help="multiply the suite's example counts (default 100)"
    )
    parser.add_argument("-k", default="", help="only tests matching this pytest expression")
    args = parser.parse_args(argv)
    import pytest

    os.environ["JSONL_SESSION_FUZZ_SCALE"] = str(args.scale)
    pytest_args = [str(ROOT / "tests" / "reliability" / "test_fuzz.py"), "-q", "-p", "no:cacheprovider"]
    pytest_args += ["--durations", "0", "--hypothesis-show-statistics"]
    if args.k:
        pytest_args += ["-k", args.k]
    return int(pytest.main(pytest_args))


if __name__ == "__main__":
    sys.exit(main())
