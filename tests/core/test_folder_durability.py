"""A durable write makes the session's *name* durable too, not only its bytes.

``fdatasync`` of a file does not persist the folder entry that names it. A file we create has
its folder fsynced at once; one made by ``git checkout``, an editor, ``cp`` or an interrupted
create may never have had it, and a crash could then lose the whole file, the item we just
reported durable included. So the first durable write through each opened file fsyncs its
folder, once; later writes do not. Observed with ``strace`` on a real process: no mock.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import strace_or_skip

from jsonl_session import JSONLSession

WRITES = """
import asyncio, os, sys
from jsonl_session import JSONLSession
print(os.getpid(), flush=True)  # the main thread's id (strace names threads by id)
session = JSONLSession("made_elsewhere", sys.argv[1], durable=sys.argv[2] == "durable")
item = {"role": "user", "content": "hi"}
{calls}
"""

CALLS = {
    "add_items_sync": "session.add_items_sync([item]); session.add_items_sync([item])",
    "add_items": "asyncio.run(session.add_items([item])); asyncio.run(session.add_items([item]))",
    "pop_item_sync": "session.pop_item_sync(); session.pop_item_sync()",
    "pop_item": "asyncio.run(session.pop_item()); asyncio.run(session.pop_item())",
    "clear_session": "asyncio.run(session.clear_session()); asyncio.run(session.clear_session())",
    "rewind_sync": "session.rewind_sync(1); session.rewind_sync(1)",
    "rewind": "asyncio.run(session.rewind(1)); asyncio.run(session.rewind(1))",
    "repair_sync": "session.repair_sync(); session.add_items_sync([item])",
}


def folder_fsyncs(folder: Path, calls: str, *, durable: bool = True) -> int:
    """How many times a process making ``calls`` fsyncs ``folder`` (strace names each descriptor)."""
    return len(folder_fsync_threads(folder, calls, durable=durable)[1])


def folder_fsync_threads(folder: Path, calls: str, *, durable: bool = True) -> tuple[int, list[int]]:
    """The main thread's id in a process making ``calls``, and the thread of each fsync of ``folder``."""
    strace = strace_or_skip()
    log = folder.parent / "strace.log"
    script = WRITES.replace("{calls}", calls)
    ran = subprocess.run(
        [
            strace,
            "-f",
            "-qq",
            "-y",
            "-e",
            "trace=fsync,fdatasync",
            "-o",
            str(log),
            sys.executable,
            "-c",
            script,
            str(folder),
            "durable" if durable else "fast",
        ],
        check=True,
        timeout=60,
        stdout=subprocess.PIPE,
        text=True,
    )
    # Not ">)": a call another thread interrupts is logged as "fsync(3</path> <unfinished ...>".
    # With -f each line starts with the id of the thread that made the call.
    pattern = re.compile(r"^(\d+) +f(?:data)?sync\(\d+<" + re.escape(str(folder.resolve())) + r">")
    threads = [int(found[1]) for line in log.read_text().splitlines() if (found := pattern.search(line))]
    return int(ran.stdout.split()[0]), threads


