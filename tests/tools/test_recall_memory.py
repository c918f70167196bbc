"""The recall tool numbers the turns of a matching session streaming, never reading it whole.

A 100 MB session whose only match is near its end: the search finds the line in the raw
bytes (``grep``'s pre-filter) and the turn count is read a piece at a time, so the peak
resident memory of a process that runs it (``VmHWM``, as ``tests/project/test_memory.py``
measures it) stays far below the file's size. Reading the file whole to count its user
messages made it peak above twice the file.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

SIZE = 100 * 1024 * 1024
HEADROOM_KIB = 24 * 1024

PROBE = """
import sys
from jsonl_session.tools.recall import search_sessions
{operation}
with open("/proc/self/status") as status:
    print(next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")), file=sys.stderr)
"""


def run_probe(folder: Path, operation: str) -> tuple[str, int]:
    """What the probe printed, and its peak resident memory in KiB."""
    completed = subprocess.run(
        [sys.executable, "-c", PROBE.format(operation=operation), str(folder)],
        capture_output=True,
        text=True,
        check=True,
    )
    return completed.stdout, int(completed.stderr.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def big_folder(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """``big.jsonl``: 100 MB of turns (a question, an answer), then one turn that says zanzibar."""
    folder = tmp_path_factory.mktemp("recall")
    question = orjson.dumps({"role": "user", "content": "question " + "word " * 100}) + b"\n"
    answer = orjson.dumps({"role": "assistant", "content": "answer " + "word " * 300}) + b"\n"
    block = (question + answer) * 512
    turns = 0
    with (folder / "big.jsonl").open("wb") as file:
        while file.tell() < SIZE:
            file.write(block)
            turns += 512
        file.write(orjson.dumps({"role": "user", "content": "a trip to zanzibar"}) + b"\n")
        file.write(answer)
    return folder, turns + 1


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmHWM from /proc")
def test_recall_numbers_turns_without_reading_the_session_whole(big_folder: tuple[Path, int]) -> None:
    folder, last_turn = big_folder
    assert (folder / "big.jsonl").stat().st_size > SIZE
    _, baseline = run_probe(folder, "pass")
    found, peak = run_probe(
        folder,
        "found = search_sessions(sys.argv[1], 'zanzibar trip')\n"
        "print([(s.session_id, s.turn, s.text) for s in found.snippets])",
    )
    assert found == f"[('big', {last_turn}, 'a trip to zanzibar')]\n"
    assert peak - baseline < HEADROOM_KIB
