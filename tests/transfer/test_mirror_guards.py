"""The mirror and the whole-folder copies against hostile ids, foreign writers and a missing folder.

Each test is one way a shared database was found to lose or corrupt rows, or a terminal to
receive raw control bytes, shown against a real PostgreSQL or Redis started by the fixtures:

1. a foreign transaction holding a session's row while it adds rows (the count must be taken
   after the lock is granted, or the catch-up duplicates rows);
2. Redis ids whose keys are another session's keys (``a:messages`` is ``a``'s list), and a
   key of another type (a transaction that fails must write nothing);
3. ``--delete`` on a folder that does not exist, or that would delete most of the database;
4. an id PostgreSQL cannot hold (a NUL byte) in ``export --all``: that session fails alone;
5. ids (from file names and from foreign rows) printed escaped by every mirror path;
6. ``--verify`` and ``--dry-run`` summaries say ``would``.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import cli_env, flush_redis, run
from pg_helpers import new_postgres_database
from test_mirror import (
    folder_view,
    sdk_view,
    session,
    turn,
)

from jsonl_session import SessionDirectory
from jsonl_session.transfer import catch_up_mirror, catch_up_mirror_sync, export_all

pytestmark = pytest.mark.sdk
pytest.importorskip("agents", reason="the Agents SDK (extra 'agents') is not installed")

REDIS_PREFIX = "agents:session:"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path / "sessions"


@pytest.fixture
def pg(postgres_url: str) -> str:
    return new_postgres_database(postgres_url)


@pytest.fixture
def rd(redis_url: str) -> str:
    flush_redis(redis_url)
    return redis_url


@pytest.fixture(params=["postgresql", "redis"])
def database(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue("pg" if request.param == "postgresql" else "rd"))


def text_of(item: Any) -> str:
    return json.dumps(item, separators=(",", ":"))


def redis_keys(url: str) -> dict[bytes, Any]:
    """Every key in the Redis database with its value (lists as lists, hashes without times)."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        found: dict[bytes, Any] = {}
        for key in client.scan_iter(count=1000):
            kind = client.type(key)
            if kind == b"list":
                found[key] = client.lrange(key, 0, -1)
            elif kind == b"hash":
                fields: dict[bytes, bytes] = client.hgetall(key)  # type: ignore[assignment]
                found[key] = {k: v for k, v in fields.items() if not k.endswith(b"_at")}
            else:
                found[key] = client.get(key)
        return found
    finally:
        client.close()


def pg_rows(url: str) -> list[tuple[str, str]]:
    """Every ``(session_id, message_data)`` of ``agent_messages``, in the SDK's order."""
    asyncpg = importlib.import_module("asyncpg")

    async def read() -> list[tuple[str, str]]:
        connection = await asyncpg.connect(url)
        try:
            rows = await connection.fetch(
                "SELECT session_id, message_data FROM agent_messages ORDER BY session_id, created_at, id"
            )
            return [(row[0], row[1]) for row in rows]
        finally:
            await connection.close()

    return asyncio.run(read())


# -- 1. the count is taken after the row lock is granted ---------------------------------------------


def test_a_foreign_transaction_holding_the_row_does_not_make_the_catch_up_duplicate_rows(
    folder: Path, pg: str
) -> None:
    asyncpg = importlib.import_module("asyncpg")
    writer = session(folder, "s")
    writer.add_items_sync([turn(1), turn(2)])
    catch_up_mirror_sync(folder, pg)
    writer.add_items_sync([turn(3), turn(4)])

    async def scenario() -> str:
        foreign = await asyncpg.connect(pg)
        watcher = await asyncpg.connect(pg)
        try:
            held = foreign.transaction()
            await held.start()
            # As the SDK's add_items does: lock the session's row, then add its rows.
            await foreign.execute("SELECT 1 FROM agent_sessions WHERE session_id = 's' FOR UPDATE")
            await foreign.execute(
                "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', $1), ('s', $2)",
                text_of(turn(3)),
                text_of(turn(4)),
            )
            catching_up = asyncio.ensure_future(catch_up_mirror(folder, pg))
            # The catch-up is waiting for the row lock the foreign transaction holds.
            while not await watcher.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock'"
            ):
                assert not catching_up.done(), catching_up.result()
                await asyncio.sleep(0.01)
            await held.commit()
            outcomes = await catching_up
            return outcomes[0].status
        finally:
            await foreign.close()
            await watcher.close()

    status = asyncio.run(scenario())
    assert sdk_view(pg) == folder_view(folder) == {"s": [turn(1), turn(2), turn(3), turn(4)]}
    assert [data for _, data in pg_rows(pg)] == [text_of(turn(n)) for n in (1, 2, 3, 4)]
    assert status == "same"


