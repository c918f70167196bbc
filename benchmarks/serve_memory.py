"""Memory of ``jsonl-session serve`` under hostile and heavy use, against its targets.

Each scenario starts a fresh ``python -m jsonl_session serve --port 0`` and reads its memory
from ``/proc/PID/status``: the largest ``VmRSS`` sampled every 50 ms, and ``VmHWM`` (the
kernel's peak) at the end.

* **stalled reader**: a 1 MB session (~2,000 realistic items) with one page open and one
  ``/events`` client that never reads (a 4 KB receive buffer), while the session is
  rewritten 300 times (``replace_items``). Target: under 80 MB. (Before: 34 -> 331 MB.)
* **40 MB folder**: 40 sessions of 1 MB; the index is fetched, one session's page opened
  and followed. Target: under 150 MB. (Before: a 39 MiB folder sat at 398 MiB, 522 peak.)
* **40 MB session, 8 stalled page loads**: one 40 MB session whose page is requested by 8
  clients that never read, and opened once normally. Target: under 150 MB. (Before: 1.1 GB.)
* **30 MB session, 16 stalled readers**: 16 clients each get the start of the page's items,
  then read nothing; then they close. Targets: the peak under the server's bare
  memory + 1.5x the session + 50 MB, and within 20 MB of bare once they are gone. (Before:
  655 MB, and 535 MB after; ``tests/serve/test_serve_memory.py`` asserts the same.)

Run:
    python benchmarks/serve_memory.py                   # the table; serve_memory.json in benchmarks/output/
    python benchmarks/serve_memory.py --quick           # 30 rewrites, 10 MB: checks that it runs
    python benchmarks/serve_memory.py --update-results  # into benchmarks/results/serve_memory.json
"""

from __future__ import annotations

import argparse
import http.client
import os
import platform
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import outputs  # benchmarks/outputs.py
from items import sample

from jsonl_session import JSONLSession

TARGETS_MB = {"stalled reader": 80.0, "40 MB folder": 150.0, "40 MB session, 8 stalled page loads": 150.0}
STALLED_READERS = 16


def write_items(path: Path, size: int, seed: int = 1) -> list[Any]:
    """About ``size`` bytes of realistic items in ``path``; the items."""
    items: list[Any] = []
    written = 0
    block = sample(1000, seed=seed)
    while written < size:
        for item in block:
            items.append(item)
            written += len(orjson.dumps(item)) + 1
            if written >= size:
                break
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(item) + b"\n" for item in items))
    return items


