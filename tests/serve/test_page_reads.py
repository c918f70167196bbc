"""How often ``serve`` reads a big session to open its page (issue 39), observed with strace, never timed.

The server is a real ``jsonl-session serve`` under ``strace -f``: every ``read``/``pread64``
of the session file is logged with its descriptor's path (``-y``), and what the page costs is
everything after the server accepted the page's connection (the folder watch's look at start
comes before). A page is one pass over the file, whether a page has the session open or not:
its items, turns, the times matched against ``.times``, what rendering the next changes needs
and the index of its lines its follower starts from (``watch.engine.Known``: the follower then reads
only what is appended after the page's bytes) all come from that one pass.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import orjson
from cli_helpers import cli_env, strace_or_skip
from serve_helpers import TIMEOUT, Server, page_data

from jsonl_session import JSONLSession
from jsonl_session.serve.hub import Hub
from jsonl_session.serve.page import page_parts
from jsonl_session.serve.shown import PageSnapshot
from jsonl_session.serve.subscriptions import Subscription

PIECE = 64 * 1024  # what a page reads at a time (server.PAGE_PIECE_BYTES)
# strace splits a call that another thread's call interrupts: "read(5</p>, <unfinished ...>" then
# "<... read resumed>..., 65536) = 65536" on the same thread id.
_READ = re.compile(
    r"^(?P<pid>\d+) +(?:read|pread64)\(\d+<(?P<path>[^>]*)>, .*?(?:\) = (?P<bytes>\d+)$|<unfinished)"
)
_RESUMED = re.compile(r"^(?P<pid>\d+) +<\.\.\. (?:read|pread64) resumed>.*\) = (?P<bytes>\d+)$")
_ACCEPTED = re.compile(r"^\d+ +(?:accept4?\(|<\.\.\. accept4? resumed>).*\) = \d+")


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
    unfinished: set[str] = set()  # threads in the middle of a read of ``path``
    for line in log.read_text().splitlines():
        if _ACCEPTED.match(line):
            counts.append(0)
        elif (match := _READ.match(line)) and match["path"] == str(path):
            if match["bytes"] is None:
                unfinished.add(match["pid"])
            else:
                counts[-1] += int(match["bytes"])
        elif (match := _RESUMED.match(line)) and match["pid"] in unfinished:
            unfinished.discard(match["pid"])
            counts[-1] += int(match["bytes"])
    return counts


def test_a_big_sessions_page_reads_the_file_once_opened_or_not(tmp_path: Path) -> None:
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
    assert size <= cold <= size + PIECE, f"a new session's page read {cold / size:.2f}x the file"


def subscribed(hub: Hub, session_id: str, version: int) -> Subscription:
    subscription = hub.subscribe(session_id, version)
    assert subscription is not None
    return subscription


def streamed(hub: Hub, session_id: str) -> tuple[PageSnapshot, Iterator[bytes]]:
    page = hub.open_page(session_id)
    assert page is not None
    return page, page_parts(page, hub.settle, lock_timeout=10)


def test_a_session_that_grows_between_two_pages_gets_exactly_what_follows_each(tmp_path: Path) -> None:
    """The second page comes before the first one's pass: the follower reads the file from where the
    first page's lock left it and delivers what follows as appended (the first pass then seeds nothing)."""
    session = JSONLSession("s", tmp_path)
    session.add_items_sync([{"role": "user", "content": f"q{n}"} for n in range(100)])
    hub = Hub(tmp_path, lock_timeout=10)
    hub.start()  # its folder watch or the second page's look, whichever comes first, finds the change
    try:
        first, first_parts = streamed(hub, "s")
        with subscribed(hub, "s", first.version) as events:  # the first page's events, as it connects
            session.add_items_sync([{"role": "user", "content": f"late {n}"} for n in (1, 2)])
            second, second_parts = streamed(hub, "s")
            with first, second:
                pages = [page_data(b"".join(parts)) for parts in (first_parts, second_parts)]
            assert [len(page["items"]) for page in pages] == [100, 102]
            assert pages[0]["live"]["version"] == first.version  # no cut: its events follow it
            event = events.get(timeout=TIMEOUT)
            assert event is not None
            change = orjson.loads(event.data)
            assert (change["kind"], change["count"]) == ("appended", 2)
            assert [item["text"] for item in change["items"]] == ["late 1", "late 2"]
            assert change["version"] == pages[1]["live"]["version"]
            assert events.get(timeout=0.05) is None
    finally:
        hub.close()


def test_a_page_hands_its_follower_the_lines_it_read_and_the_follower_goes_on_from_there(
    tmp_path: Path,
) -> None:
    session = JSONLSession("s", tmp_path)
    session.add_items_sync([{"role": "user", "content": f"q{n}"} for n in range(100)])
    hub = Hub(tmp_path, lock_timeout=10)
    hub.start()
    try:
        page, parts = streamed(hub, "s")
        with page:
            data = page_data(b"".join(parts))
        assert len(data["items"]) == 100
        with subscribed(hub, "s", data["live"]["version"]) as events:
            session.pop_item_sync()
            session.add_items_sync([{"role": "user", "content": "after the page"}])
            items = [item["text"] for item in data["items"]]
            while len(items) != 100 or items[-1] != "after the page":
                event = events.get(timeout=TIMEOUT)
                assert event is not None, items
                change = orjson.loads(event.data)
                if change["kind"] == "removed":
                    del items[len(items) - change["count"] :]
                else:
                    assert change["kind"] == "appended", change
                    items += [item["text"] for item in change["items"]]
        assert items == [f"q{n}" for n in range(99)] + ["after the page"]
    finally:
        hub.close()
