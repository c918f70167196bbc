"""``serve`` holds bounded resources whatever its clients do.

A page that never reads its events, a connection that sends half a request or nothing, too
many connections at once: each is bounded in bytes, in time or in number. The server runs
in this process with small limits, so the tests wait a second, not the default ten.
"""

from __future__ import annotations

import http.client
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
from viewer_helpers import conversation, write_session

from jsonl_session import JSONLSession
from jsonl_session.serve import hub as hub_module
from jsonl_session.serve.hub import Hub
from jsonl_session.serve.server import Limits, ViewerServer


@contextmanager
def running(folder: Path, limits: Limits, host: str = "127.0.0.1") -> Iterator[ViewerServer]:
    hub = Hub(folder, lock_timeout=5, queued_bytes=limits.queued_bytes)
    server = ViewerServer((host, 0), hub, limits=limits)
    hub.start()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        hub.close()
        server.server_close()
        thread.join(timeout=10)


def port_of(server: ViewerServer) -> int:
    return int(server.server_address[1])


def get(server: ViewerServer, path: str) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port_of(server), timeout=10)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """Does the server close ``sock`` within ``seconds`` (whatever it sent before)?"""
    sock.settimeout(seconds)
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            if not sock.recv(65536):
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return False


def still_open(sock: socket.socket) -> bool:
    """Has the server neither closed ``sock`` nor answered on it (looked at now, without waiting)?"""
    sock.setblocking(False)
    try:
        sock.recv(1, socket.MSG_PEEK)  # an answer, or the end: either way not waiting
        return False
    except BlockingIOError:
        return True
    except ConnectionResetError:
        return False
    finally:
        sock.setblocking(True)


def big_items(count: int, size: int) -> list[dict[str, object]]:
    return [{"role": "user", "content": f"{n} " + "x" * size} for n in range(count)]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    directory = tmp_path / "sessions"
    write_session(directory / "chat.jsonl", conversation())
    return directory


# -- the hub: byte-bounded queues, one coalesced reset, shown sessions only for open pages ----------------


def test_a_subscriber_that_does_not_read_holds_at_most_its_bytes_then_gets_one_reset(folder: Path) -> None:
    hub = Hub(folder, lock_timeout=5, queued_bytes=64 * 1024)
    hub.start()
    session = JSONLSession("chat", folder)
    try:
        page = hub.page("chat")
        assert page is not None
        events = hub.subscribe("chat", page[0])
        assert events is not None
        largest = 0
        for round_ in range(20):  # 20 rewrites of ~40 KB: 800 KB if every one were kept
            session.replace_items_sync(big_items(40, 1000 + round_))
            deadline = time.monotonic() + 10
            while hub.page("chat")[0] == page[0] and time.monotonic() < deadline:  # type: ignore[index]
                time.sleep(0.01)
            page = hub.page("chat")
            largest = max(largest, events.queued_bytes)
        assert largest <= 64 * 1024 + 45 * 1024  # the bound plus at most one event
        event = events.get(timeout=5)
        assert event is not None
        change = orjson.loads(event.data)
        assert change["kind"] == "reset"  # one event for everything missed: the session as it is
        assert [item["text"][:3] for item in change["items"]] == [f"{n} x"[:3] for n in range(40)]
        assert len(change["items"][0]["text"]) == len("0 ") + 1019
        assert events.get(timeout=0.2) is None  # and nothing else queued
        events.close()
    finally:
        hub.close()


