"""Moving a whole folder to a shared backend: ``export --all`` and ``import --all``, in items per second.

Usage (from the repository root)::

    python benchmarks/transfer.py                   # 1,000 sessions x 100 items, into benchmarks/output/
    python benchmarks/transfer.py --quick           # 50 x 20: checks that it works (a few seconds)
    python benchmarks/transfer.py --update-results  # into benchmarks/results/transfer.json

It starts its own throw-away servers (``redis-server`` and PostgreSQL's ``initdb``/``pg_ctl``
from ``/usr/lib/postgresql/<version>/bin``, as ``nobody`` when run as root) on free loopback
ports, with persistence off (``--save ""``; ``fsync=off``) so that the figures measure the copy,
not the server's disk. The session files are written durably (fsync), as the CLI does.

What is measured, per backend, with the library calls the CLI makes
(:mod:`jsonl_session.transfer.all_sessions`):

* **export**: every session of the folder, one ``add_items`` per session;
* **re-run**: the same export again, when every session is already there (read and compare);
* **import**: every session back into an empty folder, one atomic file write per session;
* **append**: every 10th session gained 10 items since: the export compares every session and
  appends only those tails (items/s counts the appended items only);
* **sdk-copy**: the yardstick for import: every session read through the SDK's own session
  class and copied into a new file with ``copy_session`` (8 at a time, as import does).
  Import and sdk-copy are measured in ``--rounds`` alternating rounds (each into an empty
  folder, removed after it, untimed), so both meet the same load; each step's figure is the
  median round, and ``import_vs_sdk_copy`` the ratio of the medians;
* with ``--shards``: **mirror x1** and **mirror x2**, the live mirror's catch-up
  (``catch_up_mirror``) of the folder into one PostgreSQL server and spread over two
  (``mirror --to A --to B``), each into empty databases.

Exports go the way the CLI's do: into PostgreSQL many sessions per transaction in the SDK's
tables (``transfer.sql_store``), into Redis one ``MULTI``/``EXEC`` per session
(``transfer.redis_store``), each with its companion metadata; after the export every 50th
session is read back through the SDK's own session class and compared (not timed).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import glob
import importlib
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(1, str(HERE))

import items as item_source  # benchmarks/items.py
import outputs  # benchmarks/outputs.py

from jsonl_session import SessionDirectory
from jsonl_session.transfer.all_sessions import export_all, import_all


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def redis_server(scratch: Path) -> Iterator[str]:
    """A redis-server without persistence on a free loopback port."""
    port = free_port()
    server = shutil.which("redis-server")
    if server is None:
        raise SystemExit("redis-server is not installed (Debian: apt-get install redis-server)")
    process = subprocess.Popen(
        [
            server,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(scratch),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    for line in process.stdout:
        if "Ready to accept connections" in line:
            break
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(30)
        process.stdout.close()


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """A throw-away PostgreSQL cluster (fsync off) on a free loopback port."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parts[-3]))
    if not found:
        raise SystemExit("PostgreSQL is not installed (Debian: apt-get install postgresql)")
    bin_dir = Path(found[-1]).parent
    data = Path(tempfile.mkdtemp(prefix="jsonl-session-bench-pg-"))

    def as_server_user(command: list[str]) -> list[str]:
        return ["runuser", "-u", "nobody", "--", *command] if os.geteuid() == 0 else command

    try:
        if os.geteuid() == 0:
            shutil.chown(data, "nobody")
        subprocess.run(
            as_server_user([str(bin_dir / "initdb"), "-D", str(data / "db"), "-U", "postgres", "--auth=trust",
                            "-E", "UTF8", "--no-sync", "--locale=C"]),
            check=True, capture_output=True,
        )  # fmt: skip
        port = free_port()
        options = f"-p {port} -h 127.0.0.1 -k {data} -c fsync=off -c synchronous_commit=off"
        subprocess.run(
            as_server_user([str(bin_dir / "pg_ctl"), "-D", str(data / "db"), "-o", options,
                            "-l", str(data / "log"), "-w", "start"]),
            check=True, capture_output=True,
        )  # fmt: skip
        try:
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            subprocess.run(
                as_server_user([str(bin_dir / "pg_ctl"), "-D", str(data / "db"), "-m", "immediate", "stop"]),
                check=False, capture_output=True,
            )  # fmt: skip
    finally:
        shutil.rmtree(data, ignore_errors=True)