class Server:
    """A ``serve`` process, and its memory sampled every 50 ms."""

    def __init__(self, folder: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jsonl_session", "serve", "--dir", str(folder), "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.process.stdout is not None
        self.port = int(self.process.stdout.readline().strip().rsplit(":", 1)[1].rstrip("/"))
        self.max_rss_kb = 0
        self._done = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def status(self, field: str) -> int:
        with open(f"/proc/{self.process.pid}/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))

    def _sample(self) -> None:
        while not self._done.wait(0.05):
            try:
                self.max_rss_kb = max(self.max_rss_kb, self.status("VmRSS"))
            except (OSError, StopIteration):
                return

    def get(self, path: str) -> bytes:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            connection.request("GET", path)
            return connection.getresponse().read()
        finally:
            connection.close()

    def stalled(self, path: str) -> socket.socket:
        """A client that asks for ``path`` and never reads the answer."""
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", self.port))
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n\r\n".encode())
        return sock

    def finish(self) -> dict[str, float]:
        time.sleep(0.2)
        peak = self.status("VmHWM")
        self._done.set()
        self._sampler.join()
        self.process.terminate()
        self.process.wait(timeout=30)
        return {"max_rss_mb": round(self.max_rss_kb / 1024, 1), "peak_mb": round(peak / 1024, 1)}


def stalled_reader(folder: Path, rewrites: int) -> dict[str, float]:
    items = write_items(folder / "chat.jsonl", 1_000_000)
    server = Server(folder)
    server.get("/session?id=chat")
    stalled = server.stalled("/events?id=chat&v=0")
    session = JSONLSession("chat", folder)
    for n in range(rewrites):
        session.replace_items_sync([*items[n % 7 :], *items[: n % 7]])  # 1 MB, different each time
    time.sleep(1.0)
    result = server.finish()
    stalled.close()
    return result


def big_folder(folder: Path, total: int) -> dict[str, float]:
    for n in range(40):
        write_items(folder / f"s{n:02d}.jsonl", total // 40, seed=n)
    server = Server(folder)
    server.get("/")
    server.get("/api/sessions")
    page = server.get("/session?id=s07")
    version = page.split(b'"version":', 1)[1].split(b",", 1)[0].decode()
    follower = server.stalled(f"/events?id=s07&v={version}")
    JSONLSession("s07", folder).add_items_sync([{"role": "user", "content": "one more"}])
    time.sleep(1.0)
    result = server.finish()
    follower.close()
    return result


def stalled_page_loads(folder: Path, total: int) -> dict[str, float]:
    write_items(folder / "big.jsonl", total)
    server = Server(folder)
    loads = [server.stalled("/session?id=big") for _ in range(8)]
    time.sleep(1.0)
    server.get("/session?id=big")
    time.sleep(1.0)
    result = server.finish()
    for sock in loads:
        sock.close()
    return result


def stalled_readers(folder: Path, total: int) -> dict[str, float]:
    """16 readers that take the start of a page's items and then nothing; then they close."""
    write_items(folder / "big.jsonl", total)
    size = (folder / "big.jsonl").stat().st_size
    server = Server(folder)
    server.get("/")
    bare = server.status("VmRSS")
    readers = []
    for _ in range(STALLED_READERS):
        sock = server.stalled("/session?id=big")
        seen = b""
        while b'"items":[' not in seen:
            seen = seen[-64:] + sock.recv(65536)
        readers.append(sock)
    time.sleep(1.0)  # each server thread blocked on its client by now
    during = server.status("VmRSS")
    peak = server.status("VmHWM")
    for sock in readers:
        sock.close()
    time.sleep(1.0)  # the threads have ended and the heap is trimmed
    after = server.status("VmRSS")
    result = server.finish()
    mb = 1024.0
    result.update(
        bare_mb=round(bare / mb, 1),
        during_mb=round(during / mb, 1),
        peak_mb=round(peak / mb, 1),
        after_mb=round(after / mb, 1),
        session_mb=round(size / 1024 / 1024, 1),
        target_mb=round(bare / mb + 1.5 * size / 1024 / 1024 + 50, 1),
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    outputs.add_options(parser, quick="30 rewrites, 10 MB folders")
    args = parser.parse_args(argv)
    rewrites, total = (30, 10_000_000) if args.quick else (300, 40_000_000)
    scenarios: dict[str, Callable[[Path], dict[str, float]]] = {
        "stalled reader": lambda folder: stalled_reader(folder, rewrites),
        "40 MB folder": lambda folder: big_folder(folder, total),
        "40 MB session, 8 stalled page loads": lambda folder: stalled_page_loads(folder, total),
        "30 MB session, 16 stalled readers": lambda folder: stalled_readers(folder, total * 3 // 4),
    }
    results: dict[str, Any] = {}
    for name, scenario in scenarios.items():
        with tempfile.TemporaryDirectory(dir=HERE.parent) as tmp:  # the repo's disk, not a tmpfs in RAM
            started = time.perf_counter()
            result = scenario(Path(tmp) / "sessions")
            result["seconds"] = round(time.perf_counter() - started, 1)
            result.setdefault("target_mb", TARGETS_MB.get(name, 0.0))
            results[name] = result
        print(
            f"{name:<38} max RSS {result['max_rss_mb']:>6.1f} MB  peak {result['peak_mb']:>6.1f} MB"
            f"  (target < {result['target_mb']:.0f} MB, {result['seconds']} s)"
        )
        if "after_mb" in result:
            print(
                f"{'':<38} bare {result['bare_mb']} MB, with the readers {result['during_mb']} MB,"
                f" after they closed {result['after_mb']} MB (target < {result['bare_mb'] + 20:.0f} MB)"
            )
    results["when"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    results["machine"] = f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    results["quick"] = args.quick
    print(f"written to {outputs.write_json(args, 'serve_memory.json', results)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