# -- 2. Redis ids whose keys are another session's keys ----------------------------------------------


@pytest.mark.parametrize("suffix", [":messages", ":counter"])
def test_a_redis_id_ending_in_a_key_suffix_is_refused_and_writes_nothing(
    folder: Path, rd: str, suffix: str
) -> None:
    session(folder, "a").add_items_sync([turn(1), turn(2)])
    session(folder, "a" + suffix).add_items_sync([turn(9)])
    outcomes = {o.session_id: o for o in catch_up_mirror_sync(folder, rd)}
    assert outcomes["a"].status == "created"
    refused = outcomes["a" + suffix]
    assert refused.status == "failed" and suffix in refused.detail and "Redis" in refused.detail
    assert redis_keys(rd) == {
        b"agents:session:a": {b"session_id": b"a"},
        b"agents:session:a:messages": [text_of(turn(1)).encode(), text_of(turn(2)).encode()],
    }
    assert sdk_view(rd) == {"a": [turn(1), turn(2)]}


def test_mirror_delete_after_removing_a_colliding_id_keeps_the_other_session(folder: Path, rd: str) -> None:
    session(folder, "a").add_items_sync([turn(1), turn(2)])
    session(folder, "a:messages").add_items_sync([turn(9)])
    catch_up_mirror_sync(folder, rd, delete=True)
    SessionDirectory(folder).delete("a:messages")
    outcomes = catch_up_mirror_sync(folder, rd, delete=True)
    assert [o.status for o in outcomes] == ["same"]
    assert sdk_view(rd) == {"a": [turn(1), turn(2)]} == folder_view(folder)


def test_export_all_refuses_a_colliding_redis_id_and_copies_the_rest(folder: Path, rd: str) -> None:
    session(folder, "a").add_items_sync([turn(1), turn(2)])
    session(folder, "a:messages").add_items_sync([turn(9)])
    session(folder, "b:counter").add_items_sync([turn(8)])
    outcomes = {o.session_id: o for o in asyncio.run(export_all(SessionDirectory(folder), rd))}
    assert outcomes["a"].status == "copied"
    assert outcomes["a:messages"].status == "failed" and ":messages" in outcomes["a:messages"].detail
    assert outcomes["b:counter"].status == "failed" and ":counter" in outcomes["b:counter"].detail
    keys = redis_keys(rd)
    assert keys[b"agents:session:a:messages"] == [text_of(turn(1)).encode(), text_of(turn(2)).encode()]
    assert not [key for key in keys if key.startswith(b"agents:session:b")]
    assert sdk_view(rd) == {"a": [turn(1), turn(2)]}


def test_a_redis_key_of_another_type_fails_the_session_and_nothing_is_written(folder: Path, rd: str) -> None:
    import redis

    client = redis.Redis.from_url(rd)
    try:
        client.set(REDIS_PREFIX + "b", "someone else's string")
    finally:
        client.close()
    session(folder, "b").add_items_sync([turn(1)])
    session(folder, "c").add_items_sync([turn(2)])
    outcomes = {o.session_id: o for o in catch_up_mirror_sync(folder, rd)}
    assert outcomes["b"].status == "failed" and "string" in outcomes["b"].detail
    assert outcomes["c"].status == "created"
    keys = redis_keys(rd)
    assert keys[b"agents:session:b"] == b"someone else's string"
    assert b"agents:session:b:messages" not in keys  # the transaction wrote nothing


