"""Whole-folder copies at their edges: progress, sessions the SDK wrote alone, a lock held
elsewhere, a file already up to date, sidecars grown after the export.

Each test here kills a mutant that survived the whole suite (mutation testing, ``mutation/``);
the docstrings name them. Against the real backends of ``test_incremental``.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from lock_helpers import shared_lock_elsewhere
from test_incremental import add_remote
from test_transfer_all import files, make_folder

from jsonl_session import JSONLSession, SessionDirectory
from jsonl_session.transfer.all_sessions import export_all, import_all

pytestmark = pytest.mark.sdk
pytest.importorskip("agents", reason="the Agents SDK (extra 'agents') is not installed")


def test_progress_counts_every_session_once_from_zero(url: str, tmp_path: Path) -> None:
    """Catches: the count of sessions done starting at 1 (PostgreSQL's batches)."""
    folder = tmp_path / "sessions"
    make_folder(folder, 5)
    seen: list[tuple[int, int]] = []
    asyncio.run(
        export_all(SessionDirectory(folder), url, progress=lambda done, total: seen.append((done, total)))
    )
    assert seen[0] == (0, 5) and seen[-1] == (5, 5)
    assert all(total == 5 for _, total in seen) and [done for done, _ in seen] == sorted(
        done for done, _ in seen
    )
    seen.clear()
    back = tmp_path / "back"
    asyncio.run(
        import_all(url, SessionDirectory(back), progress=lambda done, total: seen.append((done, total)))
    )
    assert seen[0] == (0, 5) and seen[-1] == (5, 5)


def test_a_session_the_sdk_wrote_alone_is_imported(url: str, tmp_path: Path) -> None:
    """A session an application wrote through the SDK has no companion (nothing is known of its
    sidecars). Catches: the per-session companion look made on every backend, not only Redis."""
    add_remote(url, "app", [{"role": "user", "content": "from the app"}])
    back = tmp_path / "back"
    [outcome] = asyncio.run(import_all(url, SessionDirectory(back)))
    assert (outcome.session_id, outcome.status, outcome.items) == ("app", "copied", 1)
    assert JSONLSession("app", back).get_items_sync() == [{"role": "user", "content": "from the app"}]


def test_an_import_waits_for_a_reader_elsewhere_and_changes_nothing(tmp_path: Path) -> None:
    """An import rewrites the file: it takes the exclusive lock, so a reader in another process
    holding the shared one makes it wait (here: give up, the file untouched).

    Catches: the import's rewrite made under the shared lock, beside the other reader."""
    folder = tmp_path / "sessions"
    make_folder(folder, 1)
    database = f"sqlite:///{tmp_path / 'all.db'}"
    asyncio.run(export_all(SessionDirectory(folder), database))
    add_remote(database, "s000", [{"role": "user", "content": "more"}])
    before = files(folder)
    with shared_lock_elsewhere(folder / "s000.jsonl"):
        [outcome] = asyncio.run(import_all(database, SessionDirectory(folder, lock_timeout=0.3)))
    assert outcome.status == "failed" and "lock not acquired" in outcome.detail
    assert outcome.detail.startswith(str(folder / "s000.jsonl"))  # our own errors: no class name
    assert files(folder) == before


def test_an_up_to_date_file_keeps_its_own_time(tmp_path: Path) -> None:
    """An import that writes nothing touches nothing: not even the file's time.

    Catches: the exported time put back on a file the import did not write."""
    folder = tmp_path / "sessions"
    make_folder(folder, 1)
    database = f"sqlite:///{tmp_path / 'all.db'}"
    asyncio.run(export_all(SessionDirectory(folder), database))
    path = folder / "s000.jsonl"
    os.utime(path, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    [outcome] = asyncio.run(import_all(database, SessionDirectory(folder)))
    assert outcome.status == "skipped"
    assert path.stat().st_mtime_ns == 1_700_000_000_000_000_000


def test_items_put_back_as_exported_bring_the_exported_sidecars(tmp_path: Path) -> None:
    """When an import makes the file exactly what was exported, its sidecars become the
    exported ones too, even one that grew here since (a round trip is identical under diff).

    Catches: a grown sidecar kept although the items written are the exported ones."""
    folder = tmp_path / "sessions"
    make_folder(folder, 1)
    usage = folder / "s000.jsonl.usage"
    usage.write_text('{"requests": 1}\n')
    database = f"sqlite:///{tmp_path / 'all.db'}"
    asyncio.run(export_all(SessionDirectory(folder), database))
    exported = files(folder)["s000"]
    JSONLSession("s000", folder).pop_item_sync()
    usage.write_text('{"requests": 1}\n{"requests": 2}\n')  # grew after the export
    [outcome] = asyncio.run(import_all(database, SessionDirectory(folder)))
    assert outcome.status == "appended"
    assert files(folder)["s000"] == exported
    assert usage.read_text() == '{"requests": 1}\n'


def test_a_row_the_database_refuses_fails_its_session_alone_in_a_batch(tmp_path: Path) -> None:
    """Sessions go to SQL databases in batches, one transaction each; a row the database
    refuses (here a trigger an application added) spoils its batch, which is then written
    session by session, so that only that session fails.

    Catches: the data error raised (stopping the whole run) and other errors retried instead."""
    pytest.importorskip("aiosqlite")
    import sqlite3

    folder = tmp_path / "sessions"
    make_folder(folder, 2)
    database = tmp_path / "all.db"
    target = f"sqlite+aiosqlite:///{database}"
    asyncio.run(export_all(SessionDirectory(folder), target))  # the tables exist now
    with sqlite3.connect(database) as db:
        db.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON agent_messages WHEN NEW.message_data LIKE '%poison%' "
            "BEGIN SELECT RAISE(ABORT, 'refused by the application'); END"
        )
    for session_id in ("a", "p", "z"):
        content = "poison" if session_id == "p" else "fine"
        JSONLSession(session_id, folder).add_items_sync([{"role": "user", "content": content}])
    outcomes = {
        outcome.session_id: outcome for outcome in asyncio.run(export_all(SessionDirectory(folder), target))
    }
    assert outcomes["p"].status == "failed"
    assert outcomes["p"].detail.startswith("IntegrityError: ")  # whose error it is
    assert "refused by the application" in outcomes["p"].detail
    assert outcomes["p"].items == 0  # nothing of it was written
    assert (outcomes["a"].status, outcomes["z"].status) == ("copied", "copied")


def test_the_sdks_own_calls_copy_as_the_batches_do(tmp_path: Path) -> None:
    """Databases without a batched path (MySQL, ...) get each session through the SDK's own
    ``SQLAlchemySession`` calls. None of them runs here, so the same calls run on SQLite:
    a first copy, an up-to-date re-run, growth, an empty session, a destination that differs.

    Catches: the up-to-date check turned around (written again or never), the empty session
    never stored."""
    pytest.importorskip("aiosqlite")
    from test_incremental import remote_items

    from jsonl_session.transfer import sql_store
    from jsonl_session.transfer.all_sessions import _through_the_sdk, prepare
    from jsonl_session.transfer.backends import open_backend

    target = f"sqlite+aiosqlite:///{tmp_path / 'sdk.db'}"
    first, more = [{"role": "user", "content": "q"}], [{"role": "assistant", "content": "a"}]

    async def copy(session_id: str, items: list[Any], *, replace: bool = False) -> tuple[str, int]:
        async with open_backend(target) as backend:
            await prepare(backend)
            outcome = await _through_the_sdk(backend, sql_store.Job(session_id, items, {}), replace)
            return outcome.status, outcome.items

    assert asyncio.run(copy("s", first)) == ("copied", 1)
    assert asyncio.run(copy("s", first)) == ("skipped", 1)
    assert asyncio.run(copy("s", first + more)) == ("appended", 1)
    assert remote_items(target, "s") == first + more
    assert asyncio.run(copy("s", more))[0] == "differs"
    assert remote_items(target, "s") == first + more
    assert asyncio.run(copy("s", more, replace=True))[0] == "replaced"
    assert remote_items(target, "s") == more
    assert asyncio.run(copy("empty", []))[1] == 0  # stored, though it cannot tell it was not there

    async def ids() -> list[str]:
        async with open_backend(target) as backend:
            return sorted((await backend.listing())[0])

    assert asyncio.run(ids()) == ["empty", "s"]


def test_an_error_not_about_one_session_stops_the_run_and_the_waiting_sessions(tmp_path: Path) -> None:
    """An error that is not about one session's data (here the file system refuses a write:
    a folder sits where a sidecar goes) stops the whole run; the sessions still waiting for
    their turn are cancelled, not copied after the error was raised.

    Catches: the waiting sessions left running (they were all imported behind the error), or
    left to the caller's loop."""
    folder = tmp_path / "sessions"
    make_folder(folder, 5)
    database = f"sqlite:///{tmp_path / 'all.db'}"
    asyncio.run(export_all(SessionDirectory(folder), database))
    back = tmp_path / "back"
    back.mkdir()
    (back / "s001.jsonl.times").mkdir()

    async def run_then_let_the_rest_finish() -> None:
        with pytest.raises(IsADirectoryError):
            await import_all(database, SessionDirectory(back), concurrency=1)
        others = asyncio.all_tasks() - {asyncio.current_task()}
        await asyncio.gather(*others, return_exceptions=True)  # whatever was left running ends

    asyncio.run(run_then_let_the_rest_finish())
    assert not {"s003", "s004"} & set(files(back))


def test_an_empty_session_imported_anew_is_copied_with_no_items(tmp_path: Path) -> None:
    """Catches: the empty session's outcome counting an item it does not have."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "empty.jsonl").write_bytes(b"")
    database = f"sqlite:///{tmp_path / 'all.db'}"
    asyncio.run(export_all(SessionDirectory(folder), database))
    [outcome] = asyncio.run(import_all(database, SessionDirectory(tmp_path / "back")))
    assert (outcome.session_id, outcome.status, outcome.items) == ("empty", "copied", 0)
    assert (tmp_path / "back" / "empty.jsonl").read_bytes() == b""


def test_sessions_that_fail_count_no_items(tmp_path: Path) -> None:
    """A session that cannot be read here, a row whose id no file can have, an item no line can
    hold exactly: each fails with 0 items copied, or all of its items counted as not imported.

    Catches: a failed outcome counting 1 or -1 items; an item this format cannot store raising
    out of the import instead of failing its session with "nothing imported"."""
    import sqlite3

    folder = tmp_path / "sessions"
    make_folder(folder, 1)
    (folder / "bad.jsonl").write_bytes(b'{"role": "user"}\nnot json\n')
    database = tmp_path / "all.db"
    outcomes = {
        o.session_id: o for o in asyncio.run(export_all(SessionDirectory(folder), f"sqlite:///{database}"))
    }
    assert (outcomes["bad"].status, outcomes["bad"].items) == ("failed", 0)
    big = '{"role": "user", "content": "n", "n": 123456789012345678901234567890}'
    with sqlite3.connect(database) as db:
        db.execute("INSERT INTO agent_messages (session_id, message_data) VALUES ('', '{}')")
        db.execute("INSERT INTO agent_sessions (session_id) VALUES ('big')")
        db.execute("INSERT INTO agent_messages (session_id, message_data) VALUES ('big', ?)", (big,))
        db.execute("INSERT INTO agent_messages (session_id, message_data) VALUES ('big', '{}')")
    back = tmp_path / "back"
    imported = asyncio.run(import_all(f"sqlite:///{database}", SessionDirectory(back)))
    foreign = [o for o in imported if o.status == "failed" and o.session_id != "big"]  # the empty id
    assert len(foreign) == 1 and foreign[0].items == 0
    [too_big] = [o for o in imported if o.session_id == "big"]
    assert (too_big.status, too_big.items) == ("failed", 2)
    assert too_big.detail.endswith("; nothing imported") and not (back / "big.jsonl").exists()


def test_an_export_reads_beside_a_reader_elsewhere(tmp_path: Path) -> None:
    """An export only reads the files: it shares the lock with other readers, never waits for them.

    Catches: the export's read made under the exclusive lock (it gave up beside a reader)."""
    folder = tmp_path / "sessions"
    make_folder(folder, 1)
    with shared_lock_elsewhere(folder / "s000.jsonl"):
        [outcome] = asyncio.run(
            export_all(SessionDirectory(folder, lock_timeout=0.3), f"sqlite:///{tmp_path / 'all.db'}")
        )
    assert outcome.status == "copied", outcome.detail
