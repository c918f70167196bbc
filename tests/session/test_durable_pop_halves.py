"""The async durable pop cuts on the loop and only syncs in a worker thread, as ``add_items`` writes.

A worker's system calls just after it wakes cost several times what the loop's do
(docs/benchmarks.md, "pop_item, durable"): the change mark, the cut and the ``.times`` blank
done there kept the durable pop above its floor. Observed with ``strace -f``, which names the
thread of every call; the item, the file and the sidecar are checked as well.
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


def test_the_cut_the_mark_and_the_times_blank_are_made_on_the_loop(tmp_path: Path) -> None:
    """Catches: any of the pop's changes moved back into the worker, or the sync onto the loop."""
    pid, by_thread = _calls_by_thread(tmp_path, 10)
    loop = by_thread.pop(pid)
    assert [name for name, _ in loop] == ["flock", "pread64", "fsetxattr", "ftruncate", "pwrite64"], loop
    assert ("pwrite64", "times") in loop
    [worker] = by_thread.values()
    assert worker == [("fdatasync", "session"), ("flock", "session")], worker
    session = JSONLSession("s", tmp_path / "sessions")
    assert session.path.read_bytes() == b'{"n":1}\n'
    assert [added is not None for _, added in session.get_items_with_times_sync()] == [True]


def test_a_last_line_longer_than_the_block_is_read_in_the_worker(tmp_path: Path) -> None:
    """Catches: a long last line read on the loop (``storage.cut_newest`` reads one 16 KiB block;
    a longer line is the worker's, as every big read is)."""
    pid, by_thread = _calls_by_thread(tmp_path, 20_000)
    loop = by_thread.pop(pid)
    assert [name for name, _ in loop] == ["flock", "pread64"], loop  # the block: not the whole line
    [worker] = by_thread.values()
    names = [name for name, _ in worker]
    assert "ftruncate" in names and "fdatasync" in names and names[-1] == "flock", worker
    assert JSONLSession("s", tmp_path / "sessions").path.read_bytes() == b'{"n":1}\n'
