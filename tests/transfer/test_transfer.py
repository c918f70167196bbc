"""Copying sessions to and from the Agents SDK's other backends: SQLite, SQLAlchemy and a real Redis.

Round trips must be lossless: the file that comes back is byte-for-byte the file that left.
"""

from __future__ import annotations

import asyncio
import json
import os
import pty
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import Result, cli_env, run

from jsonl_session import JSONLSession
from jsonl_session.cli.commands import main
from jsonl_session.transfer.backends import BATCH, copy_session, open_url

pytestmark = pytest.mark.sdk
pytest.importorskip("agents", reason="the Agents SDK (extra 'agents') is not installed")

TRICKY = [
    {"role": "user", "content": 'naïve café 東京 🚀 "quoted" back\\slash\nnew line\ttab'},
    {
        "type": "function_call",
        "name": "f",
        "arguments": '{"x": [1, 2.5, null]}',
        "call_id": "call_1",
        "id": "fc_1",
    },
    {"type": "function_call_output", "call_id": "call_1", "output": [{"type": "input_text", "text": ""}]},
    {
        "role": "assistant",
        "content": [{"type": "output_text", "text": "ok", "annotations": []}],
        "big": 2**63 - 1,
        "neg": -0.0,
        "tiny": 5e-324,
        "flag": False,
        "nothing": None,
        "z_first": 1,
        "a_last": 2,
    },
]


def many(count: int) -> list[dict[str, Any]]:
    return [{"role": "user" if n % 2 else "assistant", "content": f"message {n}"} for n in range(count)]


async def round_trip(
    url: str, source: JSONLSession, back: JSONLSession, remote_id: str
) -> list[tuple[int, int]]:
    calls: list[tuple[int, int]] = []
    async with open_url(url, remote_id) as remote:
        assert await copy_session(
            source, remote, progress=lambda done, total: calls.append((done, total))
        ) == len(source.get_items_sync())
        assert await remote.get_items() == source.get_items_sync()
    async with open_url(url, remote_id) as remote:  # a fresh connection: really stored there
        await copy_session(remote, back)
    return calls


@pytest.mark.parametrize("scheme", ["sqlite", "sqlite+aiosqlite"])
def test_round_trip_through_sql_backends_is_byte_for_byte(
    tmp_path: Path, sessions_dir: Path, scheme: str
) -> None:
    source = JSONLSession("src", sessions_dir, durable=False)
    source.add_items_sync(TRICKY)
    back = JSONLSession("back", sessions_dir, durable=False)
    asyncio.run(round_trip(f"{scheme}:///{tmp_path / 'chats.db'}", source, back, "remote"))
    assert back.path.read_bytes() == source.path.read_bytes()


def test_round_trip_through_a_real_redis_server(redis_url: str, sessions_dir: Path) -> None:
    source = JSONLSession("src", sessions_dir, durable=False)
    source.add_items_sync(TRICKY + many(2 * BATCH + 7))
    back = JSONLSession("back", sessions_dir, durable=False)
    calls = asyncio.run(round_trip(redis_url, source, back, "redis-trip"))
    total = len(TRICKY) + 2 * BATCH + 7
    assert calls == [(0, total), (BATCH, total), (2 * BATCH, total), (total, total)]
    assert back.path.read_bytes() == source.path.read_bytes()


def test_copy_session_works_between_any_two_sessions(sessions_dir: Path) -> None:
    source = JSONLSession("a", sessions_dir)
    source.add_items_sync(TRICKY)
    target = JSONLSession("b", sessions_dir)
    target.add_items_sync([{"role": "system", "content": "kept"}])
    assert asyncio.run(copy_session(source, target)) == len(TRICKY)
    assert target.get_items_sync() == [
        {"role": "system", "content": "kept"},
        *TRICKY,
    ]  # appended, not replaced
    empty = JSONLSession("empty", sessions_dir)
    assert asyncio.run(copy_session(empty, JSONLSession("c", sessions_dir))) == 0
    assert not (sessions_dir / "c.jsonl").exists()


def test_unknown_urls_are_refused() -> None:
    async def open_it(url: str) -> None:
        async with open_url(url, "x"):
            pass

    with pytest.raises(ValueError, match="not a backend URL"):
        asyncio.run(open_it("chats.db"))
    with pytest.raises(ValueError, match="give a database file"):
        asyncio.run(open_it("sqlite:///:memory:"))


def in_process(capsys: pytest.CaptureFixture[str], directory: Path, *args: str) -> Result:
    """The CLI's ``main`` in this process: for error paths, where another interpreter start
    (several seconds to import the Agents SDK) would prove nothing new."""
    code = main([*args, "--dir", str(directory)])
    captured = capsys.readouterr()
    return Result(code, captured.out, captured.err)