# -- 3. --delete guards ----------------------------------------------------------------------------


def _five_stored(folder: Path, database: str) -> dict[str, list[Any]]:
    for n in range(5):
        session(folder, f"s{n}").add_items_sync([turn(n)])
    catch_up_mirror_sync(folder, database)
    stored = sdk_view(database)
    assert len(stored) == 5
    return stored


@pytest.mark.parametrize("mode", [["--once"], []])
def test_delete_on_a_folder_that_does_not_exist_is_refused(
    tmp_path: Path, folder: Path, database: str, mode: list[str]
) -> None:
    stored = _five_stored(folder, database)
    missing = tmp_path / "no-such-folder"
    done = run(missing, "mirror", "--to", database, "--delete", *mode, timeout=30)
    assert done.code == 2, done
    assert len(done.err.strip().splitlines()) == 1 and "no-such-folder" in done.err
    assert "Traceback" not in done.err
    assert not missing.exists()
    assert sdk_view(database) == stored


def test_delete_on_a_folder_that_does_not_exist_is_refused_by_the_library(
    tmp_path: Path, folder: Path, pg: str
) -> None:
    stored = _five_stored(folder, pg)
    with pytest.raises(ValueError, match="no-such-folder"):
        catch_up_mirror_sync(tmp_path / "no-such-folder", pg, delete=True)
    assert sdk_view(pg) == stored


@pytest.mark.parametrize("mode", [["--once"], []])
def test_delete_of_most_of_the_database_stops_unless_yes(
    folder: Path, database: str, mode: list[str]
) -> None:
    stored = _five_stored(folder, database)
    for n in range(1, 5):
        SessionDirectory(folder).delete(f"s{n}")
    done = run(folder, "mirror", "--to", database, "--delete", *mode, timeout=30)
    assert done.code == 2, done
    assert "4 of the 5" in done.err and "--yes" in done.err
    assert sdk_view(database) == stored

    done = run(folder, "mirror", "--to", database, "--delete", "--once", "--yes")
    assert done.code == 0, done
    assert sdk_view(database) == folder_view(folder) == {"s0": [turn(0)]}


def test_a_few_deletions_need_no_yes(folder: Path, pg: str) -> None:
    _five_stored(folder, pg)
    SessionDirectory(folder).delete("s1")
    SessionDirectory(folder).delete("s2")
    done = run(folder, "mirror", "--to", pg, "--delete", "--once")
    assert done.code == 0, done
    assert sdk_view(pg) == folder_view(folder)


# -- 4. ids a backend cannot hold fail alone ----------------------------------------------------------


def _with_a_nul_id(folder: Path) -> None:
    session(folder, "a").add_items_sync([turn(1)])
    (folder / "nul%00id.jsonl").write_text(json.dumps(turn(2)) + "\n")
    session(folder, "z").add_items_sync([turn(3)])
    assert "nul\x00id" in SessionDirectory(folder).ids()


def test_export_all_to_postgresql_fails_a_nul_id_alone(folder: Path, pg: str) -> None:
    _with_a_nul_id(folder)
    outcomes = {o.session_id: o for o in asyncio.run(export_all(SessionDirectory(folder), pg))}
    assert outcomes["nul\x00id"].status == "failed" and "NUL" in outcomes["nul\x00id"].detail
    assert outcomes["a"].status == outcomes["z"].status == "copied"
    assert sdk_view(pg) == {"a": [turn(1)], "z": [turn(3)]}

    done = run(folder, "export", "--all", "--to", pg)
    assert done.code == 1, done
    assert "DBAPIError" not in done.err and "NUL" in done.err and "\x00" not in done.err


