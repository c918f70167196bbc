"""How often ``serve`` reads a big session to open its page (issue 39), observed with strace, never timed.

The server is a real ``jsonl-session serve`` under ``strace -f``: every ``read``/``pread64``
of the session file is logged with its descriptor's path (``-y``), and what the page costs is
everything after the server accepted the page's connection (the folder watch's look at start
comes before). The page of a session no page has open costs the follower's first look, which
indexes the file's lines for the changes that follow (``watch``; no item parsed), and the page's
own pass: its items, turns, the times matched against ``.times`` and what rendering the next
changes needs all come from that one pass. Opened again while the session is followed, the
page is that one pass alone.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

from cli_helpers import cli_env, strace_or_skip
from serve_helpers import TIMEOUT, Server, page_data

from jsonl_session import JSONLSession

PIECE = 64 * 1024  # what a page reads at a time (server.PAGE_PIECE_BYTES)
_READ = re.compile(r"^\d+ +(?:read|pread64)\(\d+<(?P<path>[^>]*)>, .*\) = (?P<bytes>\d+)$")
_ACCEPTED = re.compile(r"^\d+ +accept4?\(.*\) = \d+")


def traced_server(folder: Path, log: Path, strace: str) -> Server:
    command = [strace, "-f", "-qq", "-y", "-s", "0", "-e", "trace=accept,accept4,read,pread64"]
    command += ["-o", str(log), sys.executable, "-m", "jsonl_session", "serve", "--dir", str(folder)]
    process = subprocess.Popen(
        [*command, "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env()
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line, process.stderr.read() if process.stderr else ""
    url = urlsplit(line.strip())
    assert url.hostname is not None and url.port is not None
    return Server(process, url.hostname, url.port)


def traced_child(pid: int) -> int:
    """The process strace (``pid``) runs."""
    [child] = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return int(child)


def bytes_read_per_request(log: Path, path: Path) -> list[int]:
    """Bytes of ``path`` read after each accepted connection (the first entry: before any)."""
    counts = [0]
    for line in log.read_text().splitlines():
        if _ACCEPTED.match(line):
            counts.append(0)
        elif (match := _READ.match(line)) and match["path"] == str(path):
            counts[-1] += int(match["bytes"])
    return counts


def test_a_big_sessions_page_reads_the_file_once_and_its_follower_indexes_it_once(tmp_path: Path) -> None:
    strace = strace_or_skip()
    folder = tmp_path / "sessions"
    session = JSONLSession("big", folder, timestamps=True)
    for batch in range(40):  # 4 MB, with their times and a turn every 100 items
        session.add_items_sync(
            [{"role": "user", "content": f"question {batch}"}]
            + [{"role": "assistant", "content": f"{batch}.{n} " + "x" * 1000} for n in range(99)]
        )
    path = folder / "big.jsonl"
    size = path.stat().st_size
    log = tmp_path / "strace.log"
    server = traced_server(folder, log, strace)
    try:
        pages = []
        for _ in range(2):
            status, body = server.get("/session?id=big")
            assert status == 200, body
            pages.append(page_data(body))
    finally:
        os.kill(traced_child(server.process.pid), signal.SIGINT)  # strace passes on the exit code
        assert server.process.wait(timeout=TIMEOUT) == 0
        for stream in (server.process.stdout, server.process.stderr):
            assert stream is not None
            stream.close()
    for data in pages:  # the page is whole: items, times, turns, a version to follow from
        assert len(data["items"]) == 4000
        assert len(data["times"]) == 4000
        assert len(data["about"]["turns"]) == 40
        assert data["about"]["default_title"] == "question 0"
        assert data["live"]["version"] > 0
    _, cold, warm = bytes_read_per_request(log, path)
    assert size <= warm <= size + PIECE, f"a followed session's page read {warm / size:.2f}x the file"
    assert size <= cold <= 2 * size + PIECE, f"a new session's page read {cold / size:.2f}x the file"
