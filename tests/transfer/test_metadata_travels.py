"""Metadata travels: a whole folder, files -> backend -> files, is identical
under ``diff -r``, sidecars and empty sessions included, with each file's mode and
modification time; the SDK's own session classes, in another process, read from the copied
database exactly the items ``get_items()`` reads from the files.

Against a real PostgreSQL, a real Redis and SQLite (``SQLiteSession`` and ``SQLAlchemySession``).
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import cli_env
from test_transfer import in_process, many
from test_transfer_all import make_folder

from jsonl_session import JSONLSession, SessionDirectory
from jsonl_session.core.names import KINDS
from jsonl_session.transfer.all_sessions import export_all, import_all

pytestmark = pytest.mark.sdk
pytest.importorskip("agents", reason="the Agents SDK (extra 'agents') is not installed")

LONG_AGO = 1_600_000_000_123_456_789  # ns: 2020-09-13, with a sub-second part that must survive


def rich_folder(folder: Path) -> None:
    """Sessions with every sidecar kind, an empty session, odd modes and old times."""
    make_folder(folder, 5)
    SessionDirectory(folder).fork("s001", "s001-fork")  # a real .lineage
    for n, kind in enumerate(KINDS):
        # Each kind on its own session, bytes as the library writes them (opaque to a copy).
        sidecar = folder / f"s00{n % 5}.jsonl{kind}"
        if not sidecar.exists():
            sidecar.write_bytes(
                json.dumps({"kind": kind, "n": n, "é": "naïve"}, ensure_ascii=False).encode() + b"\n"
            )
    (folder / "s002.jsonl.usage").write_bytes(b'{"input_tokens":1}\n{"input_tokens":2}\n')
    (folder / "empty.jsonl").write_bytes(b"")
    (folder / "empty.jsonl.usage").write_bytes(b'{"input_tokens":7}\n')  # an empty session's ledger
    os.chmod(folder / "s000.jsonl", 0o640)
    os.chmod(folder / "s002.jsonl.usage", 0o604)
    for path in folder.iterdir():
        os.utime(path, ns=(LONG_AGO, LONG_AGO + hash(path.name) % 10**9))


def tree(folder: Path) -> dict[str, tuple[bytes, int, int]]:
    """Every file: bytes, permission bits, modification time (ns)."""
    found = {}
    for path in sorted(folder.iterdir()):
        info = path.stat()
        found[path.name] = (path.read_bytes(), stat.S_IMODE(info.st_mode), info.st_mtime_ns)
    return found


def test_a_folder_round_trip_is_identical_under_diff_r(url: str, tmp_path: Path) -> None:
    source, back = tmp_path / "source", tmp_path / "back"
    rich_folder(source)
    before = tree(source)
    outcomes = asyncio.run(export_all(SessionDirectory(source), url))
    assert {o.status for o in outcomes} == {"copied"}, outcomes
    assert tree(source) == before  # exporting touches nothing here
    imported = asyncio.run(import_all(url, SessionDirectory(back)))
    assert {o.status for o in imported} == {"copied"}, imported
    diff = subprocess.run(["diff", "-r", str(source), str(back)], capture_output=True, text=True, check=False)
    assert (diff.returncode, diff.stdout) == (0, "")
    assert tree(back) == tree(source)  # modes and times too

    # Again: nothing to do either way, nothing touched.
    assert {o.status for o in asyncio.run(export_all(SessionDirectory(source), url))} == {"skipped"}
    assert {o.status for o in asyncio.run(import_all(url, SessionDirectory(back)))} == {"skipped"}
    assert tree(back) == tree(source)


def test_metadata_follows_the_items_when_they_grow(url: str, tmp_path: Path) -> None:
    source, back = tmp_path / "source", tmp_path / "back"
    make_folder(source, 2)
    asyncio.run(export_all(SessionDirectory(source), url))
    asyncio.run(import_all(url, SessionDirectory(back)))
    JSONLSession("s000", source).add_items_sync(many(2))
    (source / "s000.jsonl.usage").write_bytes(b'{"input_tokens":3}\n')  # a run recorded with them
    (source / "s001.jsonl.usage").write_bytes(b'{"input_tokens":4}\n')  # up to date items, new ledger
    asyncio.run(export_all(SessionDirectory(source), url))
    outcomes = {o.session_id: o.status for o in asyncio.run(import_all(url, SessionDirectory(back)))}
    assert outcomes == {"s000": "appended", "s001": "skipped"}
    assert (back / "s000.jsonl").read_bytes() == (source / "s000.jsonl").read_bytes()
    assert (back / "s000.jsonl.usage").read_bytes() == b'{"input_tokens":3}\n'
    assert (back / "s001.jsonl.usage").read_bytes() == b'{"input_tokens":4}\n'  # it lacked one: added
    (back / "s001.jsonl.usage").write_bytes(b'{"input_tokens":5}\n')  # newer here: kept
    asyncio.run(import_all(url, SessionDirectory(back)))
    assert (back / "s001.jsonl.usage").read_bytes() == b'{"input_tokens":5}\n'


def test_cli_round_trip_is_identical_under_diff_r(
    url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    source, back = tmp_path / "source", tmp_path / "back"
    rich_folder(source)
    exported = in_process(capsys, source, "export", "--all", "--to", url)
    assert exported.code == 0 and "stay in" not in exported.err, exported.err
    assert in_process(capsys, back, "import", url, "--all").code == 0
    assert subprocess.run(["diff", "-r", str(source), str(back)], check=False).returncode == 0


READER = """
import asyncio, json, sys
url, ids = sys.argv[1], sys.argv[2:]