def test_the_mirror_fails_a_nul_id_alone_before_writing(folder: Path, pg: str) -> None:
    _with_a_nul_id(folder)
    outcomes = {o.session_id: o for o in catch_up_mirror_sync(folder, pg)}
    assert outcomes["nul\x00id"].status == "failed" and "NUL" in outcomes["nul\x00id"].detail
    assert sdk_view(pg) == {"a": [turn(1)], "z": [turn(3)]}


# -- 5. ids printed escaped -------------------------------------------------------------------------


def _hostile(folder: Path, pg: str) -> None:
    """A file whose id holds ESC and BEL, and a foreign row whose id does."""
    asyncpg = importlib.import_module("asyncpg")
    session(folder, "fine").add_items_sync([turn(1)])
    (folder / "evil%1B%5D0%3Bpwned%07.jsonl").write_text(json.dumps(turn(2)) + "\n")
    catch_up_mirror_sync(folder, pg)

    async def foreign() -> None:
        connection = await asyncpg.connect(pg)
        try:
            await connection.execute("INSERT INTO agent_sessions (session_id) VALUES ($1)", "row\x1b[2J\x07x")
        finally:
            await connection.close()

    asyncio.run(foreign())
    (folder / "evil%1B%5D0%3Bpwned%07.jsonl").write_text(json.dumps(turn(3)) + "\n")


@pytest.mark.parametrize("flag", ["--once", "--verify", "--dry-run"])
def test_mirror_once_verify_and_dry_run_print_ids_escaped(folder: Path, pg: str, flag: str) -> None:
    _hostile(folder, pg)
    done = run(folder, "mirror", "--to", pg, flag)
    shown = done.out + done.err
    assert "\x1b" not in shown and "\x07" not in shown, shown
    assert "evil\\x1b]0;pwned\\x07: " in done.out
    assert "row\\x1b[2J\\x07x: only in the database" in done.out


def test_the_live_mirror_prints_a_failed_id_escaped(folder: Path, pg: str) -> None:
    session(folder, "fine").add_items_sync([turn(1)])
    (folder / "bad%1B%5D0%3Bx%07.jsonl").write_text("{not json\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "jsonl_session", "mirror", "--to", pg, "--dir", str(folder)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
    )
    try:
        assert process.stderr is not None
        seen = []
        for line in process.stderr:  # until the first catch-up is over
            seen.append(line)
            if line.startswith(b"caught up"):
                break
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
    shown = b"".join(seen) + out + err
    assert b"\x1b" not in shown and b"\x07" not in shown, shown
    assert b"bad\\x1b]0;x\\x07: failed" in shown


# -- 6. a dry run's summary says "would" --------------------------------------------------------------


@pytest.mark.parametrize("flag", ["--verify", "--dry-run"])
def test_verify_and_dry_run_summaries_say_would(folder: Path, database: str, flag: str) -> None:
    session(folder, "a").add_items_sync([turn(1), turn(2)])
    session(folder, "b").add_items_sync([turn(1)])
    catch_up_mirror_sync(folder, database)
    session(folder, "a").pop_item_sync()
    session(folder, "a").add_items_sync([turn(7)])
    session(folder, "c").add_items_sync([turn(1)])
    done = run(folder, "mirror", "--to", database, flag)
    summary = done.err.strip().splitlines()[-1]
    assert "1 would be rewritten" in summary and "1 would be created" in summary, summary
    assert "1 up to date" in summary
    assert sdk_view(database) != folder_view(folder)  # nothing written


# -- the Redis import's own reader reads exactly what the SDK's reads ----------------------------------