def make_folder(directory: Path, sessions: int, per_session: int) -> int:
    """``sessions`` files of ``per_session`` realistic items each; returns the total item count."""
    folder = SessionDirectory(directory, durable=False)  # setting up, not measured
    for n in range(sessions):
        folder.open(f"conversation-{n:05d}").add_items_sync(item_source.sample(per_session, seed=n))
    return sessions * per_session


async def measure(url: str, folder: Path, scratch: Path, total_items: int, rounds: int = 3) -> dict[str, Any]:
    # Loading the Agents SDK takes seconds: once per process, not part of any copy's speed.
    importlib.import_module("agents.extensions.memory.redis_session")
    importlib.import_module("agents.extensions.memory.sqlalchemy_session")
    source = SessionDirectory(folder)
    figures: dict[str, Any] = {}
    expected = {
        "export": {"copied"},
        "re-run": {"skipped"},
        "import": {"copied"},
        "sdk-copy": {"copied"},
        "append": {"appended", "skipped"},
    }

    async def timed(step: str) -> tuple[float, int]:
        grown = 0
        if step == "append":  # every 10th session gains 10 items: only those are written
            for session_id in source.ids()[::10]:
                source.open(session_id, durable=False).add_items_sync(item_source.sample(10, seed=7))
                grown += 10
        into = scratch / step
        shutil.rmtree(into, ignore_errors=True)  # an empty folder for import and sdk-copy (untimed)
        started = time.perf_counter()
        if step == "import":
            outcomes = await import_all(url, SessionDirectory(into))
        elif step == "sdk-copy":
            outcomes = await copy_through_the_sdk(url, source, into)
        else:
            outcomes = await export_all(source, url)
        seconds = time.perf_counter() - started
        assert {outcome.status for outcome in outcomes} <= expected[step], {o.status for o in outcomes}
        return seconds, len(outcomes)

    def figure(seconds: float, sessions: int, moved: int) -> dict[str, Any]:
        return {
            "seconds": round(seconds, 3),
            "items_per_s": round(moved / seconds),
            "sessions_per_s": round(sessions / seconds, 1),
        }

    for step in ("export", "re-run"):
        figures[step] = figure(*await timed(step), total_items)
        if step == "export":
            await check_through_the_sdk(url, source)
    runs: dict[str, list[tuple[float, int]]] = {"import": [], "sdk-copy": []}
    for n in range(rounds):  # alternating, so that neither always runs first
        for step in ("import", "sdk-copy") if n % 2 == 0 else ("sdk-copy", "import"):
            runs[step].append(await timed(step))
    for step, measured in runs.items():
        seconds = statistics.median(second for second, _ in measured)
        figures[step] = figure(seconds, measured[0][1], total_items)
        figures[step]["rounds_items_per_s"] = [round(total_items / second) for second, _ in measured]
    figures["import_vs_sdk_copy"] = round(figures["sdk-copy"]["seconds"] / figures["import"]["seconds"], 2)
    seconds, sessions = await timed("append")
    figures["append"] = figure(seconds, sessions, len(source.ids()[::10]) * 10)
    return figures


async def copy_through_the_sdk(url: str, source: SessionDirectory, into: Path) -> list[Any]:
    """Every session read by the SDK's own class and copied to a new file by ``copy_session``."""
    from types import SimpleNamespace

    from jsonl_session import JSONLSession
    from jsonl_session.transfer import copy_session, open_backend

    slots = asyncio.Semaphore(8)
    async with open_backend(url) as backend:

        async def one(session_id: str) -> Any:
            async with slots:
                remote = backend.session(session_id)
                try:
                    await copy_session(remote, JSONLSession(session_id, into))
                finally:
                    backend.done(remote)
            return SimpleNamespace(status="copied")

        return list(await asyncio.gather(*(one(session_id) for session_id in source.ids())))


