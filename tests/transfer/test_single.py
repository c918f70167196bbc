"""``transfer.single``: one session to or from a real SQLite backend, by the folder copies' rules.

Incremental, never overwriting (the same items are ``skipped``, a target holding the first
items gets the rest ``appended``, one holding others ``differs``), and verify before writing
(an item this format cannot store exactly writes nothing); metadata travels, so nothing is
left behind.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from jsonl_session import JSONLSession, SessionDirectory
from jsonl_session.transfer.backends import open_url
from jsonl_session.transfer.single import export_session, import_session, metadata_left_behind
from jsonl_session.transfer.urls import quotes_password, shown_url

pytestmark = pytest.mark.sdk
pytest.importorskip("agents", reason="the Agents SDK (extra 'agents') is not installed")

ITEMS = [
    {"role": "user", "content": "naïve café 東京 🚀"},
    {
        "role": "assistant",
        "content": [{"type": "output_text", "text": "ok", "annotations": []}],
        "n": 2**63 - 1,
    },
]


def remote_items(url: str, session_id: str) -> list[Any]:
    async def read() -> list[Any]:
        async with open_url(url, session_id) as remote:
            return list(await remote.get_items())

    return asyncio.run(read())


def store_remote(url: str, session_id: str, items: list[Any]) -> None:
    async def write() -> None:
        async with open_url(url, session_id) as remote:
            await remote.add_items(items)

    asyncio.run(write())


def test_export_copies_then_appends_and_never_overwrites(tmp_path: Path, sessions_dir: Path) -> None:
    url = f"sqlite:///{tmp_path / 'chats.db'}"
    source = JSONLSession("convo", sessions_dir)
    source.add_items_sync(ITEMS)
    progress: list[tuple[int, int]] = []
    outcome = asyncio.run(export_session(source, url, progress=lambda *call: progress.append(call)))
    assert (outcome.session_id, outcome.status, outcome.items) == ("convo", "copied", 2)
    assert progress == [(0, 2), (2, 2)]
    assert remote_items(url, "convo") == ITEMS

    again = asyncio.run(export_session(source, url))  # the same items there: left alone
    assert (again.status, again.items) == ("skipped", 2)
    source.add_items_sync([{"role": "user", "content": "more"}])
    grown = asyncio.run(export_session(source, url))
    assert (grown.status, grown.items) == ("appended", 1)
    assert remote_items(url, "convo") == source.get_items_sync()
    source.pop_item_sync()
    source.add_items_sync([{"role": "user", "content": "other"}])
    other = asyncio.run(export_session(source, url))
    assert other.status == "differs" and other.at == 2 and "not overwritten" in other.detail
    assert remote_items(url, "convo") == [*ITEMS, {"role": "user", "content": "more"}]

    renamed = asyncio.run(export_session(source, url, "copy"))
    assert (renamed.session_id, renamed.status, renamed.items) == ("copy", "copied", 3)
    assert asyncio.run(export_session(source, url, replace=True)).status == "replaced"
    assert remote_items(url, "convo") == source.get_items_sync()


def test_import_writes_everything_at_once_then_appends_what_the_backend_gained(
    tmp_path: Path, sessions_dir: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'chats.db'}"
    store_remote(url, "remote", ITEMS)
    target = JSONLSession("local", sessions_dir)
    progress: list[tuple[int, int]] = []
    outcome = asyncio.run(import_session(url, "remote", target, progress=lambda *call: progress.append(call)))
    assert (outcome.session_id, outcome.status, outcome.items) == ("local", "copied", 2)
    assert progress == [(0, 2), (2, 2)]
    assert target.get_items_sync() == ITEMS

    before = target.path.read_bytes()
    assert asyncio.run(import_session(url, "remote", target)).status == "skipped"
    store_remote(url, "remote", [{"role": "user", "content": "later"}])
    assert asyncio.run(import_session(url, "remote", target)).status == "appended"
    assert target.get_items_sync() == [*ITEMS, {"role": "user", "content": "later"}]
    target.pop_item_sync()
    target.add_items_sync([{"role": "user", "content": "mine"}])
    before = target.path.read_bytes()
    differs = asyncio.run(import_session(url, "remote", target))
    assert (differs.status, differs.describe()) == ("differs", "differs at item 3")
    assert target.path.read_bytes() == before


def test_import_verifies_every_item_before_writing_any(tmp_path: Path, sessions_dir: Path) -> None:
    url = f"sqlite:///{tmp_path / 'odd.db'}"
    store_remote(url, "odd", [{"role": "user", "content": "fine"}, {"role": "user", "n": 2**70}])
    target = JSONLSession("odd", sessions_dir)
    outcome = asyncio.run(import_session(url, "odd", target))
    assert outcome.status == "failed" and outcome.items == 2
    assert "item 1 cannot be stored faithfully" in outcome.detail and "nothing imported" in outcome.detail
    assert not target.path.exists()


def test_import_of_an_id_with_no_items_writes_nothing(tmp_path: Path, sessions_dir: Path) -> None:
    url = f"sqlite:///{tmp_path / 'chats.db'}"
    store_remote(url, "there", ITEMS)
    target = JSONLSession("nope", sessions_dir)
    outcome = asyncio.run(import_session(url, "nope", target))
    assert (outcome.status, outcome.items) == ("failed", 0) and "no items" in outcome.detail
    assert not target.path.exists()


def test_metadata_left_behind_is_nothing_now_that_it_travels(sessions_dir: Path, tmp_path: Path) -> None:
    folder = SessionDirectory(sessions_dir)
    source = folder.open("source")
    source.add_items_sync(ITEMS)
    fork = folder.fork("source", "fork", at=1)
    assert metadata_left_behind(fork) == []
    url = f"sqlite:///{tmp_path / 'chats.db'}"
    asyncio.run(export_session(fork, url))
    back = folder.open("back")
    assert asyncio.run(import_session(url, "fork", back)).status == "copied"
    assert (
        back.path.with_name("back.jsonl.lineage").read_bytes()
        == fork.path.with_name("fork.jsonl.lineage").read_bytes()
    )


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://localhost:6379/0", "redis://localhost:6379/0"),
        ("redis://:hunter2@localhost/0", "redis://:***@localhost/0"),
        ("postgresql://me:hun/ter@2@db:5432/chats", "postgresql://me:***@db:5432/chats"),
    ],
)
def test_shown_url_masks_the_whole_password(url: str, shown: str) -> None:
    assert shown_url(url) == shown


def test_quotes_password_finds_pieces_a_driver_split_off() -> None:
    url = "redis://user:hun/ter2@127.0.0.1:1/0"
    assert quotes_password("Port could not be cast to integer value as 'hun'", url)
    assert quotes_password("bad ter2", url)
    assert not quotes_password("Connection refused", url)
    assert not quotes_password("anything", "redis://localhost/0")