def test_redis_import_reads_long_integers_and_corrupted_rows_as_the_sdk_does(tmp_path: Path, rd: str) -> None:
    import redis

    from jsonl_session.transfer import import_all

    long_number = {"role": "user", "content": "n", "id": 1234567890123456789, "x": 2**53 + 1}
    client = redis.Redis.from_url(rd)
    try:
        client.hset(REDIS_PREFIX + "n", "session_id", "n")
        client.rpush(REDIS_PREFIX + "n:messages", text_of(turn(1)), b"{corrupted", text_of(long_number))
        # no long number in the session (checked once for all its rows): corrupted rows skipped still
        client.hset(REDIS_PREFIX + "m", "session_id", "m")
        client.rpush(REDIS_PREFIX + "m:messages", b"[1,\n", text_of(turn(1)), b"{corrupted", text_of(turn(2)))
    finally:
        client.close()
    outcomes = asyncio.run(import_all(rd, SessionDirectory(tmp_path / "back")))
    assert sorted((o.session_id, o.status) for o in outcomes) == [("m", "copied"), ("n", "copied")]
    expected = {"n": [turn(1), long_number], "m": [turn(1), turn(2)]}
    assert folder_view(tmp_path / "back") == sdk_view(rd) == expected
    assert type(folder_view(tmp_path / "back")["n"][1]["id"]) is int


def test_redis_rows_the_sdk_cannot_decode_as_utf_8_are_skipped_by_import_and_export(
    tmp_path: Path, rd: str
) -> None:
    """The SDK decodes a row as UTF-8, then parses it: a row with a byte order mark or in UTF-16,
    which ``json.loads`` of the raw bytes would read (it guesses the encoding), is skipped."""
    import redis

    from jsonl_session.transfer import export_all, import_all

    client = redis.Redis.from_url(rd)
    try:
        client.hset(REDIS_PREFIX + "b", "session_id", "b")
        rows = [
            text_of(turn(1)).encode(),
            b"\xef\xbb\xbf" + text_of(turn(2)).encode(),
            text_of(turn(3)).encode("utf-16-le"),
        ]
        client.rpush(REDIS_PREFIX + "b:messages", *rows)
    finally:
        client.close()
    assert sdk_view(rd) == {"b": [turn(1)]}
    outcomes = asyncio.run(import_all(rd, SessionDirectory(tmp_path / "back")))
    assert [(o.session_id, o.status) for o in outcomes] == [("b", "copied")]
    assert folder_view(tmp_path / "back") == {"b": [turn(1)]}
    # and an export compares with what the SDK reads there: the file is up to date
    (outcome,) = asyncio.run(export_all(SessionDirectory(tmp_path / "back"), rd))
    assert outcome.status == "skipped"
    assert sdk_view(rd) == {"b": [turn(1)]}


def test_the_live_mirror_deletes_nothing_while_its_folder_is_gone(folder: Path, pg: str) -> None:
    from process_helpers import wait_until
    from test_mirror import Running

    for n in range(3):
        session(folder, f"s{n}").add_items_sync([turn(n)])
    with Running(folder, pg, delete=True) as mirror:
        stored = sdk_view(pg)
        assert stored == folder_view(folder)
        folder.rename(folder.with_name("unmounted"))
        wait_until(lambda: len([o for o in mirror.outcomes if "folder is gone" in o.detail]) == 3)
        assert sdk_view(pg) == stored
        folder.with_name("unmounted").rename(folder)


