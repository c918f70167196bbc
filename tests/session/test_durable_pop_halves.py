"""The async durable pop reads and marks on the loop; a worker thread cuts, syncs, then blanks.

A worker's system calls just after it wakes cost several times what the loop's do
(docs/benchmarks.md, "pop_item, durable"): the read and the change mark done there kept the
durable pop above its floor. The cut stays with the sync: on a big file it takes ~200 µs. The
``.times`` blank comes after the sync, in the worker: made before it, on the loop, it left the
first change after the sync's journal commit to the loop's next write, which paid for starting
the next transaction. Observed with ``strace -f``, which names the thread of every call; the
item, the file and the sidecar are checked as well.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from cli_helpers import strace_or_skip

from jsonl_session import JSONLSession

SCRIPT = """
import asyncio, sys
from jsonl_session import JSONLSession
session = JSONLSession("s", sys.argv[1], durable=True)
session.add_items_sync([{"n": 1}])
session.add_items_sync([{"n": 2, "pad": "x" * int(sys.argv[2])}])  # this object's last: its record is blanked
session.pop_item_sync()  # the mark's file id is known from here on
session.add_items_sync([{"n": 2, "pad": "x" * int(sys.argv[2])}])
print("start", flush=True)
assert asyncio.run(session.pop_item())["n"] == 2
"""
_CALL = re.compile(r"^(\d+) +(\w+)\((\d+<([^>]*)>)?")


def _calls_by_thread(tmp_path: Path, pad: int) -> tuple[int, dict[int, list[tuple[str, str]]]]:
    """The traced script's pid, and the calls each thread made on the session and its sidecar."""
    strace = strace_or_skip()
    folder = tmp_path / "sessions"
    log = tmp_path / "strace.log"
    calls = "trace=fsetxattr,ftruncate,pread64,pwrite64,fdatasync,flock,write"
    command = [strace, "-f", "-qq", "-y", "-e", calls, "-o", str(log)]
    traced = subprocess.Popen([*command, sys.executable, "-c", SCRIPT, str(folder), str(pad)])
    assert traced.wait(timeout=60) == 0
    lines = log.read_text().splitlines()
    start = next(index for index, line in enumerate(lines) if "write(1<" in line and "start" in line)
    pid = int(lines[start].split()[0])
    session = str((folder / "s.jsonl").resolve())
    by_thread: dict[int, list[tuple[str, str]]] = {}
    for line in lines[start + 1 :]:
        match = _CALL.match(line)
        if match and match.group(4) in (session, session + ".times"):
            name = "times" if match.group(4).endswith(".times") else "session"
            by_thread.setdefault(int(match.group(1)), []).append((match.group(2), name))
    return pid, by_thread


def test_the_read_and_the_mark_are_made_on_the_loop_and_the_times_blank_after_the_sync(
    tmp_path: Path,
) -> None:
    """Catches: the read or the mark moved back into the worker, the cut or the sync onto the
    loop, or the blank made before the sync."""
    pid, by_thread = _calls_by_thread(tmp_path, 10)
    loop = by_thread.pop(pid)
    assert loop == [("flock", "session"), ("pread64", "session"), ("fsetxattr", "session")]
    [worker] = by_thread.values()
    assert worker == [
        ("ftruncate", "session"),
        ("fdatasync", "session"),
        ("pwrite64", "times"),
        ("flock", "session"),
    ], worker
    session = JSONLSession("s", tmp_path / "sessions")
    assert session.path.read_bytes() == b'{"n":1}\n'
    assert [added is not None for _, added in session.get_items_with_times_sync()] == [True]


def test_a_last_line_longer_than_the_block_is_read_in_the_worker(tmp_path: Path) -> None:
    """Catches: a long last line read on the loop (``storage.take_newest`` reads one 16 KiB block;
    a longer line is the worker's, as every big read is)."""
    pid, by_thread = _calls_by_thread(tmp_path, 20_000)
    loop = by_thread.pop(pid)
    assert [name for name, _ in loop] == ["flock", "pread64"], loop  # the block: not the whole line
    [worker] = by_thread.values()
    names = [name for name, _ in worker]
    assert "ftruncate" in names and "fdatasync" in names and names[-1] == "flock", worker
    assert JSONLSession("s", tmp_path / "sessions").path.read_bytes() == b'{"n":1}\n'


BAD_LAST_LINE = """
import asyncio, sys
from jsonl_session import JSONLSession, MalformedLineError
session = JSONLSession("s", sys.argv[1], durable=True)
session.add_items_sync([{"n": 1}] * 40_000)  # made here: its folder is synced, the pop can start on the loop
with open(session.path, "ab") as file:
    file.write(b"{bad}\\n")  # by hand
print("start", flush=True)
try:
    asyncio.run(session.pop_item())
except MalformedLineError as error:
    print(error, flush=True)
"""


def test_a_bad_last_line_is_counted_for_its_error_in_the_worker(tmp_path: Path) -> None:
    """Catches: the error for a last line that is no item made on the loop, whose line number
    is found by reading the whole file (a 200 MB session held the loop for ~130 ms; found in review)."""
    strace = strace_or_skip()
    folder = tmp_path / "sessions"
    path = folder / "s.jsonl"
    log = tmp_path / "strace.log"
    command = [strace, "-f", "-qq", "-y", "-e", "trace=pread64,read,write", "-o", str(log)]
    traced = subprocess.run(
        [*command, sys.executable, "-c", BAD_LAST_LINE, str(folder)],
        capture_output=True,
        check=True,
        timeout=60,
    )
    assert "s.jsonl:40001: not valid JSON" in traced.stdout.decode(), traced.stdout
    lines = log.read_text().splitlines()
    start = next(index for index, line in enumerate(lines) if "write(1<" in line and "start" in line)
    pid = int(lines[start].split()[0])
    session = str(path.resolve())
    loop_reads = [
        line for line in lines[start + 1 :] if int(line.split()[0]) == pid and f"<{session}>" in line
    ]
    assert len(loop_reads) == 1, loop_reads  # the block from the end; the counting is the worker's
    assert path.read_bytes() == b'{"n":1}\n' * 40_000 + b"{bad}\n"