async def mirror_shards(folder: Path, urls: list[str], total_items: int) -> dict[str, Any]:
    """``catch_up_mirror`` of the folder into ``urls`` (one, or several: spread by id)."""
    from jsonl_session.transfer import catch_up_mirror

    started = time.perf_counter()
    outcomes = await catch_up_mirror(folder, urls[0] if len(urls) == 1 else urls)
    seconds = time.perf_counter() - started
    assert {outcome.status for outcome in outcomes} == {"created"}, {o.status for o in outcomes}
    return {
        "seconds": round(seconds, 3),
        "items_per_s": round(total_items / seconds),
        "sessions_per_s": round(len(outcomes) / seconds, 1),
    }


async def check_through_the_sdk(url: str, source: SessionDirectory) -> None:
    """Every 50th session read back through the SDK's own class equals the file (not timed)."""
    from jsonl_session.transfer.backends import open_url

    for session_id in source.ids()[::50]:
        async with open_url(url, session_id) as remote:
            assert await remote.get_items() == source.open(session_id).get_items_sync(), session_id


def report(result: dict[str, Any]) -> str:
    lines = [
        f"{result['sessions']} sessions x {result['items_per_session']} items",
        f"{'backend':<20}{'step':<10}{'seconds':>10}{'items/s':>10}{'sessions/s':>12}",
    ]
    for backend, steps in result["backends"].items():
        for step, figures in steps.items():
            if not isinstance(figures, dict):
                lines.append(f"{backend:<20}{step}: {figures}")
                continue
            lines.append(
                f"{backend:<20}{step:<10}{figures['seconds']:>10.2f}{figures['items_per_s']:>10,}"
                f"{figures['sessions_per_s']:>12,.1f}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="export --all / import --all throughput to Redis and PostgreSQL."
    )
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--items", type=int, default=100, help="items per session (default 100)")
    parser.add_argument("--backends", default="redis,postgresql", help="comma-separated (default: both)")
    outputs.add_options(parser, quick="50 sessions x 20 items: does it work?")
    parser.add_argument(
        "--rounds", type=int, default=3, help="alternating rounds of import and sdk-copy (default 3)"
    )
    parser.add_argument(
        "--shards", action="store_true", help="also the mirror's catch-up into 1 and 2 PostgreSQL servers"
    )
    args = parser.parse_args(argv)
    sessions, per_session = (50, 20) if args.quick else (args.sessions, args.items)
    result: dict[str, Any] = {
        "when": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}",
        "openai_agents": version("openai-agents"),
        "load_before": [round(x, 2) for x in os.getloadavg()],
        "sessions": sessions,
        "items_per_session": per_session,
        "total_items": sessions * per_session,
        "backends": {},
    }
    with tempfile.TemporaryDirectory(prefix="jsonl-session-bench-") as tmp:
        scratch = Path(tmp)
        make_folder(scratch / "sessions", sessions, per_session)
        for backend in args.backends.split(","):
            server = redis_server(scratch) if backend == "redis" else postgres_server()
            with server as url:
                result["backends"][backend] = asyncio.run(
                    measure(url, scratch / "sessions", scratch, sessions * per_session, args.rounds)
                )
        if args.shards:
            with postgres_server() as first, postgres_server() as second:
                total = sessions * per_session
                result["backends"]["postgresql-mirror"] = {
                    "mirror x1": asyncio.run(mirror_shards(scratch / "sessions", [first], total)),
                }
            with postgres_server() as first, postgres_server() as second:
                result["backends"]["postgresql-mirror"]["mirror x2"] = asyncio.run(
                    mirror_shards(scratch / "sessions", [first, second], total)
                )
    result["load_after"] = [round(x, 2) for x in os.getloadavg()]
    print(report(result))
    print(f"written to {outputs.write_json(args, 'transfer.json', result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
