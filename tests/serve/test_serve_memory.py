"""``serve``'s memory does not grow with its clients: stalled readers of a big session.

A client that asks for a page and stops reading holds a server thread for up to the write
timeout. What that thread holds must be a bounded piece of the page, read from the file as
the socket drains, not the session's items or the page's data: 16 stalled readers of a 30 MB
session once cost 655 MB, and 535 MB stayed after they left.

The server is a real child process; its memory is read from ``/proc/PID/status`` (``VmRSS``
now, ``VmHWM`` its peak). Each reader gets the start of the items (so its request is past
every piece of set-up) and then reads nothing; the test waits until each server thread is
blocked sending, then until the threads are gone after the readers close.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from process_helpers import wait_until
from serve_helpers import Server, start_server

from jsonl_session import JSONLSession

MB = 1024 * 1024
SESSION_BYTES = 30 * MB
READERS = 16
pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")


def turn(n: int) -> list[dict[str, Any]]:
    """One realistic turn of about 3.4 KB: a question, a tool call and its output, an answer."""
    rows = "\n".join(f"| {n}-{row} | item {row * 7 % 13} | {row * 31 % 97}.00 EUR |" for row in range(80))
    return [
        {"role": "user", "content": f"Question {n}: what did order A-{n} contain?"},
        {
            "type": "function_call",
            "name": "lookup_order" if n % 9 else "transfer_to_billing_agent",
            "call_id": f"call_{n}",
            "arguments": f'{{"order": "A-{n}", "fields": ["items", "total"]}}',
        },
        {"type": "function_call_output", "call_id": f"call_{n}", "output": rows},
        {
            "role": "assistant",
            "type": "message",
            "content": [{"type": "output_text", "text": f"{n}: " + rows[:200]}],
        },
    ]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("serve-memory") / "sessions"
    session = JSONLSession("big", directory)
    n = 0
    while not session.path.exists() or session.path.stat().st_size < SESSION_BYTES:
        session.add_items_sync([item for k in range(n, n + 200) for item in turn(k)])  # with .times
        n += 200
    return directory


@pytest.fixture
def server(folder: Path) -> Iterator[Server]:
    running = start_server(folder)
    yield running
    running.process.kill()
    running.process.wait(timeout=30)
    for stream in (running.process.stdout, running.process.stderr):
        if stream is not None:
            stream.close()


def status_kib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))


def waiting(pid: int) -> int:
    """Threads of ``pid`` asleep in ``poll`` (a socket with a timeout waits there to send)."""
    count = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/wchan") as wchan:
                count += wchan.read().startswith("poll_schedule_timeout")
        except FileNotFoundError:
            continue
    return count


def stalled_reader(server: Server, path: str) -> socket.socket:
    """A client that sends a whole request, reads up to the start of the items, then nothing."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((server.host, server.port))
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {server.host}:{server.port}\r\n\r\n".encode())
    sock.settimeout(60)
    seen = b""
    while b'"items":[' not in seen:
        data = sock.recv(65536)
        assert data, "the server closed the page before its items"
        seen = seen[-64:] + data
    return sock


def test_stalled_readers_of_a_big_session_hold_a_piece_each_and_let_go(server: Server, folder: Path) -> None:
    size = (folder / "big.jsonl").stat().st_size
    pid = server.process.pid
    assert server.get("/")[0] == 200  # the index: the code paths a page shares, imported
    bare = status_kib(pid, "VmRSS")
    threads, polling = status_kib(pid, "Threads"), waiting(pid)
    readers = [stalled_reader(server, "/session?id=big") for _ in range(READERS)]
    try:
        wait_until(
            lambda: waiting(pid) >= polling + READERS, 60, "every handler blocked on its stalled client"
        )
        peak = status_kib(pid, "VmHWM")
        bound = bare + (1.5 * size + 50 * MB) / 1024
        assert peak < bound, (
            f"peak {peak // 1024} MB with {READERS} stalled readers, bound {bound // 1024:.0f} MB"
        )
    finally:
        for sock in readers:
            sock.close()
    wait_until(lambda: status_kib(pid, "Threads") <= threads, 60, "the handlers' threads ended")
    # the server gives freed pages back on its next loop (every half second) after connections
    # close: measured at once, the threads' freed pieces may still be resident
    held: list[int] = []

    def given_back() -> bool:
        held.append(status_kib(pid, "VmRSS") - bare)
        return held[-1] < 20 * 1024

    try:
        wait_until(given_back, 10)
    except AssertionError:
        pytest.fail(f"{held[-1] // 1024} MB still held 10 s after the readers left")
    assert server.get("/session?id=big")[0] == 200  # and it still serves the page
