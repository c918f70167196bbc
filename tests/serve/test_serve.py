"""``jsonl-session serve`` as a real process: pages, live events, read-only, no way out, Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run
from serve_helpers import Server, inotify_instances, page_data
from viewer_helpers import conversation, write_session

from jsonl_session import JSONLSession


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    directory = tmp_path / "sessions"
    write_session(directory / "chat.jsonl", conversation())
    write_session(directory / "older.jsonl", conversation()[:2])
    os.utime(directory / "older.jsonl", (1_700_000_000, 1_700_000_000))
    return directory


@pytest.fixture
def server(folder: Path, server_for: Any) -> Server:
    return server_for(folder)  # type: ignore[no-any-return]


def open_page(server: Server, session_id: str) -> tuple[int, list[dict[str, Any]]]:
    status, page = server.get(f"/session?id={session_id}")
    assert status == 200, page
    data = page_data(page)
    return data["live"]["version"], data["items"]


def test_index_lists_sessions_newest_first_with_items_and_size(server: Server, folder: Path) -> None:
    status, page = server.get("/")
    assert status == 200
    rows = page_data(page, "index-data")["sessions"]
    assert [(row["id"], row["items"], row["size"]) for row in rows] == [
        ("chat", 9, (folder / "chat.jsonl").stat().st_size),
        ("older", 2, (folder / "older.jsonl").stat().st_size),
    ]
    status, body = server.get("/api/sessions")
    assert status == 200 and json.loads(body) == rows


def test_the_index_and_ls_agree_on_last_activity_order_and_titles(tmp_path: Path, server_for: Any) -> None:
    folder = tmp_path / "sessions"
    for session_id in ("first", "second", "third"):  # active in this order (their .times say so)
        JSONLSession(session_id, folder).add_items_sync(conversation()[:3])
    JSONLSession("second", folder).set_metadata_sync(title="Paris trip")  # the others: their first question
    os.utime(folder / "third.jsonl", (1_700_000_000, 1_700_000_000))  # touched by hand: not activity
    JSONLSession("first", folder).pop_item_sync()  # a pop changes the file, and is not activity either
    listed = [json.loads(line) for line in run(folder, "ls", "--json").out.splitlines()]
    server = server_for(folder)
    status, body = server.get("/api/sessions")
    assert status == 200
    rows = json.loads(body)
    assert [row["id"] for row in rows] == [entry["id"] for entry in listed] == ["third", "second", "first"]
    assert [row["last_activity"] for row in rows] == [entry["last_activity"] for entry in listed]
    titles = [(row["title"], row["default_title"]) for row in rows]
    assert titles == [(entry["title"] or entry["default_title"], not entry["title"]) for entry in listed]
    assert titles[:2] == [("What's the weather in Paris?", True), ("Paris trip", False)]
    assert page_data(server.get("/")[1], "index-data")["sessions"] == rows


@pytest.mark.parametrize("change", ["append", "pop"])
def test_a_page_streamed_while_the_session_changes_continues_from_what_it_shows(
    tmp_path: Path, server_for: Any, change: str
) -> None:
    folder = tmp_path / "sessions"
    session = JSONLSession("big", folder)
    session.add_items_sync([{"role": "user", "content": f"{n} " + "x" * 4000} for n in range(2000)])  # 8 MB
    server = server_for(folder)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((server.host, server.port))
    sock.sendall(f"GET /session?id=big HTTP/1.1\r\nHost: {server.host}:{server.port}\r\n\r\n".encode())
    received = b""
    while b'"items":[' not in received:  # the page is being streamed: the server holds no lock now
        received += sock.recv(65536)
    if change == "append":
        session.add_items_sync([{"role": "user", "content": "added meanwhile"}])
    else:
        session.pop_item_sync()  # cuts the file the page is read from, in place
    while data := sock.recv(1 << 20):
        received += data
    sock.close()
    page = page_data(received.split(b"\r\n\r\n", 1)[1])
    version, shown = page["live"]["version"], len(page["items"])
    events = server.events(f"?id=big&v={version}", last_event_id=None)
    _, first = events.next()
    events.close()
    # Either way the page's events start with the session as it is now.
    if change == "append":  # the page shows exactly the session as it was when it was asked for
        assert shown == 2000 and version > 0
        assert first["kind"] == "reset" and first["count"] == 2001
    else:  # what the page read may be cut short: its version says it is nothing to build on
        assert version == 0
        assert first["kind"] == "reset" and first["count"] == 1999


def test_session_page_is_the_transcript_with_its_live_version(server: Server) -> None:
    _, items = open_page(server, "chat")
    assert [item["number"] for item in items] == list(range(1, 10))
    assert items[5]["kind"] == "handoff"
    status, _ = server.get("/session?id=nope")
    assert status == 404


def test_appends_pops_clears_and_rewrites_from_other_processes_arrive_as_such(
    server: Server, folder: Path
) -> None:
    version, _ = open_page(server, "chat")
    events = server.events(f"?id=chat&v={version}")
    try:
        assert run(folder, "add", "chat", "Hello from <another> process").code == 0
        _, change = events.next()
        assert (change["kind"], change["count"]) == ("appended", 1)
        assert [(item["number"], item["text"]) for item in change["items"]] == [
            (10, "Hello from <another> process")
        ]

        assert run(folder, "pop", "chat").code == 0
        _, change = events.next()
        assert (change["kind"], change["count"]) == ("removed", 1)

        JSONLSession("chat", folder).replace_items_sync(conversation()[:3])
        _, change = events.next()
        assert (change["kind"], change["count"], len(change["items"])) == ("replaced", 3, 3)

        assert run(folder, "clear", "chat", "--yes").code == 0
        event_id, change = events.next()
        assert (change["kind"], change["count"]) == ("cleared", 3)
        assert change["version"] == event_id
    finally:
        events.close()


def test_a_page_that_reconnects_after_missing_changes_starts_with_a_reset(
    server: Server, folder: Path
) -> None:
    version, _ = open_page(server, "chat")
    live = server.events(f"?id=chat&v={version}")
    try:
        assert run(folder, "pop", "chat").code == 0
        assert run(folder, "pop", "chat").code == 0
        seen = [live.next()[1]["kind"], live.next()[1]["kind"]]  # the server has seen both pops
        assert seen == ["removed", "removed"]
    finally:
        live.close()
    reconnected = server.events("?id=chat", last_event_id=version)  # as EventSource does
    try:
        _, change = reconnected.next()
        assert change["kind"] == "reset"
        assert [item["number"] for item in change["items"]] == list(range(1, 8))
    finally:
        reconnected.close()
    current = server.events(f"?id=chat&v={open_page(server, 'chat')[0]}")
    try:  # an up-to-date page gets no reset: the next event is the next change
        assert run(folder, "add", "chat", "next").code == 0
        assert current.next()[1]["kind"] == "appended"
    finally:
        current.close()


def test_the_index_hears_about_new_sessions(server: Server, folder: Path) -> None:
    events = server.events("")
    try:
        assert run(folder, "add", "brand-new", "hi").code == 0
        while True:
            _, change = events.next()
            if change.get("session") == "brand-new":
                break
        assert change["kind"] == "appended" and "items" not in change  # the index needs no items
        _, body = server.get("/api/sessions")
        assert "brand-new" in [row["id"] for row in json.loads(body)]
    finally:
        events.close()


def test_many_open_pages_share_one_folder_watch(server: Server, folder: Path) -> None:
    deadline = time.monotonic() + 30  # the watch opens its inotify instance in its own time
    while inotify_instances(server.process.pid) == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    streams = [server.events(f"?id=chat&v={open_page(server, 'chat')[0]}") for _ in range(6)]
    streams += [server.events("") for _ in range(3)]
    try:
        assert run(folder, "add", "chat", "to every page").code == 0
        for stream in streams:  # every page is live...
            assert stream.next()[1]["kind"] == "appended"
        assert inotify_instances(server.process.pid) == 1  # ...through one folder watch
    finally:
        for stream in streams:
            stream.close()


# -- nothing outside the folder, nothing written --------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/../../../../etc/passwd",
        "/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "/session?id=..",
        "/session?id=../older",
        "/session?id=%2e%2e%2Folder",
        "/session?id=/etc/passwd",
        "/session?id=%2Fetc%2Fpasswd",
        "/session?id=",
        "/session",
        "/sessions/chat.jsonl",
        "/chat.jsonl",
        "/events?id=..%2F..%2Fetc%2Fpasswd&v=0",
        "//etc/passwd",
    ],
)
def test_no_path_leads_outside_the_folder(server: Server, path: str) -> None:
    status, body = server.get(path)
    assert status == 404, (path, status, body[:200])
    assert b"root:" not in body


def test_a_symlink_out_of_the_folder_is_not_a_session(folder: Path, tmp_path: Path, server_for: Any) -> None:
    secret = write_session(tmp_path / "outside" / "secret.jsonl", [{"role": "user", "content": "TOP SECRET"}])
    (folder / "leak.jsonl").symlink_to(secret)
    server = server_for(folder)
    assert server.get("/session?id=leak")[0] == 404
    assert b"TOP SECRET" not in server.get("/api/sessions")[1]
    assert server.get("/events?id=leak&v=0")[0] == 404


def test_it_is_read_only(server: Server, folder: Path) -> None:
    before = {path.name: path.read_bytes() for path in folder.iterdir()}
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        status, _ = server.get("/session?id=chat", method=method)
        assert status == 405
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == before


def test_only_requests_for_localhost_are_answered(server: Server) -> None:
    assert server.get("/", headers={"Host": "attacker.example"})[0] == 403
    assert server.get("/api/sessions", headers={"Host": f"attacker.example:{server.port}"})[0] == 403
    assert server.get("/", headers={"Host": f"localhost:{server.port}"})[0] == 200


def test_pages_carry_a_policy_that_allows_only_their_own_script(server: Server) -> None:
    policy = server.headers("/session?id=chat")["Content-Security-Policy"]
    assert (
        "default-src 'none'" in policy and "script-src 'sha256-" in policy and "connect-src 'self'" in policy
    )


# -- start and stop ---------------------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_signal_stops_it_cleanly_even_with_open_streams(server: Server, sig: int) -> None:
    version, _ = open_page(server, "chat")
    events = server.events(f"?id=chat&v={version}")
    try:
        code, stderr = server.stop(sig)
        assert code == 0
        assert "Traceback" not in stderr and stderr.endswith("stopped\n"), stderr
        with pytest.raises(EOFError):
            events.next()
    finally:
        events.close()


def test_a_port_in_use_is_one_line_error(server: Server, folder: Path) -> None:
    result = run(folder, "serve", "--port", str(server.port))
    assert result.code == 1
    assert result.err.startswith(f"jsonl-session: error: cannot listen on 127.0.0.1:{server.port}: ")
    assert result.err.count("\n") == 1


def test_a_malformed_session_is_reported_and_the_others_stay_live(server_for: Any, tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    write_session(folder / "good.jsonl", conversation()[:2])
    write_session(folder / "bad.jsonl", conversation()[:1], extra_lines=[b"<<<<<<< HEAD"])
    server: Server = server_for(folder)
    version, items = open_page(server, "good")
    assert len(items) == 2
    status, page = server.get("/session?id=bad")
    assert status == 200
    data = page_data(page)
    assert "bad.jsonl:2: not valid JSON" in data["live"]["problem"]  # shown as an alert, not "live"
    assert [(item["number"], item["kind"]) for item in data["items"]] == [(1, "system"), (2, "invalid")]
    events = server.events(f"?id=good&v={version}")
    try:
        assert run(folder, "add", "good", "still live").code == 0
        _, change = events.next()
        assert change["kind"] == "appended" and change["items"][0]["text"] == "still live"
    finally:
        events.close()


# -- one Host policy, whatever the address; usage errors; no framing -------------


def status_for(server: Server, host: str, path: str = "/api/sessions") -> int:
    return server.get(path, headers={"Host": host})[0]


def test_bound_to_another_loopback_address_only_local_names_are_answered(
    folder: Path, server_for: Any
) -> None:
    server: Server = server_for(folder, "--host", "127.0.0.2")
    assert server.host == "127.0.0.2"
    port = server.port
    for refused in ("attacker.example", f"attacker.example:{port}", "127.0.0.2.attacker.example", "0.0.0.0"):
        assert status_for(server, refused) == 403, refused
    for local in (
        f"127.0.0.2:{port}",
        f"localhost:{port}",
        f"LOCALHOST:{port}",
        f"127.0.0.1:{port}",
        "[::1]",
    ):
        assert status_for(server, local) == 200, local


def test_a_non_loopback_address_needs_allow_remote_and_warns(folder: Path, server_for: Any) -> None:
    refused = run(folder, "serve", "--host", "0.0.0.0", "--port", "0")
    assert refused.code == 2 and refused.out == ""
    assert refused.err.startswith("jsonl-session: error: --host 0.0.0.0 is not a loopback address: ")
    assert "--allow-remote" in refused.err and refused.err.count("\n") == 1

    server: Server = server_for(folder, "--host", "0.0.0.0", "--allow-remote")
    port = server.port
    assert status_for(server, f"attacker.example:{port}") == 403  # DNS rebinding: still refused
    assert status_for(server, f"0.0.0.0:{port}") == 403  # the wildcard is no name of this machine
    assert status_for(server, f"127.0.0.1:{port}") == 200
    code, stderr = server.stop()
    assert code == 0
    assert stderr.startswith("jsonl-session serve: warning: listening on 0.0.0.0, not only on this machine")


@pytest.mark.parametrize(
    "args",
    [
        ["--port", "99999"],
        ["--port", "65536"],
        ["--port", "-1"],
        ["--port", "http"],
        ["--port", "8765.0"],
        ["--host", ""],
        ["--host", "local host"],
        ["--host", "::"],
        ["--header-timeout", "0"],
    ],
)
def test_a_bad_port_or_host_is_a_one_line_usage_error(folder: Path, args: list[str]) -> None:
    result = run(folder, "serve", *args)
    assert (result.code, result.out) == (2, "")
    assert result.err.startswith("jsonl-session: error: --") and result.err.count("\n") == 1, result.err
    assert "Traceback" not in result.err and "internal error" not in result.err


def test_no_response_can_be_framed(server: Server) -> None:
    import http.client

    cases = [
        ("GET", "/", None),
        ("GET", "/session?id=chat", None),
        ("GET", "/api/sessions", None),
        ("HEAD", "/events?id=chat", None),
        ("GET", "/nope", None),
        ("GET", "/session?id=nope", None),
        ("POST", "/", None),
        ("GET", "/", "attacker.example"),
    ]
    for method, path, host in cases:
        connection = http.client.HTTPConnection(server.host, server.port, timeout=30)
        try:
            connection.putrequest(method, path, skip_host=True)
            connection.putheader("Host", host or f"{server.host}:{server.port}")
            connection.endheaders()
            response = connection.getresponse()
            response.read()
            policy = response.getheader("Content-Security-Policy") or ""
            assert "frame-ancestors 'none'" in policy, (method, path, response.status, policy)
            assert response.getheader("X-Frame-Options") == "DENY"
        finally:
            connection.close()
