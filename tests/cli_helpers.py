"""Helpers for the command-line tests: run the real console script, and a real redis-server.

Every CLI test runs ``python -m jsonl_session`` (or the installed ``jsonl-session`` script)
as a subprocess on real files, so argument parsing, exit codes, stderr and stdout are
exactly what a user sees.
"""

from __future__ import annotations

import contextlib
import os
import pty
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest

SCRIPT = Path(sys.executable).with_name("jsonl-session")


@dataclass
class Result:
    code: int
    out: str
    err: str


def cli_env(**extra: str) -> dict[str, str]:
    """The test process's environment without anything that would change the CLI's behaviour."""
    env = {key: value for key, value in os.environ.items() if key not in ("JSONL_SESSION_DIR", "NO_COLOR")}
    env.update(extra)
    return env


def run(
    directory: Path | None,
    *args: str,
    input: str | bytes | None = None,
    env: dict[str, str] | None = None,
    script: bool = False,
    timeout: float = 60,
) -> Result:
    """Run one command (``--dir directory`` appended when given) and capture its outcome."""
    command: list[str] = [str(SCRIPT)] if script else [sys.executable, "-m", "jsonl_session"]
    command += list(args)
    if directory is not None:
        command += ["--dir", str(directory)]
    data = input.encode() if isinstance(input, str) else input
    completed = subprocess.run(
        command,
        input=data if data is not None else b"",
        capture_output=True,
        check=False,
        env=env or cli_env(),
        timeout=timeout,
    )
    return Result(completed.returncode, completed.stdout.decode(), completed.stderr.decode())


def write_lines(path: Path, lines: Sequence[str | bytes], *, end: bytes = b"\n") -> Path:
    """Write raw lines to a session file (bypassing the library, to make broken files)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = b"\n".join(line.encode() if isinstance(line, str) else line for line in lines)
    path.write_bytes(data + (end if lines else b""))
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def skip_unless_required(message: str, component: str) -> NoReturn:
    """Skip a test whose real component is missing, or fail it when ``JSONL_SESSION_REQUIRE_<component>=1``
    (``.ci/run`` sets those: in CI a missing component is a failure, never a silent skip)."""
    variable = f"JSONL_SESSION_REQUIRE_{component}"
    if os.environ.get(variable) == "1":
        pytest.fail(f"{message} and {variable}=1")
    pytest.skip(message)


def strace_or_skip() -> str:
    """The ``strace`` that tests observe system calls with; skipped (failed in CI, which sets
    ``JSONL_SESSION_REQUIRE_STRACE=1``) when it is missing or cannot trace here."""
    strace = shutil.which("strace")
    if strace is None:
        skip_unless_required("strace is not installed (Debian: apt-get install strace)", "STRACE")
    if subprocess.run([strace, "-qq", "-o", os.devnull, "true"], check=False).returncode != 0:
        skip_unless_required("strace cannot trace here (ptrace is not allowed)", "STRACE")
    return strace


def flush_redis(url: str) -> None:
    """Empty the Redis database at ``url``, so a test starts from nothing on a shared server."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        client.flushdb()
    finally:
        client.close()


def start_redis_server(
    folder: Path, *, cluster: bool = False, port: int | None = None
) -> tuple[subprocess.Popen[str], int]:
    """Start redis-server on a free loopback port; return it once it accepts connections.

    A cluster node also binds a bus port, by default its own port + 10000: above 55535 that is
    no port at all and the server exits (a CI run drew 59025), so the bus gets a free port too.
    """
    server = shutil.which("redis-server")
    if server is None:
        skip_unless_required("redis-server is not installed (Debian: apt-get install redis-server)", "REDIS")
    chosen = port
    for _ in range(5):  # a port may be taken between choosing and binding it: retry
        port = chosen or free_port()
        command = [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        command += ["--dir", str(folder), "--loglevel", "notice"]
        if cluster:
            command += ["--cluster-enabled", "yes", "--cluster-port", str(free_port())]
            command += ["--cluster-config-file", str(folder / f"nodes-{port}.conf")]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            ready = _wait_ready(process)
        except BaseException:
            stop_process(process)
            raise
        if ready:
            return process, port
        stop_process(process)
    pytest.fail("redis-server did not start on a free port after 5 tries")


def _wait_ready(process: subprocess.Popen[str]) -> bool:
    """Read the server's log until it accepts connections (True) or exits (False)."""
    assert process.stdout is not None
    for line in process.stdout:
        if "Ready to accept connections" in line:
            return True
    return False


def stop_process(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    if process.stdout is not None:
        process.stdout.close()


def run_on_terminal(command: list[str], **env: str) -> str:
    """Run ``command`` with stdout on a pseudo-terminal; return everything it printed."""
    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen(command, stdout=follower, stderr=subprocess.PIPE, env=cli_env(**env))
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert process.wait(timeout=60) == 0, process.stderr.read() if process.stderr else ""
        if process.stderr:
            process.stderr.close()
    finally:
        os.close(leader)
    return b"".join(chunks).decode()


def open_by(pid: int, path: Path) -> bool:
    """Whether process ``pid`` has ``path`` open (its descriptors, as /proc shows them): a
    command has reached a session, and waits for its lock if another process holds it."""
    fds = Path(f"/proc/{pid}/fd")
    try:
        return any(os.readlink(fd) == str(path) for fd in fds.iterdir())
    except (FileNotFoundError, ProcessLookupError):
        return False


def wait_until_at(process: subprocess.Popen[str], path: Path, *, done_with: Path | None = None) -> None:
    """Return once ``process`` has ``path`` open (and no longer ``done_with``): it has reached
    that session, and waits for its lock if another process holds it. Fails if it ends first."""
    deadline = time.monotonic() + 30
    while not open_by(process.pid, path) or (done_with is not None and open_by(process.pid, done_with)):
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=0.002)
        assert process.returncode is None and time.monotonic() < deadline
