"""``jsonl-session serve``: a local, read-only web viewer of a folder of sessions, live.

The standard library's ``ThreadingHTTPServer``, hardened, rather than an ASGI server: one
thread per open connection, a handful of routes, no files served from disk, and the limits
below take a few dozen lines here, while uvicorn would still need most of them (it has no
deadline for a request's head) plus Starlette and a rewrite (docs/viewer.md, "Why the
standard library's server"). Pages are the self-contained transcript of ``show --html``
plus server-sent events (``EventSource``) from one shared folder watch
(:mod:`jsonl_session.serve.hub`), so every open page follows its session within a few
milliseconds and the index follows the folder.

Routes (GET and HEAD only; anything else is 405):

* ``/``: the index, newest session first;
* ``/api/sessions``: the same list as JSON;
* ``/session?id=ID``: a session's transcript;
* ``/events`` and ``/events?id=ID``: server-sent events for the index, or one session
  (which must exist when the stream opens; it may then be deleted and re-created).

Bounded (:class:`Limits`): at most ``connections`` connections at once, fewer under a low
descriptor limit (:func:`connection_budget`); past that a new one closes the oldest that has
not sent a whole request, or gets a 503 at once, without a thread, if every one has. A
request's line and headers must arrive within ``head_seconds`` of the connection (a half-sent
request held a thread and a descriptor forever); a client that takes no byte for
``write_seconds`` is dropped (an ``EventSource`` reconnects by itself, and gets a ``reset``).
Pages are streamed from the session file a piece at a time (``page``) and events
written from the hub's shared views: nothing is copied whole per client.

Safety: no route takes a path. A session is looked up by id among the regular files
directly in the folder (a symlink is not a session), so ``..``, ``%2e%2e``, absolute paths
and links out of the folder all end in 404. Where it listens and which ``Host`` names it
answers is ``addresses``' policy (loopback unless ``--allow-remote``; no DNS rebinding). Every
response carries ``frame-ancestors 'none'`` (no page can be framed); pages' policy allows
only their own script.

Ctrl-C (SIGINT) or SIGTERM stops it: open event streams are ended, the watch stops, and the
command exits with status 0 (a server stopped on purpose is not an error), without a traceback.

Example:
    $ jsonl-session serve --dir sessions
    http://127.0.0.1:8765/
"""

from __future__ import annotations

import errno
import resource
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson

from ..core.errors import JSONLSessionError
from ..core.names import filename_for
from ..render.html import content_security_policy, index_page
from ..session.folder import SessionDirectory
from .addresses import check_address, is_local, local_names
from .heap import give_back, one_arena
from .hub import Hub
from .page import page_parts
from .rows import index_row
from .subscriptions import MAX_QUEUED_BYTES

KEEP_ALIVE_SECONDS = 10.0
"""How often an idle event stream sends a comment (a closed tab is noticed on the next write)."""
NO_FRAMES = "frame-ancestors 'none'"
"""In every response's policy: no page of the viewer can be framed (clickjacking)."""
FILES_RESERVED = 16
"""Descriptors kept out of the connection budget (the watch, a request's short-lived opens)."""
EVICTION_SECONDS = 2.0
"""At most this long for a closed idle connection's thread to give back its slot."""
ACCEPT_RETRY_SECONDS = 0.05
"""Out of descriptors with no idle connection to close: the wait before accepting again."""
_BUSY = (
    b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
    b"Retry-After: 1\r\nConnection: close\r\nContent-Length: 41\r\n\r\n"
    b"too many connections to this viewer: wait\n"
)


@dataclass(frozen=True)
class Limits:
    """What one ``serve`` holds at most, whatever its clients do.

    Attributes:
        connections: Open connections at once (each is a thread); the next gets a 503.
        head_seconds: From the connection to the end of the request's headers.
        write_seconds: A client that takes no byte for this long is dropped.
        queued_bytes: Events a page may fall behind before it gets one ``reset`` instead.
    """

    connections: int = 64
    head_seconds: float = 10.0
    write_seconds: float = 30.0
    queued_bytes: int = MAX_QUEUED_BYTES