def made_elsewhere(folder: Path) -> Path:
    """A session file created as ``git checkout`` or ``cp`` would: no folder fsync by us."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "made_elsewhere.jsonl"
    path.write_bytes(b'{"role":"user","content":"one"}\n{"role":"user","content":"two"}\n')
    return path


@pytest.mark.parametrize("call", sorted(CALLS))
def test_the_first_durable_write_to_a_file_made_elsewhere_fsyncs_its_folder_once(
    tmp_path: Path, call: str
) -> None:
    folder = tmp_path / "sessions"
    path = made_elsewhere(folder)
    assert folder_fsyncs(folder, CALLS[call]) == 1
    assert path.exists()


def test_a_file_we_create_has_its_folder_fsynced_once_when_created(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    assert folder_fsyncs(folder, CALLS["add_items_sync"]) == 1
    assert JSONLSession("made_elsewhere", folder).get_items_sync() == [{"role": "user", "content": "hi"}] * 2


def test_durable_false_never_fsyncs_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    made_elsewhere(folder)
    # The clears empty the session; give the rewinds turns to remove (beyond the last is an error).
    calls = [
        ("session.add_items_sync([item, item]); " if "rewind" in name else "") + code
        for name, code in CALLS.items()
    ]
    assert folder_fsyncs(folder, "; ".join(calls), durable=False) == 0


def test_a_session_made_durable_after_construction_still_fsyncs_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    calls = "session.add_items_sync([item]); session.durable = True; " + CALLS["add_items"]
    assert folder_fsyncs(folder, calls, durable=False) == 1  # created without it, so synced later


def test_an_async_create_fsyncs_the_folder_off_the_loops_thread(tmp_path: Path) -> None:
    """The loop never waits for an fsync: ``await add_items`` that creates a durable session
    opens the file, and fsyncs its folder, in a worker thread.

    Catches (mutation testing): the open ahead made without ``create``, or skipped when the
    handle's last descriptor was writable, which left the creation and its folder fsync to the
    loop's own thread."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    main, threads = folder_fsync_threads(folder, CALLS["add_items"])
    assert len(threads) == 1 and threads[0] != main
    # Created again after a close (the handle remembers a writable descriptor) and a deletion.
    again = "session.add_items_sync([item]); session.close(); os.unlink(session.path); " + CALLS["add_items"]
    main, threads = folder_fsync_threads(folder, again)
    assert len(threads) == 2 and threads[0] == main and threads[1] != main
    # Deleted by hand while the handle still holds the old file open (found while reasoning
    # about the mutants above: this creation ran on the loop's thread).
    deleted = "session.add_items_sync([item]); os.unlink(session.path); " + CALLS["add_items"]
    main, threads = folder_fsync_threads(folder, deleted)
    assert len(threads) == 2 and threads[0] == main and threads[1] != main


def creating_threads(folder: Path, calls: str, *, durable: bool) -> tuple[int, list[int]]:
    """The main thread's id in a process making ``calls``, and the thread of each creation
    (``O_CREAT | O_EXCL``) of the session's file."""
    strace = strace_or_skip()
    log = folder.parent / "strace.log"
    ran = subprocess.run(
        [strace, "-f", "-qq", "-e", "trace=openat", "-o", str(log), sys.executable, "-c",
         WRITES.replace("{calls}", calls), str(folder), "durable" if durable else "fast"],
        check=True, timeout=60, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    pattern = re.compile(r'^(\d+) +openat\(AT_FDCWD, "[^"]*/made_elsewhere\.jsonl", [^)]*O_CREAT\|O_EXCL')
    threads = [int(found[1]) for line in log.read_text().splitlines() if (found := pattern.search(line))]
    return int(ran.stdout.split()[0]), threads


IMPORT = (  # an import (import --all) of a session the folder lacks: its own session, created new
    "from jsonl_session.transfer.all_sessions import import_items; "
    "asyncio.run(import_items(session, [item, item], existed=False, private=True))"
)


@pytest.mark.parametrize(
    ("call", "durable", "on_the_loop"),
    [
        (CALLS["add_items"], True, False),
        (IMPORT, True, False),
        (IMPORT, False, False),
        # changes nothing after its one yield, so that CancelledError means nothing was written
        (CALLS["add_items"], False, True),
    ],
    ids=["add_items", "import_items", "import_items-durable=False", "add_items-durable=False"],
)
def test_an_async_create_is_made_off_the_loops_thread_unless_it_must_not_wait(
    tmp_path: Path, call: str, durable: bool, on_the_loop: bool
) -> None:
    """Creating a session file is file work (a stat of the folder, the create, an unlink for
    each sidecar a deleted namesake may have left): a worker's, not the loop's. An import of a
    new session once made its file on the loop's thread, a fifth of the loop's time in
    ``import --all``. A write without fsync creates on the loop, once per file: a wait for a
    worker after its one yield would let a cancelled call leave an empty file behind
    (``tests/session/test_async_cancel.py``)."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    main, threads = creating_threads(folder, call, durable=durable)
    assert len(threads) == 1 and (threads[0] == main) == on_the_loop
    assert JSONLSession("made_elsewhere", folder).get_items_sync() != []
