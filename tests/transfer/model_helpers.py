"""What the mirror's model test needs besides the machine: servers it may restart, raw snapshots
of a database, what the SDK's own classes read, and the processes it kills or races.

A snapshot is everything a database holds, by owner: the session id a Redis key or an SQL row
belongs to in the SDK's layout. The test splits it into the folder's sessions (compared item
for item through ``RedisSession``/``SQLAlchemySession``) and everything else, which a mirror
without ``delete`` must leave byte for byte as it was.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import cli_env, skip_unless_required, start_redis_server
from test_mirror_outages import Postgres, started_postgres

from jsonl_session.core.names import filename_for

SDK_PREFIX = b"agents:session:"  # RedisSession's default key_prefix and its ":" separator
REDIS_SUFFIXES = (b":messages", b":counter")

Snapshot = dict[Any, Any]


# -- servers that a rule may restart (one per module) ---------------------------------------------


class RedisServer:
    """A redis-server without persistence on a fixed port: a restart brings it back empty."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.process, self.port = start_redis_server(folder)
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def restart(self) -> None:
        self.stop()
        self.process, _ = start_redis_server(self.folder, port=self.port)

    def stop(self) -> None:
        from cli_helpers import stop_process

        stop_process(self.process)


def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Generator[RedisServer, None, None]:
    if shutil.which("redis-server") is None:
        skip_unless_required("redis-server is not installed", "REDIS")
    server = RedisServer(tmp_path_factory.mktemp("model-redis"))
    try:
        yield server
    finally:
        server.stop()


class PostgresServer(Postgres):
    """A throw-away cluster (see ``test_mirror_outages.Postgres``) that a rule stops and starts."""

    def restart(self) -> None:
        self.stop()
        self.start()


def postgres_server() -> Generator[PostgresServer, None, None]:
    yield from started_postgres(PostgresServer)


# -- which ids a backend cannot hold exactly --------------------------------------------------------


def hostile(kind: str, session_id: str) -> bool:
    """Whether ``session_id`` cannot be stored exactly by the SDK's layout on this backend.

    Redis: ``<id>:messages`` and ``<id>:counter`` name another session's keys. PostgreSQL:
    a text column cannot hold a NUL byte.
    """
    if kind == "redis":
        return session_id.encode().endswith(REDIS_SUFFIXES)
    return "\x00" in session_id


# -- raw snapshots ----------------------------------------------------------------------------------


async def redis_snapshot(client: Any) -> Snapshot:
    """Every key: ``{key: (type, value)}`` (bytes throughout)."""
    found: Snapshot = {}
    async for key in client.scan_iter(count=1000):
        kind = (await client.type(key)).decode()
        if kind == "hash":
            value: Any = sorted((await client.hgetall(key)).items())
        elif kind == "list":
            value = await client.lrange(key, 0, -1)
        elif kind == "string":
            value = await client.get(key)
        else:
            value = await client.dump(key)
        found[key] = (kind, value)
    return found


def redis_owner(key: bytes) -> str | None:
    """The session whose SDK key this is (``P:<id>``, ``P:<id>:messages``, ``P:<id>:counter``)."""
    if not key.startswith(SDK_PREFIX):
        return None
    rest = key[len(SDK_PREFIX) :]
    for suffix in REDIS_SUFFIXES:
        if rest.endswith(suffix):
            rest = rest[: -len(suffix)]
            break
    return rest.decode(errors="surrogateescape")


def redis_sessions(snapshot: Snapshot) -> set[str]:
    """The ids the snapshot holds as the SDK stores sessions: a message list, or a hash naming itself."""
    ids = set()
    for key, (kind, value) in snapshot.items():
        if not key.startswith(SDK_PREFIX):
            continue
        rest = key[len(SDK_PREFIX) :]
        if kind == "list" and rest.endswith(b":messages"):
            ids.add(rest[: -len(b":messages")].decode(errors="surrogateescape"))
        elif kind == "hash" and (b"session_id", rest) in value:
            ids.add(rest.decode(errors="surrogateescape"))
    return {session_id for session_id in ids if _could_be_a_file(session_id)}


def _could_be_a_file(session_id: str) -> bool:
    try:
        filename_for(session_id)
    except ValueError:
        return False
    return True


async def postgres_snapshot(connection: Any) -> Snapshot:
    """Every row of the SDK's two tables: ``{(table, key): row}``; owner is ``key[1]``."""
    found: Snapshot = {}
    for row in await connection.fetch("SELECT session_id, created_at, updated_at FROM agent_sessions"):
        found[("agent_sessions", row["session_id"])] = tuple(row)
    for row in await connection.fetch("SELECT id, session_id, message_data, created_at FROM agent_messages"):
        found[("agent_messages", row["session_id"], row["id"])] = tuple(row)
    return found


def owner(kind: str, key: Any) -> str | None:
    return redis_owner(key) if kind == "redis" else str(key[1])


def outside(kind: str, snapshot: Snapshot, inside: set[str]) -> Snapshot:
    """The part of ``snapshot`` that belongs to no session of ``inside``."""
    return {key: value for key, value in snapshot.items() if owner(kind, key) not in inside}


def after_delete(kind: str, before: Snapshot) -> Snapshot:
    """What a ``delete`` catch-up leaves of ``before`` (the outside): everything but stored sessions."""
    if kind == "redis":
        gone = redis_sessions(before)
    else:
        gone = {str(key[1]) for key in before if _could_be_a_file(str(key[1]))}
    return {key: value for key, value in before.items() if owner(kind, key) not in gone}


# -- a mirror killed mid-catch-up -------------------------------------------------------------------

# Catches up through the public API; once ``stall_at`` sessions are compared it says so on stdout
# and stops its event loop (sessions in flight keep their transactions open) until killed.
_STALLING_MIRROR = r"""
import asyncio, sys, time
from jsonl_session.transfer import catch_up_mirror
folder, url, stall_at = sys.argv[1], sys.argv[2], int(sys.argv[3])

def progress(done, total):
    if done >= min(stall_at, total):
        print("stalled", flush=True)
        time.sleep(3600)  # the parent kills this process now

asyncio.run(catch_up_mirror(folder, url, progress=progress))
print("finished", flush=True)
"""


def kill_mid_catch_up(folder: Path, url: str, stall_at: int) -> str:
    """Start a mirror, ``kill -9`` it once it has compared ``stall_at`` sessions; its last word."""
    child = subprocess.Popen(
        [sys.executable, "-c", _STALLING_MIRROR, str(folder), url, str(stall_at)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
    )
    try:
        assert child.stdout is not None
        said = child.stdout.readline().strip()  # blocks until it stalls (or ends)
        child.kill()
        _, err = child.communicate(timeout=60)
        assert said in ("stalled", "finished"), err
        return said
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def mirror_once_process(folder: Path, url: str, *extra: str) -> subprocess.Popen[str]:
    """``jsonl-session mirror --once --json`` in its own process (started, not waited for)."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jsonl_session",
            "mirror",
            "--once",
            "--json",
            "--to",
            url,
            "--dir",
            str(folder),
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
    )