def test_only_sessions_a_page_shows_are_kept_in_memory(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_session(folder / "other.jsonl", conversation())
    hub = Hub(folder, lock_timeout=5)
    hub.start()
    try:
        JSONLSession("other", folder).add_items_sync([{"role": "user", "content": "a change"}])
        time.sleep(0.3)
        assert hub.shown() == []  # the index needs no items
        page = hub.page("chat")
        assert page is not None and len(page[1]) == 9
        events = hub.subscribe("chat", page[0])
        assert events is not None
        monkeypatch.setattr(hub_module, "LINGER_SECONDS", 0.0)
        hub.sweep()
        assert hub.shown() == ["chat"]  # followed by a page: kept
        events.close()
        hub.sweep()
        assert hub.shown() == []  # no page shows it: dropped
        assert hub.page("nope") is None and hub.shown() == []
    finally:
        hub.close()


# -- the server: a stalled reader is dropped, half-sent requests time out, a connection cap ------


def test_an_event_stream_that_is_not_read_is_dropped_and_reconnects_to_a_reset(folder: Path) -> None:
    limits = Limits(write_seconds=1.0, queued_bytes=256 * 1024)
    with running(folder, limits) as server:
        stalled = socket.socket()
        stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stalled.connect(("127.0.0.1", port_of(server)))
        stalled.sendall(
            f"GET /events?id=chat&v=0 HTTP/1.1\r\nHost: 127.0.0.1:{port_of(server)}\r\n\r\n".encode()
        )
        session = JSONLSession("chat", folder)
        for round_ in range(12):  # ~1 MB rewrites that nobody reads
            session.replace_items_sync(big_items(100, 10_000 + round_))
        deadline = time.monotonic() + 10  # dropped by the write timeout (1 s here), not queued for
        while server.hub.subscribers("chat") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.hub.subscribers("chat") == 0
        assert closed_within(stalled, 10)  # what the buffers held, then the end
        stalled.close()
        # EventSource reconnects by itself, with the last id it had: it gets the session as it is.
        connection = http.client.HTTPConnection("127.0.0.1", port_of(server), timeout=10)
        connection.request("GET", "/events?id=chat", headers={"Last-Event-ID": "1"})
        response = connection.getresponse()
        fields = {}
        while "data" not in fields:
            name, _, value = response.fp.readline().decode().rstrip("\n").partition(": ")
            if name in ("event", "data"):
                fields[name] = value
        change = orjson.loads(fields["data"])
        assert change["kind"] == "reset" and len(change["items"]) == 100
        connection.close()


@pytest.mark.parametrize(
    "sent",
    [b"", b"GET / HTTP/1.1\r\nHost: 127.0.0.1", b"GET / HTTP/1.1\r\n"],
    ids=["nothing", "half-a-header", "request-line-only"],
)
def test_a_half_sent_request_is_timed_out(folder: Path, sent: bytes) -> None:
    with running(folder, Limits(head_seconds=0.5)) as server:
        sock = socket.create_connection(("127.0.0.1", port_of(server)))
        sock.sendall(sent)
        started = time.monotonic()
        assert closed_within(sock, 5)
        assert time.monotonic() - started < 3
        sock.close()
        assert get(server, "/")[0] == 200


def test_a_request_sent_a_byte_at_a_time_still_has_one_deadline(folder: Path) -> None:
    with running(folder, Limits(head_seconds=0.6, write_seconds=5)) as server:
        sock = socket.create_connection(("127.0.0.1", port_of(server)))
        started = time.monotonic()
        try:
            for byte in b"GET / HTTP/1.1\r\nX-Slow: " + b"a" * 100:
                sock.sendall(bytes([byte]))
                time.sleep(0.1)
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert closed_within(sock, 5)
        assert time.monotonic() - started < 4
        sock.close()


def test_connections_past_the_cap_are_refused_at_once_when_none_is_idle(folder: Path) -> None:
    with running(folder, Limits(connections=3, head_seconds=30)) as server:
        streams = [  # whole requests, answered and open: none of them can make room
            http.client.HTTPConnection("127.0.0.1", port_of(server), timeout=10) for _ in range(3)
        ]
        for stream in streams:
            stream.request("GET", "/events")
            assert stream.getresponse().status == 200
        status, body = get(server, "/")
        assert status == 503 and b"too many connections" in body
        streams.pop().close()  # noticed at its next keep-alive (10 s)
        deadline = time.monotonic() + 20
        while get(server, "/")[0] != 200:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        for stream in streams:
            stream.close()


def test_past_the_cap_the_oldest_connection_without_a_request_makes_room(folder: Path) -> None:
    with running(folder, Limits(connections=3, head_seconds=30)) as server:
        idle = [socket.create_connection(("127.0.0.1", port_of(server))) for _ in range(3)]
        idle[1].sendall(b"GET / HTTP/1.1\r\n")  # half a request
        status, body = get(server, "/")  # the slots are all taken, by connections that sent nothing whole
        assert status == 200 and b"index-data" in body
        assert closed_within(idle[0], 10)  # the oldest made room
        assert still_open(idle[1]) and still_open(idle[2])
        for sock in idle:
            sock.close()


@pytest.mark.timeout(20)
def test_a_full_connection_budget_of_half_sent_requests_does_not_keep_a_real_request_waiting(
    folder: Path, server_for: Any
) -> None:
    # 64 descriptors, 80 connections that sent half a request, a header deadline of 120 s (and
    # 30 s without a byte): the real request can only be answered within the test's 20 s by
    # closing idle connections to make room.
    server = server_for(folder, "--header-timeout", "120", max_files=64)
    idle = []
    for _ in range(80):
        sock = socket.create_connection((server.host, server.port), timeout=30)
        sock.sendall(f"GET / HTTP/1.1\r\nHost: {server.host}:{server.port}\r\n".encode())  # no end
        idle.append(sock)
    connection = http.client.HTTPConnection(server.host, server.port)  # no timeout: pytest's guards
    connection.request("GET", "/session?id=chat")
    response = connection.getresponse()
    assert response.status == 200 and b"session-data" in response.read()
    connection.close()
    assert all(still_open(sock) for sock in idle[-8:])  # the newest idle ones are still waiting
    assert closed_within(idle[0], 30)  # the oldest made room
    for sock in idle:
        sock.close()
    assert server.get("/")[0] == 200


def test_an_interruption_just_after_a_handler_started_releases_its_slot_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ctrl-C landing in the accept loop right after a handler thread started: the cleanup there
    # released the connection's slot again after the handler had (a ValueError from the
    # semaphore, a traceback on stop; seen in tests/serve/test_serve.py's Ctrl-C test).
    import socketserver

    finished = threading.Event()
    errors: list[BaseException] = []
    start_thread = socketserver.ThreadingMixIn.process_request
    handle = ViewerServer.process_request_thread

    def handled(self: ViewerServer, request: Any, address: Any) -> None:
        handle(self, request, address)
        finished.set()

    def started_then_interrupted(self: Any, request: Any, address: Any) -> None:
        start_thread(self, request, address)
        assert finished.wait(10)  # the handler is done and has given its slot back
        raise RuntimeError("interrupted just after the handler thread started")

    monkeypatch.setattr(ViewerServer, "process_request_thread", handled)
    monkeypatch.setattr(socketserver.ThreadingMixIn, "process_request", started_then_interrupted)
    with running(tmp_path, Limits(connections=4)) as server:

        def record(request: Any, address: Any) -> None:
            error = sys.exc_info()[1]
            assert error is not None
            errors.append(error)

        monkeypatch.setattr(server, "handle_error", record)
        assert get(server, "/")[0] == 200
        finished.wait(10)
        monkeypatch.setattr(socketserver.ThreadingMixIn, "process_request", start_thread)
        for _ in range(4):  # every slot is still there, once each
            assert get(server, "/")[0] == 200
    assert [type(error) for error in errors] == [RuntimeError], errors
