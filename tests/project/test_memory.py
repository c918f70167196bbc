"""Whole-file operations keep memory flat on a big session.

Peak memory is a property of the code, not of the machine's speed, so it may be asserted:
each operation runs in a fresh process on a 64 MB session and its peak resident memory
(``VmHWM``) must stay within 16 MB of a process that only imports the package. Before the
fix ``show -n 1`` read and parsed everything (~4x the file), ``ls`` split the whole file
(~2x) and a durable clear kept every removed byte in memory (1x): all three failed.
Speed is measured by ``benchmarks/memory.py``, never here.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from jsonl_session import JSONLSession

SIZE = 64 * 1024 * 1024
HEADROOM_KIB = 16 * 1024

PROBE = """
import sys
from jsonl_session import JSONLSession
from jsonl_session.cli.commands import main
folder = sys.argv[1]
{operation}
with open("/proc/self/status") as status:
    print(next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")), file=sys.stderr)
"""


def peak_kib(folder: Path, operation: str) -> int:
    completed = subprocess.run(
        [sys.executable, "-c", PROBE.format(operation=operation), str(folder)],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(completed.stderr.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def big_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("big")
    line = orjson.dumps({"role": "assistant", "content": "word " * 200}) + b"\n"
    block = line * (1024 * 1024 // len(line))
    with (folder / "big.jsonl").open("wb") as file:
        while file.tell() < SIZE:
            file.write(block)
    return folder


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmHWM from /proc")
@pytest.mark.parametrize(
    "operation",
    [
        "main(['show', 'big', '-n', '1', '--dir', folder])",
        "main(['show', 'big', '-n', '3', '--json', '--dir', folder])",
        "main(['show', 'big', '-n', '1', '--html', '--dir', folder])",
        "main(['show', 'big', '-n', '2', '--markdown', '--dir', folder])",
        "main(['ls', '--dir', folder])",
        "main(['ls', '--json', '--dir', folder])",
        "assert JSONLSession('big', folder).count_items_sync() > 0",
        "assert main(['check', '--dir', folder]) == 0",
        "assert main(['check', 'big', '--json', '--dir', folder]) == 0",
        "JSONLSession('big', folder).clear_session_sync()",  # last: it empties the file
    ],
)
def test_peak_memory_stays_flat_on_a_big_session(big_folder: Path, operation: str) -> None:
    assert (big_folder / "big.jsonl").stat().st_size >= SIZE
    baseline = peak_kib(big_folder, "pass")
    assert peak_kib(big_folder, operation) - baseline < HEADROOM_KIB


FAILING_FSYNC_CLEAR = """
import errno, sys
from jsonl_session import JSONLSession
from jsonl_session.core import storage
def failing(fd):
    raise OSError(errno.EIO, "fsync failed")
storage._fdatasync = failing
try:
    JSONLSession("s", sys.argv[1]).clear_session_sync()
except OSError as exc:
    print(errno.errorcode[exc.errno])
"""


def test_a_big_clear_whose_fsync_fails_puts_every_byte_back(sessions_dir: Path) -> None:
    # Bigger than what is kept in memory, so the removed bytes go through the spill file.
    session = JSONLSession("s", sessions_dir)
    session.add_items_sync([{"role": "user", "content": f"{n} " + "x" * 1000} for n in range(3000)])
    before = session.path.read_bytes()
    assert len(before) > 2 * 1024 * 1024
    child = subprocess.run(
        [sys.executable, "-c", FAILING_FSYNC_CLEAR, str(sessions_dir)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert child.stdout == "EIO\n"
    assert session.path.read_bytes() == before
    assert sorted(path.name for path in sessions_dir.iterdir()) == [
        "s.jsonl",
        "s.jsonl.times",
    ]  # no spill file
