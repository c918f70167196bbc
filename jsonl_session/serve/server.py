"""``jsonl-session serve``: a local, read-only web viewer of a folder of sessions, live.

The standard library's ``ThreadingHTTPServer`` is enough: one thread per open connection, a
handful of routes, no files served from disk. Pages are the self-contained transcript of
``show --html`` plus server-sent events (``EventSource``) from one shared folder watch
(:mod:`jsonl_session.serve.hub`), so every open page follows its session within a few
milliseconds and the index follows the folder.

Routes (GET and HEAD only; anything else is 405):

* ``/``: the index, newest session first;
* ``/api/sessions``: the same list as JSON;
* ``/session?id=ID``: a session's transcript;
* ``/events`` and ``/events?id=ID``: server-sent events for the index, or one session
  (which must exist when the stream opens; it may then be deleted and re-created).

Safety: no route takes a path. A session is looked up by id among the sessions the folder
watch has seen (regular files directly in the folder; a symlink is not a session), so ``..``,
``%2e%2e``, absolute paths and links out of the folder all end in 404. The server binds to
127.0.0.1 unless ``--host`` says otherwise, and then only answers requests addressed to
``127.0.0.1``, ``localhost`` or ``[::1]`` (a web page elsewhere cannot read sessions through
DNS rebinding). Every page carries a Content-Security-Policy that allows only its own script.

Ctrl-C (SIGINT) or SIGTERM stops it: open event streams are ended, the watch stops, and the
command exits with status 0 (a server stopped on purpose is not an error), without a traceback.

Example:
    $ jsonl-session serve --dir sessions
    http://127.0.0.1:8765/
"""

from __future__ import annotations

import signal
import socket
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import orjson

from ..core.errors import JSONLSessionError
from ..core.names import filename_for
from ..render.html import Live, content_security_policy, index_page, transcript_page
from ..session.folder import SessionDirectory, SessionInfo
from .hub import Hub

KEEP_ALIVE_SECONDS = 10.0
"""How often an idle event stream sends a comment (a closed tab is noticed on the next write)."""
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


