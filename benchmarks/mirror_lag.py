"""Mirror lag: from ``add_items`` returning in one process to the item readable through the SDK in another.

Usage (from the repository root)::

    python benchmarks/mirror_lag.py --update-results   # the committed figures (~2 min)
    python benchmarks/mirror_lag.py --quick            # a quick check (~30 s)

prints the figures and writes ``mirror_lag.json`` into ``benchmarks/output/`` (or ``--out DIR``;
``--update-results`` rewrites ``benchmarks/results/mirror_lag.json``).

What is measured, for PostgreSQL and for Redis (throw-away servers started by
``benchmarks/transfer.py``'s helpers, persistence off):

* a **mirror** process, ``jsonl-session mirror --to URL`` (the command line, as deployed), follows
  the folder;
* a **writer** process runs 20 conversations, each writing one turn (a user and an assistant
  item, one durable ``add_items``) 5 times a second, with a random phase; as each
  ``add_items`` returns it notes ``time.monotonic_ns()`` (one clock for all processes) and tells
  the reader;
* a **reader** process, told which item to expect (every 4th turn of each conversation: polling
  through the SDK costs CPU, which would slow down what it measures), polls that session through
  the SDK's own ``SQLAlchemySession`` / ``RedisSession`` (``get_items(limit=1)``, every 1 ms)
  until the turn's last item (or a later one) is there, and notes the time.

The lag is the difference. The first 2 s of writing are left out (warm-up). Targets: p50 <= 20 ms,
p99 <= 100 ms. The reader's 1 ms polling adds up to 1 ms (and its own query time) to each
sample; everything runs on the same machine, so the processes share its cores.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(1, str(HERE))

import outputs  # benchmarks/outputs.py
from transfer import postgres_server, redis_server  # benchmarks/transfer.py: throw-away servers

TARGETS = {"p50_ms": 20.0, "p99_ms": 100.0}
WARM_UP = 2.0
SAMPLE_EVERY = 4
"""The reader waits for every 4th turn of each conversation (spread over them): polling through
the SDK costs CPU, and polling for all 100 turns a second would slow down what it measures."""


def _writer(directory: str, conversations: int, rate: float, seconds: float, conn: Connection) -> None:
    """``conversations`` tasks, each one turn every ``1 / rate`` s; (session, turn, when) to the reader."""
    from jsonl_session import JSONLSession

    async def converse(n: int) -> None:
        session = JSONLSession(f"conversation-{n:02d}", directory)  # durable, the default
        rng = random.Random(n)
        await asyncio.sleep(rng.uniform(0, 1 / rate))
        end = time.monotonic() + seconds
        turn = 0
        while time.monotonic() < end:
            turn += 1
            started = time.monotonic()
            await session.add_items(
                [
                    {"role": "user", "content": f"question {turn} in {session.session_id}"},
                    {"role": "assistant", "content": f"answer {turn}"},
                ]
            )
            returned = time.monotonic_ns()
            if (turn + n) % SAMPLE_EVERY == 0:  # the reader's polling is measured, not the writer
                conn.send((session.session_id, turn, returned))
            await asyncio.sleep(max(0.0, 1 / rate - (time.monotonic() - started)))

    async def main() -> None:
        await asyncio.gather(*(converse(n) for n in range(conversations)))

    asyncio.run(main())
    conn.send(None)


def _reader(url: str, conn: Connection, out: Connection) -> None:
    """Poll each expected item through the SDK's own session until it is there; send the lags."""
    import importlib

    async def main() -> list[tuple[float, float]]:
        loop = asyncio.get_running_loop()
        inbox: asyncio.Queue[Any] = asyncio.Queue()
        threading.Thread(target=lambda: _forward(conn, loop, inbox), daemon=True).start()
        if url.startswith("redis"):
            redis_session = importlib.import_module("agents.extensions.memory.redis_session").RedisSession
            from redis.asyncio import Redis

            client = Redis.from_url(url)

            def session_for(session_id: str) -> Any:
                return redis_session(session_id, redis_client=client)
        else:
            sql_session = importlib.import_module(
                "agents.extensions.memory.sqlalchemy_session"
            ).SQLAlchemySession
            from sqlalchemy.ext.asyncio import create_async_engine

            engine = create_async_engine(
                url.replace("postgresql://", "postgresql+asyncpg://", 1), pool_size=25
            )

            def session_for(session_id: str) -> Any:
                return sql_session(session_id, engine=engine)

        sessions: dict[str, Any] = {}
        lags: list[tuple[float, float]] = []
        tasks = set()
        first: float | None = None

        async def wait_for(session_id: str, turn: int, returned_ns: int) -> None:
            session = sessions.setdefault(session_id, session_for(session_id))
            while True:  # this turn's answer, or a later one (written in order: this one is there)
                items = await session.get_items(limit=1)
                if (
                    items
                    and items[-1]["role"] == "assistant"
                    and int(items[-1]["content"].split()[1]) >= turn
                ):
                    break
                await asyncio.sleep(0.001)
            seen = time.monotonic_ns()
            lags.append((returned_ns / 1e9, (seen - returned_ns) / 1e6))

        while True:
            message = await inbox.get()
            if message is None:  # the writer is done
                break
            if first is None:
                first = message[2] / 1e9
            task = asyncio.create_task(wait_for(*message))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        await asyncio.wait_for(asyncio.gather(*tasks), 60)
        await (client.aclose() if url.startswith("redis") else engine.dispose())
        return [(when - (first or 0), lag) for when, lag in lags]

    out.send(asyncio.run(main()))