class ViewerServer(ThreadingHTTPServer):
    """The HTTP server: the hub, which ``Host`` headers it answers, and its limits."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(self, address: tuple[str, int], hub: Hub, *, limits: Limits | None = None) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.limits = limits or Limits()
        super().__init__(address, Handler)
        self.hub = hub
        self.hosts = local_names(str(self.server_address[0]), address[0])
        self.budget = connection_budget(self.limits.connections)
        self._slots = threading.BoundedSemaphore(self.budget)
        self._heads: dict[socket.socket, float] = {}  # connection -> when its headers are due
        self._closed = self._trimmed = 0  # connections closed in all; how many when the heaps were trimmed
        self._holding: set[Any] = set()  # connections holding a slot
        self._heads_lock = threading.Lock()

    # -- the connection cap ------------------------------------------------------------------

    def get_request(self) -> tuple[socket.socket, Any]:
        try:
            return super().get_request()
        except OSError as exc:
            # Out of descriptors (files held beside the connections): make room, and the
            # connection still waiting in the backlog is taken on the next turn of the loop.
            if exc.errno in (errno.EMFILE, errno.ENFILE) and not self.evict_idle():
                time.sleep(ACCEPT_RETRY_SECONDS)  # nothing to close: do not spin on a readable socket
            raise

    def process_request(self, request: Any, client_address: Any) -> None:
        # Full: a connection that has not sent its request yet makes room (the oldest), else
        # the newcomer is told so now, from this thread. Half-sent requests holding every
        # slot must not keep real ones out until their deadline.
        if not self._slots.acquire(blocking=False) and not (
            self.evict_idle() and self._slots.acquire(timeout=EVICTION_SECONDS)
        ):
            try:
                request.setblocking(False)
                request.send(_BUSY)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        with self._heads_lock:
            self._holding.add(request)
        self.expect_head(request)
        try:
            super().process_request(request, client_address)
        except BaseException:
            # The handler's thread may have started, even finished, before this (Ctrl-C lands
            # anywhere): whichever of the two gets here first gives the slot back.
            self.head_done(request)
            self._release(request)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.head_done(request)
            with self._heads_lock:
                self._closed += 1
            self._release(request)

    def _release(self, request: Any) -> None:
        """Give ``request``'s slot back, once."""
        with self._heads_lock:
            if request not in self._holding:
                return
            self._holding.discard(request)
        self._slots.release()

    # -- the deadline for a request's head ---------------------------------------------------

    def expect_head(self, request: socket.socket) -> None:
        with self._heads_lock:
            self._heads[request] = time.monotonic() + self.limits.head_seconds

    def evict_idle(self) -> bool:
        """Close the oldest connection that has not sent a whole request; False if there is none.

        Its thread's read returns at once and the thread ends, giving back its slot.
        """
        with self._heads_lock:
            if not self._heads:
                return False
            oldest = min(self._heads, key=self._heads.__getitem__)
            del self._heads[oldest]
        try:
            oldest.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        return True

    def head_done(self, request: socket.socket) -> None:
        with self._heads_lock:
            self._heads.pop(request, None)

    def service_actions(self) -> None:
        """Every loop of ``serve_forever``: end overdue half-sent requests, drop sessions no page shows."""
        now = time.monotonic()
        with self._heads_lock:
            late = [request for request, due in self._heads.items() if due <= now]
            for request in late:
                del self._heads[request]
        for request in late:
            try:  # its thread's read returns at once, and the connection closes
                request.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.hub.sweep()
        if (
            self._closed != self._trimmed
        ):  # what their threads freed (arenas of their own), back to the system
            self._trimmed = self._closed
            give_back()


