"""Measure what an editor that saves by rename (``sed -i``) loses while a writer is appending.

A writer process appends numbered items (durable ``add_items``, the default) and reports each
one ``add_items`` returned; meanwhile this script runs ``sed -i`` (read the file, write a new
one, rename it over the old) on the session again and again. At the end it counts the
acknowledged items that are no longer in the file. docs/format.md quotes the result;
tests/core/test_editor_rename.py shows the mechanism step by step.

Example:
    python stress/editor_rename.py --appends 3000
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from jsonl_session import JSONLSession

WRITER = """
import sys
from jsonl_session import JSONLSession
session = JSONLSession("convo", sys.argv[1])
for n in range(int(sys.argv[2])):
    session.add_items_sync([{"role": "user", "content": f"item {n}"}])
    print(n, flush=True)  # acknowledged: add_items returned
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--appends", type=int, default=3000, help="items the writer appends (default 3000)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        session = JSONLSession("convo", tmp)
        session.add_items_sync([{"role": "system", "content": "start"}])
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, tmp, str(args.appends)],
            stdout=subprocess.PIPE,
            text=True,
            env={"PYTHONPATH": str(ROOT)},
        )
        saves = 0
        while writer.poll() is None:
            subprocess.run(["sed", "-i", "s/start/start/", str(session.path)], check=True)
            saves += 1
        acknowledged = {int(line) for line in (writer.stdout.read() if writer.stdout else "").split()}
        stored = {int(item["content"].split()[1]) for item in session.get_items_sync()[1:]}
    lost = len(acknowledged - stored)
    print(f"{saves} sed -i saves while {len(acknowledged):,} appends were acknowledged: {lost} lost")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
