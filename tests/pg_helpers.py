"""A real PostgreSQL server for the tests: initdb + pg_ctl in a temporary data directory.

The Debian package puts the server in ``/usr/lib/postgresql/<version>/bin`` (not on PATH).
PostgreSQL refuses to run as root, so as root the cluster belongs to ``nobody``; otherwise to
the current user. It listens on a free loopback port only, trusts local connections, keeps
nothing (fsync off, data dir removed afterwards), and is stopped when
the ``postgres_url`` fixture (tests/conftest.py) ends.
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from cli_helpers import free_port

REQUIRE = "JSONL_SESSION_REQUIRE_POSTGRES"


def server_bin() -> Path | None:
    """The newest installed PostgreSQL's bin directory, or None."""
    found = glob.glob("/usr/lib/postgresql/*/bin/pg_ctl")
    if not found:
        on_path = shutil.which("pg_ctl")
        return Path(on_path).parent if on_path else None
    return Path(
        max(found, key=lambda path: int(Path(path).parts[-3]) if Path(path).parts[-3].isdigit() else 0)
    ).parent


def _as_server_user(command: list[str]) -> list[str]:
    return ["runuser", "-u", "nobody", "--", *command] if os.geteuid() == 0 else command


@contextmanager
def postgres_server() -> Iterator[str]:
    """``postgresql+asyncpg://postgres@127.0.0.1:<port>/postgres`` on a fresh, throw-away cluster.

    Skipped when PostgreSQL is not installed, unless ``JSONL_SESSION_REQUIRE_POSTGRES=1``
    (set by ``.ci/run``), in which case the missing server is a failure.
    """
    pytest.importorskip("asyncpg", reason="asyncpg (extra 'postgresql') is not installed")
    bin_dir = server_bin()
    if bin_dir is None:
        message = "PostgreSQL is not installed (Debian: apt-get install postgresql)"
        if os.environ.get(REQUIRE) == "1":
            pytest.fail(f"{message} and {REQUIRE}=1")
        pytest.skip(message)
    data = Path(tempfile.mkdtemp(prefix="jsonl-session-pg-"))  # in /tmp: reachable by nobody
    try:
        if os.geteuid() == 0:
            shutil.chown(data, "nobody")
        subprocess.run(
            _as_server_user(
                [
                    str(bin_dir / "initdb"),
                    "-D",
                    str(data / "db"),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--no-sync",
                    "--locale=C",
                ]
            ),
            check=True,
            capture_output=True,
            timeout=120,
        )
        port = _start(bin_dir, data)
        try:
            yield f"postgresql+asyncpg://postgres@127.0.0.1:{port}/postgres"
        finally:
            subprocess.run(
                _as_server_user(
                    [str(bin_dir / "pg_ctl"), "-D", str(data / "db"), "-m", "immediate", "-w", "stop"]
                ),
                check=False,
                capture_output=True,
                timeout=60,
            )
    finally:
        shutil.rmtree(data, ignore_errors=True)


def _start(bin_dir: Path, data: Path) -> int:
    """Start the server on a free port (retrying if another process took it first); return the port."""
    for _ in range(5):
        port = free_port()
        options = (
            f"-p {port} -h 127.0.0.1 -k {data} -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        started = subprocess.run(
            _as_server_user(
                [
                    str(bin_dir / "pg_ctl"),
                    "-D",
                    str(data / "db"),
                    "-o",
                    options,
                    "-l",
                    str(data / "server.log"),
                    "-w",
                    "-t",
                    "60",
                    "start",
                ]
            ),
            check=False,
            capture_output=True,
            timeout=120,
        )
        if started.returncode == 0:
            return port
    log = (data / "server.log").read_text(errors="replace")[-2000:] if (data / "server.log").exists() else ""
    pytest.fail(f"PostgreSQL did not start on a free port after 5 tries:\n{log}")


def recreate_database(url: str, database: str) -> None:
    """Drop ``database`` on the server of ``url`` if it exists, and create it empty."""
    import asyncio
    import importlib

    asyncpg = importlib.import_module("asyncpg")  # untyped

    async def create() -> None:
        connection = await asyncpg.connect(url)
        try:
            await connection.execute(f'DROP DATABASE IF EXISTS "{database}"')
            await connection.execute(f'CREATE DATABASE "{database}"')
        finally:
            await connection.close()

    asyncio.run(create())


_databases = itertools.count()


def new_postgres_database(server_url: str) -> str:
    """A new, empty database on the server of ``server_url``; its ``postgresql://`` URL."""
    plain = server_url.replace("postgresql+asyncpg", "postgresql")
    name = f"db_{next(_databases)}_{int(time.time() * 1000) % 10**8}"
    recreate_database(plain, name)
    return plain.rsplit("/", 1)[0] + "/" + name
