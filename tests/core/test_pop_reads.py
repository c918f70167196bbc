"""A pop reads the end of the file once, and still pops every last line there can be.

``storage.pop`` reads one block from the end; when that block holds the last line and the
newline before it, the item, the cut and the bytes a durable cut keeps (to put back if its
``fdatasync`` fails) all come from that one read. Every other file (a last line longer than the
block, blank lines at the end, a first line, a torn tail) takes the general path. The lines
here sit on both sides of the block's edge; the read count is observed with ``strace``.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from cli_helpers import strace_or_skip

from jsonl_session import JSONLSession
from jsonl_session.core import storage

BLOCK = storage._POP_BLOCK


def _item_of_line_length(length: int) -> dict[str, str]:
    """An item whose line (newline included) is ``length`` bytes."""
    item = {"role": "user", "content": ""}
    item["content"] = "x" * (length - len(orjson.dumps(item)) - 1)
    assert len(orjson.dumps(item)) + 1 == length
    return item


def _popper(session: JSONLSession, how: str) -> Callable[[], Any]:
    """``pop_item_sync``, or the async ``pop_item``, whose durable pop reads on the loop
    (``storage.take_newest``) and cuts and syncs in a worker: another path through the same block."""
    if how == "async":
        return lambda: asyncio.run(session.pop_item())
    return session.pop_item_sync


MODES = [(True, "sync"), (True, "async"), (False, "sync")]
MODE_IDS = ["durable", "durable-async", "fast"]


@pytest.mark.parametrize(("durable", "how"), MODES, ids=MODE_IDS)
@pytest.mark.parametrize("length", [BLOCK - 2, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK])
def test_a_last_line_on_either_side_of_the_block_is_popped_whole(
    sessions_dir: Path, durable: bool, how: str, length: int
) -> None:
    """Catches: a block that starts inside the last line taken for a whole line (a cut in the
    middle of the item), or the line before the last popped with it."""
    session = JSONLSession("s", sessions_dir, durable=durable)
    pop = _popper(session, how)
    first, last = {"role": "user", "content": "first"}, _item_of_line_length(length)
    session.add_items_sync([first])
    before = session.path.read_bytes()
    session.add_items_sync([last])
    assert pop() == last
    assert session.path.read_bytes() == before
    assert pop() == first
    assert session.path.read_bytes() == b""


@pytest.mark.parametrize(("durable", "how"), MODES, ids=MODE_IDS)
def test_blank_lines_after_the_last_item_are_cut_with_it(sessions_dir: Path, durable: bool, how: str) -> None:
    session = JSONLSession("s", sessions_dir, durable=durable)
    sessions_dir.mkdir(parents=True, exist_ok=True)
    session.path.write_bytes(b'{"a":1}\n{"b":2}\n\n  \n')
    assert _popper(session, how)() == {"b": 2}
    assert session.path.read_bytes() == b'{"a":1}\n'


SCRIPT = """
import asyncio, sys
from jsonl_session import JSONLSession
session = JSONLSession("s", sys.argv[1], durable=sys.argv[2] == "durable")
session.get_items_sync(1)  # opened and locked once before the traced pop
print("start", flush=True)
pop = session.pop_item_sync if sys.argv[3] == "sync" else lambda: asyncio.run(session.pop_item())
assert pop() == {"role": "user", "content": "two"}
"""


@pytest.mark.parametrize(("durable", "how"), MODES, ids=MODE_IDS)
def test_a_pop_reads_the_session_once(tmp_path: Path, durable: bool, how: str) -> None:
    """Catches: a pop that reads its last line twice (once for the tail, once for the line) or,
    durable, a third time to keep the bytes it cuts, with an ``fstat`` for their end."""
    strace = strace_or_skip()
    folder = tmp_path / "sessions"
    folder.mkdir()
    path = folder / "s.jsonl"
    path.write_bytes(b'{"role":"user","content":"one"}\n{"role":"user","content":"two"}\n')
    log = tmp_path / "strace.log"
    command = [strace, "-f", "-qq", "-y", "-e", "trace=pread64,read,fstat,newfstatat,write", "-o", str(log)]
    mode = "durable" if durable else "fast"
    subprocess.run([*command, sys.executable, "-c", SCRIPT, str(folder), mode, how], check=True, timeout=60)
    lines = log.read_text().splitlines()
    start = next(index for index, line in enumerate(lines) if "write(1<" in line and "start" in line)
    on_session = re.compile(r"\b(pread64|read|fstat|newfstatat)\(\d+<" + re.escape(str(path.resolve())) + ">")
    calls = [match.group(1) for line in lines[start:] if (match := on_session.search(line))]
    assert calls == ["pread64"], lines[start:]
