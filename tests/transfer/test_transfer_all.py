"""Whole folders: ``export --all`` / ``import --all``, all or nothing per session, re-runnable.

Against a real Redis, a real PostgreSQL and SQLite. An interrupted export (the process killed
mid-way) is simply run again: whole sessions are skipped, none is half there.
"""

from __future__ import annotations

import json
import os
import pty
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import cli_env, flush_redis
from pg_helpers import recreate_database
from test_transfer import TRICKY, in_process, many

from jsonl_session import JSONLSession

pytestmark = pytest.mark.sdk
pytest.importorskip("agents", reason="the Agents SDK (extra 'agents') is not installed")


def make_folder(directory: Path, count: int, prefix: str = "s") -> dict[str, bytes]:
    """``count`` sessions (the tricky items, then a few more) and their bytes, by id."""
    for n in range(count):
        JSONLSession(f"{prefix}{n:03d}", directory, durable=False).add_items_sync(TRICKY + many(n % 5))
    return {path.stem: path.read_bytes() for path in directory.glob("*.jsonl")}


def files(directory: Path) -> dict[str, bytes]:
    return {path.stem: path.read_bytes() for path in directory.glob("*.jsonl")}


@pytest.fixture(params=["sqlite", "redis", "postgresql"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'all.db'}"
    if request.param == "redis":
        url: str = request.getfixturevalue("redis_url")
        flush_redis(url)  # the server is shared by this module's tests
        return url
    url = request.getfixturevalue("postgres_url").replace("postgresql+asyncpg", "postgresql")
    recreate_database(url, "all_sessions")
    return url.rsplit("/", 1)[0] + "/all_sessions"


def test_export_all_then_import_all_round_trips_every_session(
    backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "source"
    originals = make_folder(source, 12)
    (source / "empty.jsonl").write_bytes(b"")  # an empty session: copied too, and back
    originals["empty"] = b""
    exported = in_process(capsys, source, "export", "--all", "--to", backend)
    total = sum(len(TRICKY) + n % 5 for n in range(12))
    counts = "0 appended (0 items), 0 up to date, 0 differ, 0 failed"
    summary = f"exported 13 sessions ({total} items) to {backend}; {counts}\n"
    assert (exported.code, exported.err) == (0, summary)
    back = tmp_path / "back"
    imported = in_process(capsys, back, "import", backend, "--all")
    assert imported.code == 0, imported.err
    assert (
        imported.err.startswith("imported 13 sessions (") and "\r" not in imported.err
    )  # no bar: not a terminal
    assert files(back) == originals  # byte for byte, every one

    again = in_process(capsys, back, "import", backend, "--all")  # nothing left to do: all identical
    assert (again.code, again.err.split("; ")[1]) == (
        0,
        "0 appended (0 items), 13 up to date, 0 differ, 0 failed\n",
    )


def test_rerun_skips_identical_appends_grown_reports_different_and_never_overwrites(
    backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "sessions"
    make_folder(folder, 3)
    assert in_process(capsys, folder, "export", "--all", "--to", backend).code == 0
    make_folder(folder, 5)  # two more since; s000..s002 grow (their items again, after their own)
    for session_id in ("s001", "s002"):  # ... and these two then change an item the backend has
        JSONLSession(session_id, folder).clear_session_sync()
        JSONLSession(session_id, folder).add_items_sync([{"role": "user", "content": "other"}, *TRICKY])
    second = in_process(capsys, folder, "export", "--all", "--to", backend)
    assert second.code == 1
    lines = second.err.splitlines()
    assert lines[:3] == [
        f"s000: appended {len(TRICKY)} items",
        "s001: differs at item 1; not overwritten",
        "s002: differs at item 1; not overwritten",
    ]
    assert lines[3].startswith("exported 2 sessions (")
    assert lines[3].endswith(f"; 1 appended ({len(TRICKY)} items), 0 up to date, 2 differ, 0 failed")

    # Importing back over the folder: the changed files are left exactly as they are.
    before = files(folder)
    back = in_process(capsys, folder, "import", backend, "--all")
    assert back.code == 1
    assert back.err.splitlines()[-1].endswith("; 0 appended (0 items), 3 up to date, 2 differ, 0 failed")
    assert files(folder) == before


def test_an_export_killed_midway_resumes_without_a_half_copied_session(
    postgres_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = tmp_path / "sessions"
    originals = make_folder(folder, 60)
    url = postgres_url.replace("postgresql+asyncpg", "postgresql")
    recreate_database(url, "killed")
    url = url.rsplit("/", 1)[0] + "/killed"
    leader, follower = pty.openpty()  # a terminal, so that the progress bar shows how far it got
    command = [sys.executable, "-m", "jsonl_session", "export", "--all", "--to", url, "--dir", str(folder)]
    process = subprocess.Popen(command, stderr=follower, stdout=subprocess.DEVNULL, env=cli_env())
    os.close(follower)
    shown = b""
    try:  # killed once some sessions are in (whole transactions of them), not all
        while not re.search(rb"\] ([1-9]|[1-5][0-9])/60 sessions", shown):
            chunk = os.read(leader, 4096)
            assert chunk, shown
            shown += chunk
        process.send_signal(signal.SIGKILL)  # no chance to clean up
    finally:
        process.wait(60)
        os.close(leader)
    resumed = in_process(capsys, folder, "export", "--all", "--to", url)
    assert resumed.code == 0, resumed.err  # nothing "differs": no session was left half-copied
    copied, already = resumed.err.split("; ")[0], resumed.err.split("; ")[1].split(", ")[1]
    assert int(already.split()[0]) >= 1 and int(copied.split()[1]) == 60 - int(already.split()[0])
    back = tmp_path / "back"
    assert in_process(capsys, back, "import", url, "--all").code == 0
    assert files(back) == originals


def test_all_is_exclusive_with_an_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "sessions"
    make_folder(folder, 1)
    url = f"sqlite:///{tmp_path / 'x.db'}"
    assert in_process(capsys, folder, "export", "--all", "s000", "--to", url).code == 2
    assert in_process(capsys, folder, "export", "--to", url).code == 2
    assert in_process(capsys, folder, "import", url).code == 2
    assert in_process(capsys, folder, "import", url, "--all", "--as", "x").code == 2
    assert not (tmp_path / "x.db").exists()


@pytest.mark.slow
def test_the_transfer_benchmark_runs_quick(tmp_path: Path) -> None:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    benchmark = Path(__file__).resolve().parents[2] / "benchmarks" / "transfer.py"
    done = subprocess.run(
        [sys.executable, str(benchmark), "--quick", "--backends", "redis", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "transfer.json").read_text())
    assert (result["sessions"], result["items_per_session"]) == (50, 20)
    steps = result["backends"]["redis"]
    assert set(steps) == {"export", "re-run", "import", "sdk-copy", "append", "import_vs_sdk_copy"}
    assert len(steps["import"]["rounds_items_per_s"]) == len(steps["sdk-copy"]["rounds_items_per_s"]) == 3
    assert "redis" in done.stdout and "items/s" in done.stdout