class Handler(BaseHTTPRequestHandler):
    """One request. Only reads; pages and events are written in pieces from the hub or the folder listing."""

    server: ViewerServer
    server_version = "jsonl-session"

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.limits.write_seconds)  # each read and write

    def parse_request(self) -> bool:
        parsed = super().parse_request()
        self.server.head_done(self.connection)  # the headers are in (or the request was refused)
        return parsed

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

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The standard error page (a bad request line...), with this viewer's headers."""
        try:
            self._send(HTTPStatus(code), f"{message or HTTPStatus(code).phrase}\n".encode(), "text/plain")
        except OSError:
            pass

    def _route(self, *, body: bool = True) -> None:
        if not is_local(self.headers.get("Host", ""), self.server.hosts):
            self._send(
                HTTPStatus.FORBIDDEN,
                b"this viewer only answers requests for localhost or the address it listens on\n",
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
            elif url.path == "/events" and (session_id is None or _valid(session_id)):
                self._events(session_id, body=body)
            else:
                self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain", body=body)
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            self.close_connection = True  # the browser went away, or stopped reading
        except (JSONLSessionError, OSError) as exc:
            self._send(HTTPStatus.INTERNAL_SERVER_ERROR, f"{exc}\n".encode(), "text/plain", body=body)

    def _index(self) -> bytes:
        return index_page(
            str(self.server.hub.directory), self._sessions(), api="api/sessions", events="events"
        )

    def _sessions(self) -> list[dict[str, object]]:
        infos = SessionDirectory(self.server.hub.directory, lock_timeout=self.server.hub.lock_timeout).list()
        return [index_row(info) for info in infos]

    def _session(self, session_id: str, *, body: bool) -> None:
        page = self.server.hub.open_page(session_id)
        if page is None:
            self._send(HTTPStatus.NOT_FOUND, b"no such session in this folder\n", "text/plain", body=body)
            return
        with page:
            self._start(HTTPStatus.OK, "text/html", script="transcript.js")  # no length: the end is the close
            self.end_headers()
            if not body:
                return
            try:
                for piece in page_parts(
                    page, self.server.hub.settle, lock_timeout=self.server.hub.lock_timeout
                ):
                    self.wfile.write(piece)
            except (BrokenPipeError, ConnectionResetError, TimeoutError):
                raise
            except (JSONLSessionError, OSError):  # the answer has begun: end it, unfinished
                self.close_connection = True

    def _events(self, session_id: str | None, *, body: bool) -> None:
        # A reconnecting EventSource says which version it has; a new page, in its URL.
        since = _int(self.headers.get("Last-Event-ID"))
        if since is None:
            since = _int(parse_qs(urlsplit(self.path).query).get("v", [""])[0])
        if not body:
            found = session_id is None or SessionDirectory(self.server.hub.directory).exists(session_id)
            self._send(HTTPStatus.OK if found else HTTPStatus.NOT_FOUND, b"", "text/event-stream", body=False)
            return
        subscription = self.server.hub.subscribe(session_id, since)
        if subscription is None:
            self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain")
            return
        self._start(HTTPStatus.OK, "text/event-stream")
        self.end_headers()
        with subscription as events:
            self.wfile.write(b"retry: 500\n\n")
            while True:
                try:
                    event = events.get(timeout=KEEP_ALIVE_SECONDS)
                except EOFError:
                    return
                if event is None:
                    self.wfile.write(b": keep-alive\n\n")
                    continue
                self.wfile.write(b"id: %d\nevent: change\ndata: " % event.version)
                for piece in event.pieces():
                    self.wfile.write(piece)
                self.wfile.write(b"\n\n")

    def _start(self, status: HTTPStatus, content_type: str, *, script: str | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", f"{content_type}; charset=utf-8")
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Referrer-Policy", "no-referrer")
        policy = content_security_policy(script, True) if script is not None else "default-src 'none'"
        self.send_header("Content-Security-Policy", f"{policy}; {NO_FRAMES}")

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
        self._start(status, content_type, script=script)
        self.send_header("Content-Length", str(len(data)))
        if allow is not None:
            self.send_header("Allow", allow)
        self.end_headers()
        if body:
            self.wfile.write(data)


def connection_budget(connections: int) -> int:
    """How many connections at once: ``connections``, fewer if the descriptor limit is low.

    Each connection is a socket and, while it streams a page, the session file; the rest of
    the limit (:data:`FILES_RESERVED`) is for the folder watch and the files a request opens
    for a moment. Past the budget, idle connections make room (``ViewerServer``).
    """
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return connections
    return max(1, min(connections, (soft - FILES_RESERVED) // 2))


def serve(
    directory: str | Path,
    *,
    host: str = "127.0.0.1",
    port: int | str = 8765,
    lock_timeout: float = 10.0,
    allow_remote: bool = False,
    limits: Limits | None = None,
) -> int:
    """Serve ``directory`` until Ctrl-C or SIGTERM; print the URL on stdout first. Returns 0.

    Raises ``addresses.AddressRefused`` for a port out of range, or a host other than a loopback
    one without ``allow_remote``. Made for a process of its own (the CLI's): it asks glibc for
    one malloc arena for the whole process (``serve.heap``).

    Example:
        >>> serve("sessions", port=0)                          # doctest: +SKIP
        http://127.0.0.1:40123/
    """
    number, warning = check_address(host, port, allow_remote=allow_remote)
    limits = limits or Limits()
    one_arena()  # before any thread: what a handler frees must not stay in an arena of its own
    hub = Hub(directory, lock_timeout=lock_timeout, queued_bytes=limits.queued_bytes)
    try:
        server = ViewerServer((host, number), hub, limits=limits)
    except OSError as exc:
        raise OSError(f"cannot listen on {host}:{number}: {exc.strerror or exc}") from None
    if warning:
        print(f"jsonl-session serve: {warning}", file=sys.stderr, flush=True)
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
        if previous is not None:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not interrupt the clean-up
        hub.close()
        server.server_close()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    print("stopped", file=sys.stderr)
    return 0


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


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
