"""Incremental copies: a destination that holds the first items of its source
gets only the missing tail; one that holds other items is reported as ``differs at item K`` and
left alone unless ``replace``; the same items are ``up to date``.

Against SQLite (the SDK's ``SQLiteSession`` and ``SQLAlchemySession`` on aiosqlite), a real
Redis and a real PostgreSQL, through the library and the CLI, single sessions and ``--all``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from test_transfer import TRICKY, in_process, many
from test_transfer_all import files, make_folder

from jsonl_session import JSONLSession, SessionDirectory
from jsonl_session.transfer.all_sessions import export_all, import_all
from jsonl_session.transfer.backends import open_url
from jsonl_session.transfer.compare import compare
from jsonl_session.transfer.single import export_session, import_session

pytestmark = pytest.mark.sdk
pytest.importorskip("agents", reason="the Agents SDK (extra 'agents') is not installed")


def remote_items(url: str, session_id: str) -> list[Any]:
    async def read() -> list[Any]:
        async with open_url(url, session_id) as remote:
            return list(await remote.get_items())

    return asyncio.run(read())


def add_remote(url: str, session_id: str, items: list[Any], *, pop: int = 0) -> None:
    """Write through the SDK's own session, as an application on that database would."""

    async def write() -> None:
        async with open_url(url, session_id) as remote:
            for _ in range(pop):
                await remote.pop_item()
            await remote.add_items(items)

    asyncio.run(write())


def test_compare_is_by_content_not_by_count() -> None:
    one, two = {"role": "user", "content": "a"}, {"role": "user", "content": "b"}
    assert compare([one, two], [one, two]).state == "up to date"
    assert compare([one, two], [one]) == compare([one, two], [one]).__class__("behind", 1)
    assert compare([one, two], [two, one]).describe() == "differs at item 1"
    assert compare([one, two], [one, {"n": 1}]).describe() == "differs at item 2"
    assert compare([{"n": 1}], [{"n": 1.0}]).state == "differs"  # 1 is not 1.0
    assert compare([{"a": 1, "b": 2}], [{"b": 2, "a": 1}]).state == "differs"  # key order is content too
    assert compare([one], [one, two]).describe() == "differs at item 2"  # the destination is ahead


