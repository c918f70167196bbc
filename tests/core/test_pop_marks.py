"""What a pop writes into the file's change mark, now that it neither reads the mark nor asks the
kernel for random bytes each time (``FileHandle.bump_mark``, ``change_mark._new_generation``).

Followers (``watch``) take a file whose inode and mark are unchanged for one that was only
appended to, and a mark with another file id for a new file: so every pop must leave a
generation never seen on that file before, and keep the id of the file it is in.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from cli_helpers import strace_or_skip

from jsonl_session import JSONLSession
from jsonl_session.core import change_mark


def _mark(path: Path) -> bytes:
    mark = change_mark.read(os.open(path, os.O_RDONLY | os.O_CLOEXEC))
    assert mark is not None, "this file system keeps no user extended attributes"
    return mark


def test_every_pop_leaves_a_new_generation_and_keeps_the_file_id(sessions_dir: Path) -> None:
    session = JSONLSession("s", sessions_dir)
    session.add_items_sync([{"n": 0}])
    session.pop_item_sync()
    file_id = _mark(session.path)[:8]
    generations = set()
    for n in range(20):
        session.add_items_sync([{"n": n}])
        session.pop_item_sync()
        mark = _mark(session.path)
        assert mark[:8] == file_id
        generations.add(mark[8:])
    assert len(generations) == 20


REPLACE = """
import sys
from jsonl_session import JSONLSession
JSONLSession("s", sys.argv[1]).replace_items_sync([{"n": 1}, {"n": 3}])
"""


def test_a_pop_after_another_process_replaced_the_file_keeps_the_new_file_id(sessions_dir: Path) -> None:
    """Catches: the file id a handle remembers kept after it reopened a replaced file: followers
    would take the next pop for a new file (``replaced``, every item delivered again)."""
    session = JSONLSession("s", sessions_dir)
    session.add_items_sync([{"n": 1}, {"n": 2}])
    session.pop_item_sync()
    old_id = _mark(session.path)[:8]
    subprocess.run(
        [
            sys.executable,
            "-c",
            REPLACE,
            str(sessions_dir),
        ],
        check=True,
        timeout=60,
    )
    new_id = _mark(session.path)[:8]
    assert new_id != old_id
    assert session.pop_item_sync() == {"n": 3}
    assert _mark(session.path)[:8] == new_id


def test_a_forked_child_writes_generations_of_its_own(sessions_dir: Path) -> None:
    """Catches: a child that continues its parent's sequence, so that the two write the same
    generations (a follower of a file both pop would miss a pop)."""
    parent = JSONLSession("parent", sessions_dir)
    parent.add_items_sync([{"n": 1}, {"n": 2}, {"n": 3}])
    parent.pop_item_sync()  # the sequence has started in the parent
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: pop a file of its own, report its generation
        try:
            child = JSONLSession("child", sessions_dir)
            child.add_items_sync([{"n": 1}, {"n": 2}])
            child.pop_item_sync()
            os.write(write_end, _mark(child.path)[8:])
        finally:
            os._exit(0)
    os.close(write_end)
    child_generation = os.read(read_end, 16)
    os.close(read_end)
    assert os.waitpid(pid, 0)[1] == 0
    parent.pop_item_sync()  # the parent's next generation: the child's first, had it continued
    assert len(child_generation) == 8
    assert _mark(parent.path)[8:] != child_generation


SCRIPT = """
import sys
from jsonl_session import JSONLSession
session = JSONLSession("s", sys.argv[1], durable=True)
session.add_items_sync([{"n": 1}, {"n": 2}])
session.pop_item_sync()  # the file id is known from here on
session.add_items_sync([{"n": 2}])
print("start", flush=True)
assert session.pop_item_sync() == {"n": 2}
"""


def test_a_durable_pop_reads_no_mark_no_random_bytes_and_no_offset_of_the_sidecar(tmp_path: Path) -> None:
    """Catches, by ``strace``: the mark read back on every pop (``fgetxattr``), a generation
    from the kernel (``getrandom``), or the end of the sidecar's record asked with ``lseek``
    (the append's own ``fstat`` told it). Each cost a durable pop ~3-5 µs in its cold worker
    thread (``benchmarks/run.py``). The sidecar's ``fstat`` stays (test_times_after_replace.py)."""
    strace = strace_or_skip()
    folder = tmp_path / "sessions"
    log = tmp_path / "strace.log"
    calls = "trace=fgetxattr,fsetxattr,getrandom,lseek,fstat,newfstatat,statx,pwrite64,pwritev2,ftruncate"
    command = [strace, "-f", "-qq", "-y", "-e", calls + ",write", "-o", str(log)]
    subprocess.run([*command, sys.executable, "-c", SCRIPT, str(folder)], check=True, timeout=60)
    lines = log.read_text().splitlines()
    start = next(index for index, line in enumerate(lines) if "write(1<" in line and "start" in line)
    session = str((folder / "s.jsonl").resolve())
    made = []
    for line in lines[start:]:
        match = re.search(r"\b(\w+)\((\d+<([^>]*)>)?", line)
        if match and match.group(1) != "write":
            made.append((match.group(1), match.group(3)))
    assert ("fsetxattr", session) in made, made
    assert not [call for call in made if call[0] in ("fgetxattr", "getrandom")], made
    sidecar = [name for name, path in made if path == session + ".times"]
    assert len(sidecar) == 2, made
    assert sidecar[0] in ("fstat", "newfstatat", "statx"), made  # an fstat, as the C library makes it
    assert sidecar[1] == "pwrite64", made
