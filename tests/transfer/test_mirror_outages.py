"""The mirror across outages: 50 ``kill -9``s of it while writers run, and a database restarted.

Writers are other processes. Some only append (``grow-*``): at any moment the database must
hold a prefix of each of those sessions, never an item twice, never one skipped. The others
append, pop, clear, rewrite, delete and fork (``churn-*``). Once the writers stop and a mirror
has caught up, the SDK's own classes, in another process, read exactly what the files hold.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from cli_helpers import cli_env, flush_redis, free_port, skip_unless_required
from pg_helpers import new_postgres_database, server_bin
from test_mirror import (
    Running,
    equal_soon,
    folder_view,
    sdk_view,
    sdk_view_elsewhere,
    session,
)

pytestmark = pytest.mark.sdk

_WRITER = r"""
import os, random, sys, time
from jsonl_session import SessionDirectory
folder, seed, kind, stop = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
rng = random.Random(seed)
sessions = SessionDirectory(folder, durable=False)
n = 0
while not os.path.exists(stop):
    n += 1
    item = {"role": rng.choice(["user", "assistant"]), "content": f"{seed}-{n}"}
    if kind == "grow":  # append only
        sessions.open(f"grow-{seed}-{rng.randrange(3)}").add_items_sync([item] * rng.choice([1, 1, 2]))
    else:
        session_id = f"churn-{rng.randrange(4)}"
        session = sessions.open(session_id)
        roll = rng.random()
        if roll < 0.5:
            session.add_items_sync([item])
        elif roll < 0.65:
            session.pop_item_sync()
        elif roll < 0.72:
            session.clear_session_sync()
        elif roll < 0.85:
            session.replace_items_sync(session.get_items_sync()[: rng.randrange(4)] + [item])
        elif roll < 0.93:
            sessions.delete(session_id)
        else:
            target = f"churn-{rng.randrange(4)}"
            if target != session_id and sessions.exists(session_id) and not sessions.exists(target):
                sessions.fork(session_id, target, at=rng.randrange(3))
    time.sleep(rng.uniform(0.002, 0.02))
"""


class Writers:
    """Writer processes (two append-only, one churning) until the block ends."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.stop = directory.parent / "stop-writers"
        self.processes: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> Writers:  # noqa: PYI034  (never subclassed)
        self.directory.mkdir(parents=True, exist_ok=True)
        for seed, kind in ((1, "grow"), (2, "grow"), (3, "churn")):
            command = [sys.executable, "-c", _WRITER, str(self.directory), str(seed), kind, str(self.stop)]
            self.processes.append(subprocess.Popen(command, env=cli_env()))
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.touch()
        for process in self.processes:
            try:
                assert process.wait(30) == 0
            finally:
                process.kill()


def assert_prefixes(directory: Path, url: str) -> None:
    """Each append-only session in the database is a prefix of its file (read after it)."""
    stored = sdk_view(url)
    files = folder_view(directory)
    for session_id, items in stored.items():
        if session_id.startswith("grow-"):
            assert files[session_id][: len(items)] == items, f"{session_id}: not a prefix of the file"


def _mirror_process(directory: Path, url: str) -> subprocess.Popen[bytes]:
    command = [
        sys.executable,
        "-m",
        "jsonl_session",
        "mirror",
        "--to",
        url,
        "--delete",
        "--dir",
        str(directory),
    ]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=cli_env())


@pytest.mark.slow
def test_fifty_kill_9s_of_each_mirror_neither_lose_nor_duplicate_an_item(
    tmp_path: Path,
    postgres_url: str,
    redis_url: str,
) -> None:
    """Two mirrors of one folder, to PostgreSQL and to Redis, each killed 50 times at random points."""
    directory = tmp_path / "sessions"
    flush_redis(redis_url)
    urls = [new_postgres_database(postgres_url), redis_url]
    rng = random.Random(25)
    with Writers(directory):
        for _ in range(50):
            mirrors = [_mirror_process(directory, url) for url in urls]
            for mirror in rng.sample(mirrors, 2):  # start-up, catch-up or following: any point
                time.sleep(rng.uniform(0.1, 0.45))
                mirror.send_signal(signal.SIGKILL)
                mirror.wait()
            for url in urls:
                assert_prefixes(directory, url)
        mirrors = [_mirror_process(directory, url) for url in urls]  # the ones that stay
        time.sleep(1)  # while the writers go on
    try:
        for url in urls:
            equal_soon(directory, url, timeout=30)
    finally:
        for mirror in mirrors:
            mirror.send_signal(signal.SIGTERM)  # stops once what the files hold is mirrored: exit 0
            assert mirror.wait(30) == 0
    files = folder_view(directory)
    assert any(session_id.startswith("grow-") for session_id in files)
    for url in urls:
        assert sdk_view_elsewhere(url, sorted(files)) == files