def test_export_all_appends_only_the_new_tail_after_growth(url: str, tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    make_folder(folder, 4)
    first = asyncio.run(export_all(SessionDirectory(folder), url))
    assert {outcome.status for outcome in first} == {"copied"}
    JSONLSession("s001", folder).add_items_sync(many(3))
    again = {o.session_id: o for o in asyncio.run(export_all(SessionDirectory(folder), url))}
    assert (again["s001"].status, again["s001"].items, again["s001"].describe()) == (
        "appended",
        3,
        "appended 3 items",
    )
    assert {again[i].status for i in ("s000", "s002", "s003")} == {"skipped"}
    for session_id in ("s000", "s001", "s002", "s003"):
        assert remote_items(url, session_id) == JSONLSession(session_id, folder).get_items_sync()


def test_single_export_and_import_append_after_growth_on_either_side(url: str, sessions_dir: Path) -> None:
    local = JSONLSession("grow", sessions_dir)
    local.add_items_sync(TRICKY)
    assert asyncio.run(export_session(local, url)).status == "copied"
    local.add_items_sync(many(2))
    grown = asyncio.run(export_session(local, url))
    assert (grown.status, grown.items) == ("appended", 2)
    assert asyncio.run(export_session(local, url)).describe() == "up to date"
    assert remote_items(url, "grow") == local.get_items_sync()

    add_remote(url, "grow", many(5))  # the application went on in the database
    back = asyncio.run(import_session(url, "grow", local))
    assert (back.status, back.items) == ("appended", 5)
    assert local.get_items_sync() == remote_items(url, "grow")
    assert asyncio.run(import_session(url, "grow", local)).describe() == "up to date"


def test_import_all_appends_what_the_database_gained(url: str, tmp_path: Path) -> None:
    source, back = tmp_path / "source", tmp_path / "back"
    make_folder(source, 3)
    asyncio.run(export_all(SessionDirectory(source), url))
    assert {o.status for o in asyncio.run(import_all(url, SessionDirectory(back)))} == {"copied"}
    add_remote(url, "s002", [{"role": "user", "content": "later"}])
    outcomes = {o.session_id: o for o in asyncio.run(import_all(url, SessionDirectory(back)))}
    assert (outcomes["s002"].status, outcomes["s002"].items) == ("appended", 1)
    assert {outcomes["s000"].status, outcomes["s001"].status} == {"skipped"}
    assert JSONLSession("s002", back).get_items_sync() == remote_items(url, "s002")


def test_a_destination_that_differs_is_refused_at_item_k_unless_replace(url: str, tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    make_folder(folder, 2)
    asyncio.run(export_all(SessionDirectory(folder), url))
    count = len(JSONLSession("s001", folder).get_items_sync())
    add_remote(url, "s001", [{"role": "user", "content": "not ours"}], pop=2)  # item count-1 differs
    JSONLSession("s001", folder).add_items_sync(many(1))
    there = remote_items(url, "s001")
    outcome = {o.session_id: o for o in asyncio.run(export_all(SessionDirectory(folder), url))}["s001"]
    assert (outcome.status, outcome.describe()) == ("differs", f"differs at item {count - 1}")
    assert remote_items(url, "s001") == there  # never overwritten

    before = files(folder)
    imported = {o.session_id: o for o in asyncio.run(import_all(url, SessionDirectory(folder)))}["s001"]
    assert imported.describe() == f"differs at item {count - 1}" and files(folder) == before

    replaced = {
        o.session_id: o for o in asyncio.run(export_all(SessionDirectory(folder), url, replace=True))
    }["s001"]
    assert (replaced.status, replaced.items) == ("replaced", count + 1)
    assert remote_items(url, "s001") == JSONLSession("s001", folder).get_items_sync()


def test_cli_reports_appended_up_to_date_and_differs(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "sessions"
    make_folder(folder, 3)
    assert in_process(capsys, folder, "export", "--all", "--to", url).code == 0
    JSONLSession("s000", folder).add_items_sync(many(2))
    grown = in_process(capsys, folder, "export", "--all", "--to", url)
    assert grown.code == 0, grown.err
    assert grown.err.splitlines() == [
        "s000: appended 2 items",
        f"exported 0 sessions (0 items) to {url}; 1 appended (2 items), 2 up to date, 0 differ, 0 failed",
    ]
    single = in_process(capsys, folder, "export", "s000", "--to", url)
    assert (single.code, single.err) == (0, f"s000: up to date in {url} as s000\n")
    JSONLSession("s000", folder).add_items_sync(many(1))
    single = in_process(capsys, folder, "export", "s000", "--to", url)
    assert (single.code, single.err) == (0, f"s000: appended 1 item to {url} as s000\n")

    JSONLSession("s001", folder).pop_item_sync()
    JSONLSession("s001", folder).add_items_sync([{"role": "user", "content": "changed"}])
    n = len(JSONLSession("s001", folder).get_items_sync())
    refused = in_process(capsys, folder, "export", "s001", "--to", url)
    assert refused.code == 1
    assert refused.err == (
        f"jsonl-session: error: s001: differs at item {n} in {url} as s001; not overwritten "
        "(--replace overwrites it)\n"
    )
    every = in_process(capsys, folder, "export", "--all", "--to", url)
    assert every.code == 1 and every.err.splitlines()[0] == f"s001: differs at item {n}; not overwritten"
    forced = in_process(capsys, folder, "export", "s001", "--to", url, "--replace")
    assert (forced.code, forced.err) == (0, f"s001: replaced with {n} items to {url} as s001\n")
    assert remote_items(url, "s001") == JSONLSession("s001", folder).get_items_sync()

    back = tmp_path / "back"
    assert in_process(capsys, back, "import", url, "--id", "s002").code == 0
    add_remote(url, "s002", many(4))
    pulled = in_process(capsys, back, "import", url, "--id", "s002")
    assert (pulled.code, pulled.err) == (0, f"s002: appended 4 items from {url}\n")


def test_an_application_writing_during_the_export_is_never_interleaved(url: str, tmp_path: Path) -> None:
    """The compare runs inside the writing transaction: an item the application adds through the
    SDK while the export runs lands either after the whole copy, or before it (and the export
    then reports ``differs at item 1`` and writes nothing): never in the middle."""
    folder = tmp_path / "sessions"
    make_folder(folder, 24)
    app_item = {"role": "user", "content": "from the application"}

    async def both() -> dict[str, Any]:
        async def application() -> None:
            for n in range(24):
                async with open_url(url, f"s{n:03d}") as remote:
                    await remote.add_items([app_item])
                await asyncio.sleep(0)

        outcomes, _ = await asyncio.gather(export_all(SessionDirectory(folder), url), application())
        return {outcome.session_id: outcome for outcome in outcomes}

    outcomes = asyncio.run(both())
    for n in range(24):
        session_id = f"s{n:03d}"
        local, there = JSONLSession(session_id, folder).get_items_sync(), remote_items(url, session_id)
        if outcomes[session_id].status == "copied":
            assert there == [*local, app_item], session_id
        else:
            assert outcomes[session_id].describe() == "differs at item 1", session_id
            assert there == [app_item], session_id