def test_sqlite_a_foreign_writer_cannot_slip_in_between_the_count_and_the_write(
    folder: Path, tmp_path: Path
) -> None:
    import sqlite3

    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    path = tmp_path / "mirror.db"
    url = f"sqlite:///{path}"
    writer = session(folder, "s")
    writer.add_items_sync([turn(1), turn(2)])
    catch_up_mirror_sync(folder, url)
    writer.add_items_sync([turn(3), turn(4)])
    foreign: list[str] = []

    def just_before_the_insert(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if foreign or not statement.lstrip().upper().startswith("INSERT INTO AGENT_MESSAGES"):
            return
        # Another writer adds the same two turns the SDK's way, right before the mirror's insert.
        with contextlib.closing(sqlite3.connect(path, timeout=0, isolation_level=None)) as other:
            try:
                other.execute("BEGIN IMMEDIATE")
                other.executemany(
                    "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', ?)",
                    [(text_of(turn(3)),), (text_of(turn(4)),)],
                )
                other.execute("COMMIT")
                foreign.append("committed")
            except sqlite3.OperationalError as exc:  # the mirror holds the writer's lock
                foreign.append(str(exc))

    event.listen(Engine, "before_cursor_execute", just_before_the_insert)
    try:
        catch_up_mirror_sync(folder, url)
    finally:
        event.remove(Engine, "before_cursor_execute", just_before_the_insert)
    assert foreign == ["database is locked"]
    assert sdk_view(url) == folder_view(folder) == {"s": [turn(n) for n in (1, 2, 3, 4)]}


# -- 2 and 4 on the single-session path: export ID --to URL --as OTHER ----------------------------------


def test_a_single_export_under_an_id_the_backend_cannot_hold_is_refused_and_writes_nothing(
    folder: Path, rd: str, pg: str
) -> None:
    from jsonl_session.transfer import export_session

    session(folder, "a").add_items_sync([turn(1), turn(2)])
    session(folder, "b").add_items_sync([turn(9)])
    assert run(folder, "export", "a", "--to", rd).code == 0
    before = redis_keys(rd)

    done = run(folder, "export", "b", "--to", rd, "--as", "a:messages")
    assert done.code == 1, done
    assert len(done.err.strip().splitlines()) == 1 and ":messages" in done.err and "Traceback" not in done.err
    assert redis_keys(rd) == before and sdk_view(rd) == {"a": [turn(1), turn(2)]}

    (folder / "nul%00id.jsonl").write_text(json.dumps(turn(3)) + "\n")
    with pytest.raises(ValueError, match="NUL"):
        asyncio.run(export_session(session(folder, "nul\x00id"), pg))
    assert sdk_view(pg) == {}


def test_files_removed_one_by_one_while_the_mirror_follows_are_deleted_without_yes(
    folder: Path, pg: str
) -> None:
    """The mass-deletion guard is for one pass (a start, an outage); each removal the live
    mirror sees as it happens is one deletion, however many there are in the end."""
    from process_helpers import wait_until
    from test_mirror import Running

    for n in range(5):
        session(folder, f"s{n}").add_items_sync([turn(n)])
    with Running(folder, pg, delete=True, mass_delete=False) as mirror:
        for n in range(1, 5):
            gone = f"s{n}"
            SessionDirectory(folder).delete(gone)
            wait_until(lambda: gone not in sdk_view(pg))  # noqa: B023  (called before gone changes)
    assert sdk_view(pg) == folder_view(folder) == {"s0": [turn(0)]}
    assert sorted(o.session_id for o in mirror.outcomes if o.status == "deleted") == ["s1", "s2", "s3", "s4"]


def test_export_all_and_import_all_print_ids_escaped(tmp_path: Path, folder: Path, rd: str) -> None:
    import redis

    session(folder, "fine").add_items_sync([turn(1)])
    (folder / "evil%1B%5D0%3Bpwned%07.jsonl").write_text(json.dumps(turn(2)) + "\n")
    (folder / "bad%1B%5D0%3Bx%07.jsonl").write_text("{not json\n")  # named by its failed line
    exported = run(folder, "export", "--all", "--to", rd)
    client = redis.Redis.from_url(rd)
    try:  # a foreign key whose id is not UTF-8, with a BEL in it
        client.rpush(REDIS_PREFIX.encode() + b"raw\x07\xff:messages", text_of(turn(3)))
    finally:
        client.close()
    imported = run(tmp_path / "back", "import", rd, "--all")
    for done in (exported, imported):
        shown = done.out + done.err
        assert done.code == 1, done
        assert "\x1b" not in shown and "\x07" not in shown, shown
    assert "bad\\x1b]0;x\\x07: failed" in exported.out + exported.err, exported
    assert "raw\\x07\\xff" in imported.out + imported.err, imported
    assert folder_view(tmp_path / "back") == {"fine": [turn(1)], "evil\x1b]0;pwned\x07": [turn(2)]}