async def main():
    found = {}
    if url.startswith("redis"):
        from agents.extensions.memory import RedisSession
        for session_id in ids:
            session = RedisSession.from_url(session_id, url=url)
            found[session_id] = await session.get_items()
            await session.close()
    elif url.startswith("sqlite:///"):
        from agents import SQLiteSession
        for session_id in ids:
            session = SQLiteSession(session_id, url[len("sqlite:///"):])
            found[session_id] = await session.get_items()
            session.close()
    else:
        from agents.extensions.memory import SQLAlchemySession
        from sqlalchemy.ext.asyncio import create_async_engine
        engine = create_async_engine(url.replace("postgresql://", "postgresql+asyncpg://"))
        for session_id in ids:
            found[session_id] = await SQLAlchemySession(session_id, engine=engine).get_items()
        await engine.dispose()
    print(json.dumps(found))

asyncio.run(main())
"""


def test_the_sdks_own_classes_in_another_process_read_the_files_items(
    url: str,
    tmp_path: Path,
) -> None:
    folder = tmp_path / "sessions"
    rich_folder(folder)
    asyncio.run(export_all(SessionDirectory(folder), url))
    JSONLSession("s003", folder).add_items_sync(many(3))  # and an incremental copy on top
    asyncio.run(export_all(SessionDirectory(folder), url))
    ids = SessionDirectory(folder).ids()
    done = subprocess.run(
        [sys.executable, "-c", READER, url, *ids], capture_output=True, text=True, env=cli_env(), check=False
    )
    assert done.returncode == 0, done.stderr
    read = json.loads(done.stdout)
    for session_id in ids:
        assert read[session_id] == JSONLSession(session_id, folder).get_items_sync(), session_id


def test_items_the_database_gained_keep_the_times_they_had(url: str, tmp_path: Path) -> None:
    from test_incremental import add_remote

    source, back = tmp_path / "source", tmp_path / "back"
    JSONLSession("s000", source).add_items_sync(many(3))  # durable: its items get times
    asyncio.run(export_all(SessionDirectory(source), url))
    asyncio.run(import_all(url, SessionDirectory(back)))
    exported_times = (back / "s000.jsonl.times").read_bytes()
    assert exported_times == (source / "s000.jsonl.times").read_bytes()
    add_remote(url, "s000", many(2))  # the application went on in the database
    outcome = asyncio.run(import_all(url, SessionDirectory(back)))[0]
    assert (outcome.status, outcome.items) == ("appended", 2)
    assert (back / "s000.jsonl.times").read_bytes().startswith(exported_times)


def test_a_sidecar_the_items_write_extended_is_kept_when_asked(tmp_path: Path) -> None:
    from jsonl_session.transfer import companion

    session = JSONLSession("s", tmp_path)
    session.add_items_sync(many(1))
    kind = f".jsonl{KINDS[-1]}"
    sidecar = tmp_path / f"s{kind}"
    recorded = {kind: companion.Entry(b"one\n", 0o600, LONG_AGO)}
    for keep_grown, expected in ((True, b"one\ntwo\n"), (False, b"one\n")):
        sidecar.write_bytes(b"one\ntwo\n")
        os.chmod(sidecar, 0o600)
        fd = os.open(session.path, os.O_RDONLY)
        try:
            companion.apply_locally(session.path, fd, recorded, durable=False, keep_grown=keep_grown)
        finally:
            os.close(fd)
        assert sidecar.read_bytes() == expected
