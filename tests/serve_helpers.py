"""A real ``jsonl-session serve`` process for the tests, and a small client for its pages and events."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from cli_helpers import cli_env

TIMEOUT = 30.0
LIMITED = (
    "import resource, runpy; resource.setrlimit(resource.RLIMIT_NOFILE, ({max_files}, {max_files})); "
    "runpy.run_module('jsonl_session', run_name='__main__', alter_sys=True)"
)


@dataclass
class Server:
    process: subprocess.Popen[str]
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/"

    def get(
        self, path: str, *, headers: dict[str, str] | None = None, method: str = "GET"
    ) -> tuple[int, bytes]:
        """One request with the path sent exactly as given (no client-side normalisation)."""
        connection = http.client.HTTPConnection(self.host, self.port, timeout=TIMEOUT)
        try:
            connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            connection.putheader("Host", (headers or {}).get("Host", f"{self.host}:{self.port}"))
            for name, value in (headers or {}).items():
                if name != "Host":
                    connection.putheader(name, value)
            connection.endheaders()
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    def headers(self, path: str) -> dict[str, str]:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=TIMEOUT)
        try:
            connection.request("HEAD", path)
            response = connection.getresponse()
            return dict(response.getheaders())
        finally:
            connection.close()

    def events(self, query: str, *, last_event_id: int | None = None) -> Events:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=TIMEOUT)
        headers = {} if last_event_id is None else {"Last-Event-ID": str(last_event_id)}
        connection.request("GET", "/events" + query, headers=headers)
        response = connection.getresponse()
        assert response.status == 200 and response.getheader("Content-Type", "").startswith(
            "text/event-stream"
        )
        return Events(connection, response)

    def stop(self, sig: int = signal.SIGINT) -> tuple[int, str]:
        """Send ``sig`` and wait: the exit code and everything it wrote on stderr."""
        self.process.send_signal(sig)
        code = self.process.wait(timeout=TIMEOUT)
        assert self.process.stderr is not None
        return code, self.process.stderr.read()


class Events:
    """The server-sent events of one stream, read as they come."""

    def __init__(self, connection: http.client.HTTPConnection, response: http.client.HTTPResponse) -> None:
        self.connection = connection
        self.response = response

    def next(self) -> tuple[int, dict[str, Any]]:
        """The next ``change`` event: ``(id, payload)``. Keep-alive comments are skipped."""
        fields: dict[str, str] = {}
        while True:
            line = self.response.fp.readline().decode()
            if not line:
                raise EOFError("the event stream ended")
            line = line.rstrip("\n")
            if line == "":
                if fields.get("event") == "change":
                    return int(fields["id"]), json.loads(fields["data"])
                fields = {}
            elif not line.startswith(":"):
                name, _, value = line.partition(": ")
                fields[name] = value

    def close(self) -> None:
        self.connection.close()


def start_server(directory: Path, *extra: str, max_files: int | None = None) -> Server:
    """A real ``serve`` of ``directory``; ``max_files`` sets its descriptor limit (``RLIMIT_NOFILE``)."""
    command = [sys.executable, "-m", "jsonl_session", "serve", "--dir", str(directory), "--port", "0", *extra]
    if max_files is not None:  # set in the child before it starts (no preexec_fn: the tests have threads)
        command[1:3] = ["-c", LIMITED.format(max_files=max_files)]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env()
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        assert process.stderr is not None
        raise AssertionError(f"serve did not start: {process.stderr.read()}")
    url = urlsplit(line.strip())
    assert url.hostname is not None and url.port is not None
    return Server(process, url.hostname, url.port)


def page_data(page: bytes, block: str = "session-data") -> dict[str, Any]:
    text = page.decode()
    marker = f'<script type="application/json" id="{block}">'
    start = text.index(marker) + len(marker)
    return json.loads(text[start : text.index("</script>", start)])  # type: ignore[no-any-return]


def inotify_instances(pid: int) -> int:
    """How many inotify instances a process has open (one per folder watch)."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:inotify":
                count += 1
        except FileNotFoundError:
            continue
    return count
