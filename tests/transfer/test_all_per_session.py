"""``export --all`` / ``import --all`` are all or nothing *per session*, whatever one session holds.

Issue 24: one malformed file stopped a whole export, one foreign id in the backend (a Redis key
that is not UTF-8, an empty or 400-byte id, a key of the wrong type, an SQL row with an empty or
BLOB ``session_id``) stopped every import; empty sessions were lost on the way back; ``--all``
said nothing of the metadata it leaves behind; a password in the URL's query was printed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import flush_redis
from test_transfer import TRICKY, in_process
from test_transfer_all import files, make_folder

from jsonl_session.transfer.urls import quotes_password, shown_url

pytestmark = pytest.mark.sdk
pytest.importorskip("agents", reason="the Agents SDK (extra 'agents') is not installed")


@pytest.fixture(params=["sqlite", "redis"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'all.db'}"
    url: str = request.getfixturevalue("redis_url")
    flush_redis(url)
    return url


def test_a_malformed_session_fails_alone_and_the_export_goes_on(
    backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "sessions"
    make_folder(folder, 3)
    (folder / "bad.jsonl").write_bytes(b'{"role": "user"}\nnot json\n{"role": "user"}\n')
    first = in_process(capsys, folder, "export", "--all", "--to", backend)
    lines = first.err.splitlines()
    assert first.code == 1
    assert lines[0].startswith("bad: failed: ") and "bad.jsonl:2: not valid JSON" in lines[0], lines
    assert lines[-1].endswith("; 0 appended (0 items), 0 up to date, 0 differ, 1 failed"), lines
    assert lines[-1].startswith("exported 3 sessions (")
    again = in_process(capsys, folder, "export", "--all", "--to", backend)  # the re-run: unaffected
    assert again.code == 1
    assert again.err.splitlines()[0] == lines[0]
    assert again.err.splitlines()[-1].endswith("; 0 appended (0 items), 3 up to date, 0 differ, 1 failed")


def test_empty_sessions_survive_a_round_trip(
    backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "sessions"
    originals = make_folder(folder, 2)
    (folder / "empty.jsonl").write_bytes(b"")
    originals["empty"] = b""
    assert in_process(capsys, folder, "export", "--all", "--to", backend).code == 0
    again = in_process(capsys, folder, "export", "--all", "--to", backend)
    assert (again.code, again.err.split("; ")[1]) == (
        0,
        "0 appended (0 items), 3 up to date, 0 differ, 0 failed\n",
    )
    back = tmp_path / "back"
    imported = in_process(capsys, back, "import", backend, "--all")
    assert imported.code == 0, imported.err
    assert imported.err.startswith("imported 3 sessions (")
    assert files(back) == originals


def test_export_all_takes_the_metadata_along(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "sessions"
    make_folder(folder, 2)
    (folder / "s001.jsonl.usage").write_text('{"requests": 1}\n')
    (folder / "s001.jsonl.lineage").write_text("{}\n")
    url = f"sqlite:///{tmp_path / 'all.db'}"
    done = in_process(capsys, folder, "export", "--all", "--to", url)
    assert done.code == 0, done.err
    assert "stay in" not in done.err and "s001:" not in done.err  # nothing is left behind any more
    with sqlite3.connect(tmp_path / "all.db") as db:
        kinds = db.execute("SELECT kind FROM jsonl_session_metadata WHERE session_id = 's001'").fetchall()
    assert {".jsonl", ".jsonl.lineage", ".jsonl.usage"} <= {kind for (kind,) in kinds}


def _sqlite_with_foreign_rows(path: Path, good: int) -> str:
    url = f"sqlite:///{path}"
    source = path.parent / "source"
    make_folder(source, good)
    assert in_process_export(source, url) == 0
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO agent_messages (session_id, message_data) VALUES ('', '{}')")
        db.execute("INSERT INTO agent_messages (session_id, message_data) VALUES (x'ff00', '{}')")
        db.execute("INSERT INTO agent_messages (session_id, message_data) VALUES (?, '{}')", ("x" * 400,))
    return url


def in_process_export(folder: Path, url: str) -> int:
    from jsonl_session.cli.commands import main

    return main(["export", "--all", "--to", url, "--dir", str(folder)])


def test_foreign_sqlite_rows_fail_alone_and_the_import_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = _sqlite_with_foreign_rows(tmp_path / "foreign.db", 3)
    capsys.readouterr()
    back = tmp_path / "back"
    first = in_process(capsys, back, "import", url, "--all")
    lines = first.err.splitlines()
    assert first.code == 1
    assert lines[-1].startswith("imported 3 sessions (") and lines[-1].endswith(", 3 failed"), lines
    assert sorted(files(back)) == ["s000", "s001", "s002"]
    failed = sorted(line for line in lines[:-1])
    assert len(failed) == 3 and all(": failed: " in line for line in failed), lines
    assert any("empty" in line for line in failed) and any("a BLOB, not text" in line for line in failed)
    again = in_process(capsys, back, "import", url, "--all")
    assert again.code == 1 and sorted(again.err.splitlines()[:-1]) == failed
    assert again.err.splitlines()[-1].endswith("; 0 appended (0 items), 3 up to date, 0 differ, 3 failed")


@contextmanager
def redis_after_export(
    redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], count: int
) -> Iterator[Any]:
    """A client of a Redis holding ``count`` sessions (``s000``...) exported from a folder, to spoil."""
    import redis

    flush_redis(redis_url)
    source = tmp_path / "source"
    make_folder(source, count)
    assert in_process(capsys, source, "export", "--all", "--to", redis_url).code == 0
    client = redis.Redis.from_url(redis_url)
    try:
        yield client
    finally:
        client.close()


def test_foreign_redis_keys_fail_alone_and_the_import_goes_on(
    redis_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with redis_after_export(redis_url, tmp_path, capsys, 3) as client:
        client.rpush(b"agents:session:\xff\xfe:messages", b"{}")  # not UTF-8
        client.rpush(b"agents:session::messages", b"{}")  # an empty id
        client.rpush(b"agents:session:" + b"y" * 400 + b":messages", b"{}")  # too long for a file name
        client.set(b"agents:session:wrongtype:messages", b"a string, not a list")
    back = tmp_path / "back"
    first = in_process(capsys, back, "import", redis_url, "--all")
    lines = first.err.splitlines()
    assert first.code == 1
    assert lines[-1].startswith("imported 3 sessions (") and lines[-1].endswith(", 4 failed"), lines
    assert sorted(files(back)) == ["s000", "s001", "s002"]
    failed = sorted(lines[:-1])
    assert len(failed) == 4 and all(": failed: " in line for line in failed), lines
    assert any(line.startswith("wrongtype: failed: ") for line in failed)
    again = in_process(capsys, back, "import", redis_url, "--all")
    assert sorted(again.err.splitlines()[:-1]) == failed
    assert again.err.splitlines()[-1].endswith("; 0 appended (0 items), 3 up to date, 0 differ, 4 failed")


def test_a_hostile_companion_hash_fails_its_own_session_alone(
    redis_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Sessions are read several per round trip (``redis_store.read_sessions``): one whose
    companion hash cannot be read (a field name that is not UTF-8) must not fail the others
    read with it."""
    from jsonl_session.transfer.companion import REDIS_PREFIX

    with redis_after_export(redis_url, tmp_path, capsys, 6) as client:
        client.hset(REDIS_PREFIX.encode() + b"s002", b"\xff\xfe", b"x")
    back = tmp_path / "back"
    done = in_process(capsys, back, "import", redis_url, "--all")
    lines = done.err.splitlines()
    assert done.code == 1
    assert lines[-1].endswith(", 1 failed"), lines
    assert [line.split(":")[0] for line in lines[:-1]] == ["s002"], lines
    assert sorted(files(back)) == ["s000", "s001", "s003", "s004", "s005"]


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://localhost:6379/0?password=hunter2", "redis://localhost:6379/0?password=***"),
        ("postgresql://me@db/chats?sslmode=require&PASSWD=s3cr%2Ft", "postgresql://me@db/chats?sslmode=require&PASSWD=***"),
        ("redis://localhost/0?db=1&token=abc&api_secret=x&pwd=y", "redis://localhost/0?db=1&token=***&api_secret=***&pwd=***"),
        ("redis://u:pw@localhost/0?password=other", "redis://u:***@localhost/0?password=***"),
    ],
)  # fmt: skip
def test_passwords_are_masked_wherever_they_sit_in_the_url(url: str, shown: str) -> None:
    assert shown_url(url) == shown


def test_quotes_password_knows_query_passwords() -> None:
    url = "redis://localhost:1/0?password=hunter2"
    assert quotes_password("AuthenticationError: hunter2 rejected", url)
    assert not quotes_password("Connection refused", url)


def test_a_query_password_is_not_printed_in_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "sessions"
    make_folder(folder, 1)
    url = "redis://127.0.0.1:1/0?password=hunter2"
    done = in_process(capsys, folder, "export", "--all", "--to", url)
    assert done.code == 1 and "hunter2" not in done.err + done.out and "password=***" in done.err


def test_the_tricky_items_are_unchanged(tmp_path: Path) -> None:
    assert TRICKY  # the shared corpus is imported, not copied