def _forward(conn: Connection, loop: asyncio.AbstractEventLoop, inbox: asyncio.Queue[Any]) -> None:
    while True:
        message = conn.recv()
        loop.call_soon_threadsafe(inbox.put_nowait, message)
        if message is None:
            return


def measure_one(url: str, conversations: int, rate: float, seconds: float) -> dict[str, Any]:
    directory = Path(tempfile.mkdtemp(prefix="jsonl-session-mirror-lag-"))
    mirror = subprocess.Popen(
        [sys.executable, "-m", "jsonl_session", "mirror", "--to", url, "--dir", str(directory)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert mirror.stderr is not None
        line = mirror.stderr.readline()
        if not line.startswith("caught up"):
            raise SystemExit(f"the mirror did not start: {line}{mirror.stderr.read()}")
        context = multiprocessing.get_context("spawn")
        to_reader, from_writer = context.Pipe()
        results, reader_end = context.Pipe()
        reader = context.Process(target=_reader, args=(url, from_writer, reader_end))
        reader.start()
        time.sleep(3)  # the reader loads the SDK
        writer = context.Process(
            target=_writer, args=(str(directory), conversations, rate, seconds, to_reader)
        )
        writer.start()
        writer.join()
        lags: list[tuple[float, float]] = results.recv() if results.poll(120) else []
        reader.join(30)
    finally:
        mirror.terminate()
        mirror.wait(30)
        shutil.rmtree(directory, ignore_errors=True)
    measured = [lag for when, lag in lags if when >= WARM_UP]
    if not measured:
        raise SystemExit("no samples")
    return outputs.latency_summary(measured)


def measure(conversations: int, rate: float, seconds: float) -> dict[str, Any]:
    from importlib.metadata import version

    result: dict[str, Any] = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}",
        "versions": {name: version(name) for name in ("openai-agents", "sqlalchemy", "asyncpg", "redis")},
        "settings": {"conversations": conversations, "turns_per_second_each": rate, "seconds": seconds},
        "targets": TARGETS,
        "load_before": [round(x, 2) for x in os.getloadavg()],  # the machine is shared: say how busy
    }
    scratch = Path(tempfile.mkdtemp(prefix="jsonl-session-mirror-lag-redis-"))
    try:
        with postgres_server() as url:
            result["postgresql"] = measure_one(url, conversations, rate, seconds)
        with redis_server(scratch) as url:
            result["redis"] = measure_one(url, conversations, rate, seconds)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    result["load_after"] = [round(x, 2) for x in os.getloadavg()]
    result["meets_targets"] = all(
        result[backend][key] <= target
        for backend in ("postgresql", "redis")
        for key, target in TARGETS.items()
    )
    return result


def report(result: dict[str, Any]) -> str:
    settings = result["settings"]
    title = (
        f"mirror lag: add_items returned in a writer -> readable through the SDK in another process "
        f"({settings['conversations']} conversations x {settings['turns_per_second_each']:g} turns/s, "
        f"{settings['seconds']:g} s)"
    )
    lines = [
        title,
        f"{'':11} {'samples':>8} {'p50':>9} {'p90':>9} {'p99':>9} {'max':>9}",
    ]
    for backend in ("postgresql", "redis"):
        figures = result[backend]
        lines.append(
            f"{backend:11} {figures['samples']:>8} {figures['p50_ms']:>6.2f} ms {figures['p90_ms']:>6.2f} ms "
            f"{figures['p99_ms']:>6.2f} ms {figures['max_ms']:>6.2f} ms"
        )
    verdict = "met" if result["meets_targets"] else "NOT met"
    lines.append(f"targets p50 <= {TARGETS['p50_ms']:g} ms, p99 <= {TARGETS['p99_ms']:g} ms: {verdict}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Mirror lag across processes, PostgreSQL and Redis.")
    parser.add_argument("--conversations", type=int, default=20)
    parser.add_argument("--rate", type=float, default=5.0, help="turns per second per conversation")
    parser.add_argument("--seconds", type=float, default=30.0, help="how long the writer writes")
    outputs.add_options(parser, quick="8 s of writing per backend")
    args = parser.parse_args(argv)
    result = measure(args.conversations, args.rate, 8.0 if args.quick else args.seconds)
    print(report(result))
    print(f"written to {outputs.write_json(args, 'mirror_lag.json', result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