class ViewerServer(ThreadingHTTPServer):
    """The HTTP server: the hub, the folder, and which ``Host`` headers it answers."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], hub: Hub, *, local_only: bool) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, Handler)
        self.hub = hub
        self.local_only = local_only


class Handler(BaseHTTPRequestHandler):
    """One request. Only reads; every response is built in memory from the hub or the folder listing."""

    server: ViewerServer
    server_version = "jsonl-session"

    def do_GET(self) -> None:
        self._route()

    def do_HEAD(self) -> None:
        self._route(body=False)

    def _refuse(self) -> None:
        self._send(
            HTTPStatus.METHOD_NOT_ALLOWED, b"read-only viewer: GET only\n", "text/plain", allow="GET, HEAD"
        )

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: a viewer's access log is noise in the terminal that started it."""

    def _route(self, *, body: bool = True) -> None:
        if self.server.local_only and not _is_local(self.headers.get("Host", "")):
            self._send(
                HTTPStatus.FORBIDDEN,
                b"this viewer only answers requests for 127.0.0.1 or localhost\n",
                "text/plain",
                body=body,
            )
            return
        url = urlsplit(self.path)
        query = parse_qs(url.query, keep_blank_values=True)
        session_id = query.get("id", [None])[0]
        try:
            if url.path == "/" and not url.query:
                self._send(HTTPStatus.OK, self._index(), "text/html", script="index.js", body=body)
            elif url.path == "/api/sessions":
                self._send(HTTPStatus.OK, orjson.dumps(self._sessions()), "application/json", body=body)
            elif url.path == "/session" and session_id is not None and _valid(session_id):
                self._session(session_id, body=body)
            elif url.path == "/events" and (session_id is None or self._exists(session_id)):
                self._events(session_id, body=body)
            else:
                self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain", body=body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the browser went away
        except (JSONLSessionError, OSError) as exc:
            self._send(HTTPStatus.INTERNAL_SERVER_ERROR, f"{exc}\n".encode(), "text/plain", body=body)

    def _index(self) -> bytes:
        return index_page(
            str(self.server.hub.directory), self._sessions(), api="api/sessions", events="events"
        )

    def _sessions(self) -> list[dict[str, object]]:
        infos = SessionDirectory(self.server.hub.directory, lock_timeout=self.server.hub.lock_timeout).list()
        return [_row(info) for info in infos]

    def _exists(self, session_id: str) -> bool:
        return _valid(session_id) and self.server.hub.page(session_id) is not None

    def _session(self, session_id: str, *, body: bool) -> None:
        page = self.server.hub.page(session_id)
        if page is None:
            self._send(HTTPStatus.NOT_FOUND, b"no such session in this folder\n", "text/plain", body=body)
            return
        version, items = page
        path = self.server.hub.directory / filename_for(session_id)
        problem = self.server.hub.problem(session_id)
        live = Live(
            events=f"events?id={quote(session_id, safe='')}&v={version}",
            version=version,
            problem=f"{session_id}: {problem}" if problem else "",
        )
        html = transcript_page(session_id, items, meta=str(path), live=live)
        self._send(HTTPStatus.OK, html, "text/html", script="transcript.js", body=body)

    def _events(self, session_id: str | None, *, body: bool) -> None:
        # A reconnecting EventSource says which version it has; a new page, in its URL.
        since = _int(self.headers.get("Last-Event-ID"))
        if since is None:
            since = _int(parse_qs(urlsplit(self.path).query).get("v", [""])[0])
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if not body:
            return
        with self.server.hub.subscribe(session_id, since) as events:
            self.wfile.write(b"retry: 500\n\n")
            while True:
                try:
                    event = events.get(timeout=KEEP_ALIVE_SECONDS)
                except EOFError:
                    return
                if event is None:
                    self.wfile.write(b": keep-alive\n\n")
                else:
                    self.wfile.write(b"id: %d\nevent: change\ndata: %s\n\n" % (event.version, event.data))

    def _send(
        self,
        status: HTTPStatus,
        data: bytes,
        content_type: str,
        *,
        script: str | None = None,
        allow: str | None = None,
        body: bool = True,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", f"{content_type}; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        if script is not None:
            self.send_header("Content-Security-Policy", content_security_policy(script, True))
        if allow is not None:
            self.send_header("Allow", allow)
        self.end_headers()
        if body:
            self.wfile.write(data)


def serve(
    directory: str | Path, *, host: str = "127.0.0.1", port: int = 8765, lock_timeout: float = 10.0
) -> int:
    """Serve ``directory`` until Ctrl-C or SIGTERM; print the URL on stdout first. Returns 0.

    Example:
        >>> serve("sessions", port=0)                          # doctest: +SKIP
        http://127.0.0.1:40123/
    """
    hub = Hub(directory, lock_timeout=lock_timeout)
    try:
        server = ViewerServer((host, port), hub, local_only=host in LOCAL_HOSTS)
    except OSError as exc:
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    previous = (
        signal.signal(signal.SIGTERM, _interrupt)
        if threading.current_thread() is threading.main_thread()
        else None
    )
    hub.start()
    try:
        bound_host, bound_port = str(server.server_address[0]), int(server.server_address[1])
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        print(f"http://{shown}:{bound_port}/", flush=True)
        print(f"serving {directory} (read-only; Ctrl-C stops)", file=sys.stderr, flush=True)
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not interrupt the clean-up
        hub.close()
        server.server_close()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    print("stopped", file=sys.stderr)
    return 0


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _row(info: SessionInfo) -> dict[str, object]:
    """An index row: a paused run and a fork's source become notes."""
    notes = []
    if info.paused:
        notes.append("paused run")
    if info.forked_from:
        notes.append(f"forked from {info.forked_from}")
    return {
        "id": info.session_id,
        "items": info.items,
        "size": info.size,
        "modified": info.modified.isoformat(timespec="seconds"),
        "notes": notes,
    }


def _is_local(host_header: str) -> bool:
    host = urlsplit(f"//{host_header}").hostname or ""
    return host in LOCAL_HOSTS


def _valid(session_id: str | None) -> bool:
    if not session_id:
        return False
    try:
        filename_for(session_id)
    except JSONLSessionError:
        return False
    return True


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text else None
    except ValueError:
        return None