def test_export_and_import_commands(
    tmp_path: Path,
    sessions_dir: Path,
    redis_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    source = JSONLSession("convo", sessions_dir)
    source.add_items_sync(TRICKY)
    database = f"sqlite:///{tmp_path / 'chats.db'}"

    exported = run(sessions_dir, "export", "convo", "--to", database)
    assert (exported.code, exported.err) == (0, f"convo: exported 4 items to {database} as convo\n")
    imported = in_process(capsys, sessions_dir, "import", database, "--id", "convo", "--as", "copy")
    assert (imported.code, imported.err) == (0, f"copy: imported 4 items from {database}\n")
    assert (sessions_dir / "copy.jsonl").read_bytes() == source.path.read_bytes()

    again = in_process(capsys, sessions_dir, "export", "convo", "--to", database)
    assert (again.code, again.err) == (0, f"convo: up to date in {database} as convo\n")
    JSONLSession("copy", sessions_dir).pop_item_sync()
    JSONLSession("copy", sessions_dir).add_items_sync([{"role": "user", "content": "mine"}])
    onto_other = run(sessions_dir, "import", database, "--id", "convo", "--as", "copy")  # never overwritten
    assert onto_other.code == 1 and "copy: differs at item 4 in " in onto_other.err
    wrong_id = in_process(capsys, sessions_dir, "import", database, "--id", "nope")
    assert wrong_id.code == 1 and "has no items (wrong --id?)" in wrong_id.err
    assert not (sessions_dir / "nope.jsonl").exists()

    assert in_process(capsys, sessions_dir, "export", "convo", "--to", redis_url, "--as", "shared").code == 0
    from_redis = run(sessions_dir, "import", redis_url, "--id", "shared")
    assert (from_redis.code, from_redis.err) == (0, f"shared: imported 4 items from {redis_url}\n")
    assert (sessions_dir / "shared.jsonl").read_bytes() == source.path.read_bytes()


def test_backend_failures_are_one_line_errors(
    tmp_path: Path, sessions_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    JSONLSession("convo", sessions_dir).add_items_sync(TRICKY)
    closed_port = f"redis://:hunter2@127.0.0.1:{_closed_port()}/0"
    refused = in_process(capsys, sessions_dir, "export", "convo", "--to", closed_port)
    assert refused.code == 1 and refused.err.count("\n") == 1
    assert (
        refused.err.startswith("jsonl-session: error: redis://:***@127.0.0.1:")
        and "hunter2" not in refused.err
    )
    assert run(sessions_dir, "export", "convo", "--to", "chats.db").code == 2  # not a URL: a usage mistake
    # A password with "/" or "@" in it (unencoded, which the drivers accept) is masked whole,
    # in the URL and in a driver's own message about it.
    port = _closed_port()
    for password in ("hun/ter2", "hun@ter2", "hunter2/@x"):
        url = f"redis://user:{password}@127.0.0.1:{port}/0"
        failed = in_process(capsys, sessions_dir, "export", "convo", "--to", url)
        assert failed.code in (1, 2) and failed.err.count("\n") == 1, failed
        assert failed.err.startswith("jsonl-session: error: redis://user:***@"), failed.err
        assert all(part not in failed.err for part in ("hun", "ter2")), failed.err

    # An item this format cannot store exactly (a 70-bit integer) stops the import before any write.
    database = f"sqlite:///{tmp_path / 'odd.db'}"

    async def store_odd_items() -> None:
        async with open_url(database, "odd") as remote:
            await remote.add_items([{"role": "user", "content": "fine"}, {"role": "user", "n": 2**70}])

    asyncio.run(store_odd_items())
    odd = in_process(capsys, sessions_dir, "import", database, "--id", "odd")
    assert odd.code == 1 and "item 1 cannot be stored faithfully" in odd.err and "nothing imported" in odd.err
    assert not (sessions_dir / "odd.jsonl").exists()

    # A missing extra is named, not a traceback: shadow the packages with ones that fail to import.
    blocked = tmp_path / "blocked"
    for package in ("redis", "agents"):
        (blocked / package).mkdir(parents=True)
        (blocked / package / "__init__.py").write_text(f"raise ImportError('no {package} here')\n")
    env = cli_env(PYTHONPATH=str(blocked))
    no_sdk = run(sessions_dir, "export", "convo", "--to", f"sqlite:///{tmp_path / 'x.db'}", env=env)
    assert no_sdk.code == 1
    assert no_sdk.err == (
        "jsonl-session: error: sqlite:/// needs the Agents SDK backend that is not installed: "
        "pip install 'jsonl-session[agents]'\n"
    )


def test_progress_bar_only_on_a_terminal(
    tmp_path: Path, sessions_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    JSONLSession("big", sessions_dir, durable=False).add_items_sync(many(BATCH + 1))
    database = f"sqlite:///{tmp_path / 'p.db'}"
    leader, follower = pty.openpty()
    try:
        with open(follower, "w", closefd=True) as terminal:
            monkeypatch.setattr(sys, "stderr", terminal)  # a real terminal as stderr
            assert main(["export", "big", "--to", database, "--dir", str(sessions_dir)]) == 0
            monkeypatch.undo()
        shown = _read_all(leader)
    finally:
        os.close(leader)
    # One transaction writes them all (and the metadata): the bar shows the start and the end.
    assert f"\rexport [{'.' * 30}] 0/{BATCH + 1} items" in shown
    assert f"\rexport [{'#' * 30}] {BATCH + 1}/{BATCH + 1} items" in shown
    piped = in_process(
        capsys, sessions_dir, "import", database, "--id", "big", "--as", "big2"
    )  # not a terminal
    assert piped.code == 0 and "\r" not in piped.err


def _closed_port() -> int:
    from cli_helpers import free_port

    return free_port()  # bound and released: nothing listens there now


def _read_all(fd: int) -> str:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO once the child has closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode()


def test_items_survive_json_as_the_sdk_backends_write_it() -> None:
    # The SQL and Redis sessions store json.dumps(item); what we append must equal what json reads.
    for item in TRICKY:
        assert json.loads(json.dumps(item)) == item