# -- a database stopped and started again ----------------------------------------------------------


class Postgres:
    """A throw-away PostgreSQL cluster that can be stopped and started again on the same port."""

    def __init__(self, bin_dir: Path, data: Path) -> None:
        self.bin_dir, self.data, self.port = bin_dir, data, free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *command: str) -> None:
        full = [str(self.bin_dir / command[0]), *command[1:]]
        if os.geteuid() == 0:
            full = ["runuser", "-u", "nobody", "--", *full]
        subprocess.run(full, check=True, capture_output=True, timeout=120)

    def init(self) -> None:
        self._run(
            "initdb",
            "-D",
            str(self.data / "db"),
            "-U",
            "postgres",
            "--auth=trust",
            "--no-sync",
            "-E",
            "UTF8",
            "--locale=C",
        )

    def start(self) -> None:
        options = f"-p {self.port} -h 127.0.0.1 -k {self.data} -c fsync=off -c synchronous_commit=off"
        log = str(self.data / "server.log")
        self._run("pg_ctl", "-D", str(self.data / "db"), "-o", options, "-l", log, "-w", "-t", "60", "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data / "db"), "-m", "immediate", "-w", "stop")


P = TypeVar("P", bound=Postgres)


def started_postgres(kind: type[P]) -> Iterator[P]:
    """A cluster of ``kind`` (``Postgres`` or a subclass) initialised, started, and on exit
    stopped (if it still runs) and removed; skipped without the server or asyncpg."""
    pytest.importorskip("asyncpg", reason="asyncpg (extra 'postgresql') is not installed")
    bin_dir = server_bin()
    if bin_dir is None:
        skip_unless_required("PostgreSQL is not installed", "POSTGRES")
    data = Path(tempfile.mkdtemp(prefix="jsonl-session-pg-"))
    if os.geteuid() == 0:
        shutil.chown(data, "nobody")
    server = kind(bin_dir, data)
    try:
        server.init()
        server.start()
        yield server
    finally:
        try:
            server.stop()
        except subprocess.CalledProcessError:
            pass  # already stopped
        shutil.rmtree(data, ignore_errors=True)


@pytest.fixture
def restartable_postgres() -> Iterator[Postgres]:
    yield from started_postgres(Postgres)


class Redis:
    """A redis-server without persistence (it restarts empty), on a fixed port."""

    def __init__(self, directory: Path) -> None:
        self.directory, self.port = directory, free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        server = shutil.which("redis-server")
        assert server is not None
        command = [
            server,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ]
        self.process = subprocess.Popen(
            [*command, "--dir", str(self.directory)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if "Ready to accept connections" in line:
                return
        raise AssertionError("redis-server did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(10)
            assert self.process.stdout is not None
            self.process.stdout.close()
            self.process = None


@pytest.fixture
def restartable_redis(tmp_path: Path) -> Iterator[Redis]:
    if shutil.which("redis-server") is None:
        skip_unless_required("redis-server is not installed", "REDIS")
    server = Redis(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["postgres", "redis"])
def test_a_database_stopped_and_started_mid_stream_is_caught_up(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    server = request.getfixturevalue(f"restartable_{kind}")
    directory = tmp_path / "sessions"
    for n in range(5):  # sessions nobody writes after the restart: a Redis restarted empty lacks them
        session(directory, f"idle-{n}").add_items_sync([{"role": "user", "content": f"idle {n}"}])
    with Running(directory, server.url, delete=True) as mirror:
        with Writers(directory):
            time.sleep(1)
            server.stop()
            time.sleep(1.5)  # the writers go on meanwhile
            server.start()
            time.sleep(1.5)
        equal_soon(directory, server.url, timeout=30)
    assert any("unavailable" in notice for notice in mirror.notices), mirror.notices
    assert any("reachable again" in notice for notice in mirror.notices), mirror.notices
    files = folder_view(directory)
    assert sdk_view_elsewhere(server.url, sorted(files)) == files


def test_a_redis_restarted_empty_while_the_folder_is_quiet_is_filled_again(
    tmp_path: Path, restartable_redis: Redis
) -> None:
    """Nothing is written meanwhile, so no write fails: the mirror's own look at the server
    (twice a second: reachable, and the same ``run_id``) finds it restarted and compares everything."""
    directory = tmp_path / "sessions"
    for n in range(4):
        session(directory, f"quiet-{n}").add_items_sync([{"role": "user", "content": f"quiet {n}"}])
    with Running(directory, restartable_redis.url) as mirror:
        equal_soon(directory, restartable_redis.url)
        restartable_redis.stop()
        restartable_redis.start()
        equal_soon(directory, restartable_redis.url, timeout=30)
    assert any("catching up" in notice for notice in mirror.notices), mirror.notices
