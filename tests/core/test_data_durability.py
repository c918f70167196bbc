"""A durable write reaches the disk: the *data* syncs of a real process, counted with ``strace``.

``test_folder_durability`` counts the folder's fsyncs; this counts the ``fdatasync`` (or
``fsync``) calls on the session file itself and on a rewrite's temporary file, for the
blocking calls and for the async ones, whose syncs run in worker threads (``strace -f``
follows those). An async append once made no ``fdatasync`` at all once its folder was
synced: the Runner's path had lost its durability while every test passed.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import strace_or_skip

SCRIPT = """
import asyncio, sys
from jsonl_session import JSONLSession
session = JSONLSession("s", sys.argv[1], durable=sys.argv[2] == "durable")
item = {"role": "user", "content": "hi"}
print("start", flush=True)  # the syncs of setting up come before this line in the log
{calls}
"""

# The file is made by the test (as by ``git checkout``), with two items: the first durable write
# of each process also fsyncs the folder (a separate count), and takes the worker path.
DURABLE_CALLS = {
    # 1st add: the worker path (folder unsynced); 2nd and 3rd: write inline, sync in a worker.
    "add_items": (
        "async def main():\n    for _ in range(3): await session.add_items([item])\nasyncio.run(main())",
        3,
    ),
    "add_items_sync": ("for _ in range(3): session.add_items_sync([item])", 3),
    "pop_item": (
        "async def main():\n    for _ in range(2): await session.pop_item()\nasyncio.run(main())",
        2,
    ),
    "pop_item_sync": ("for _ in range(2): session.pop_item_sync()", 2),
    # The second clear finds an empty file: nothing to cut, nothing to sync.
    "clear_session": (
        "async def main():\n    for _ in range(2): await session.clear_session()\nasyncio.run(main())",
        1,
    ),
    "clear_session_sync": ("for _ in range(2): session.clear_session_sync()", 1),
    "rewind": ("asyncio.run(session.rewind(1))", 1),
    "rewind_sync": ("session.rewind_sync(1)", 1),
}


def strace_log(folder: Path, calls: str, *, durable: bool) -> list[str]:
    """The fsync/fdatasync lines (after set-up) of a process making ``calls`` on ``folder/s.jsonl``."""
    strace = strace_or_skip()
    log = folder.parent / "strace.log"
    script = SCRIPT.replace("{calls}", calls)
    mode = "durable" if durable else "fast"
    command = [strace, "-f", "-qq", "-y", "-e", "trace=fsync,fdatasync,write", "-o", str(log)]
    subprocess.run([*command, sys.executable, "-c", script, str(folder), mode], check=True, timeout=60)
    lines = log.read_text().splitlines()
    start = next(index for index, line in enumerate(lines) if "write(1<" in line and "start" in line)
    return [line for line in lines[start:] if re.search(r"\bf(?:data)?sync\(", line)]


def data_syncs(lines: list[str], path: Path) -> int:
    """How many of ``lines`` sync ``path`` (not its folder; "<unfinished" counts, as it is a call)."""
    pattern = re.compile(r"\bf(?:data)?sync\(\d+<" + re.escape(str(path.resolve())) + r">")
    return sum(1 for line in lines if pattern.search(line))


def made_elsewhere(folder: Path) -> Path:
    folder.mkdir(parents=True)
    path = folder / "s.jsonl"
    path.write_bytes(b'{"role":"user","content":"one"}\n{"role":"user","content":"two"}\n')
    return path


@pytest.mark.parametrize("call", sorted(DURABLE_CALLS))
def test_every_durable_write_syncs_the_session_file_async_calls_included(tmp_path: Path, call: str) -> None:
    """Catches: the async add_items skipping its ``sync_or_undo`` once the folder was synced
    (3 adds made 1 sync), or a pop/clear/rewind whose worker path cuts without syncing."""
    folder = tmp_path / "sessions"
    path = made_elsewhere(folder)
    calls, expected = DURABLE_CALLS[call]
    assert data_syncs(strace_log(folder, calls, durable=True), path) == expected


@pytest.mark.parametrize("call", sorted(DURABLE_CALLS))
def test_a_session_that_is_not_durable_never_syncs_its_data(tmp_path: Path, call: str) -> None:
    folder = tmp_path / "sessions"
    path = made_elsewhere(folder)
    assert data_syncs(strace_log(folder, DURABLE_CALLS[call][0], durable=False), path) == 0


@pytest.mark.parametrize("durable", [True, False], ids=["durable", "fast"])
def test_a_replace_syncs_its_temporary_file_even_when_not_durable(tmp_path: Path, durable: bool) -> None:
    """Catches: ``replace_file`` writing its temporary file with ``durable=durable``: a rename
    that reaches the disk before the data leaves an empty file where the history was (its own
    comment says so). Only the folder's fsync depends on ``durable``."""
    folder = tmp_path / "sessions"
    path = made_elsewhere(folder)
    lines = strace_log(
        folder, 'session.replace_items_sync([{"role": "user", "content": "new"}])', durable=durable
    )
    # The session's temporary file (the .times sidecar's own, written after it, is synced too).
    temp = re.compile(
        r"\bf(?:data)?sync\(\d+<" + re.escape(str(folder.resolve())) + r"/\.[^>]*\.jsonl\.[0-9a-f]+\.tmp>"
    )
    assert sum(1 for line in lines if temp.search(line)) == 1, lines
    folder_syncs = re.compile(r"\bf(?:data)?sync\(\d+<" + re.escape(str(folder.resolve())) + r">")
    assert sum(1 for line in lines if folder_syncs.search(line)) == (1 if durable else 0), lines
    assert path.read_bytes() == b'{"role":"user","content":"new"}\n'


def test_a_session_that_is_not_durable_syncs_nothing_when_it_saves_a_torn_tail(tmp_path: Path) -> None:
    """Catches: ``durable or first sidecar`` for ``durable and first sidecar``: a fast session
    fsynced its folder each time it moved a torn tail aside."""
    folder = tmp_path / "sessions"
    path = made_elsewhere(folder)
    with path.open("ab") as file:
        file.write(b'{"role":"user","con')  # torn by a killed writer
    assert strace_log(folder, "session.add_items_sync([item])", durable=False) == []
    assert path.with_name("s.jsonl.torn").read_bytes() == b'{"role":"user","con\n'


def test_check_fix_makes_its_repair_durable(tmp_path: Path) -> None:
    """Catches (mutation testing): ``check --fix`` moving a torn tail without syncing the cut."""
    folder = tmp_path / "sessions"
    path = made_elsewhere(folder)
    with path.open("ab") as file:
        file.write(b'{"role":"user","con')
    calls = "from jsonl_session.tools.check import check_file\ncheck_file(session.path, fix=True)"
    assert data_syncs(strace_log(folder, calls, durable=True), path) == 1
