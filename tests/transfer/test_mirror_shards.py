"""``mirror --to A --to B``: sessions spread over several real databases by the documented hash.

The rule (docs/backends.md): ``int.from_bytes(sha256(id.encode()).digest()[:8], "big") % N``,
URLs in the order given. It is recomputed here with ``hashlib`` alone, as another tool would,
and every session must be in exactly that database, read there by the SDK's own classes;
``import`` and ``--verify`` read all of them back.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import flush_redis, run
from pg_helpers import new_postgres_database
from process_helpers import wait_until
from test_mirror import (
    Running,
    folder_view,
    sdk_view,
    session,
    turn,
)

from jsonl_session import SessionDirectory

pytestmark = pytest.mark.sdk
pytest.importorskip("agents", reason="the Agents SDK (extra 'agents') is not installed")


@pytest.fixture(params=["postgresql", "redis"])
def two(request: pytest.FixtureRequest) -> list[str]:
    """Two empty databases: two PostgreSQL databases on one server, or Redis databases 1 and 2."""
    if request.param == "redis":
        base: str = request.getfixturevalue("redis_url").rsplit("/", 1)[0]
        urls = [f"{base}/1", f"{base}/2"]
        for url in urls:
            flush_redis(url)
        return urls
    server = request.getfixturevalue("postgres_url")
    return [new_postgres_database(server), new_postgres_database(server)]


def home(session_id: str, count: int) -> int:
    """The documented rule, written out as another program would."""
    return int.from_bytes(hashlib.sha256(session_id.encode("utf-8")).digest()[:8], "big") % count


def spread(folder: Path, urls: list[str]) -> dict[str, list[Any]]:
    """Where each stored session is, checked against the rule; all of them, merged."""
    merged: dict[str, list[Any]] = {}
    for index, url in enumerate(urls):
        stored = sdk_view(url)
        assert all(home(session_id, len(urls)) == index for session_id in stored), (index, sorted(stored))
        merged |= stored
    return merged


def test_sessions_go_to_the_database_their_id_hashes_to_and_come_back(tmp_path: Path, two: list[str]) -> None:
    folder = tmp_path / "sessions"
    for n in range(12):
        session(folder, f"convo_{n}").add_items_sync([turn(n), turn(n + 1, "assistant")])
    to = [arg for url in two for arg in ("--to", url)]

    done = run(folder, "mirror", *to, "--once")
    assert done.code == 0, done
    assert spread(folder, two) == folder_view(folder)
    assert all(sdk_view(url) for url in two)  # both hold some

    verify = run(folder, "mirror", *to, "--verify")
    assert verify.code == 0 and "12 up to date" in verify.err, verify

    back = tmp_path / "back"
    imported = run(back, "import", *two, "--all")
    assert imported.code == 0, imported
    assert folder_view(back) == folder_view(folder)

    one = run(tmp_path / "one", "import", *two, "--id", "convo_7")
    assert one.code == 0, one
    assert folder_view(tmp_path / "one") == {"convo_7": [turn(7), turn(8, "assistant")]}

    SessionDirectory(folder).delete("convo_3")
    session(folder, "convo_4").add_items_sync([turn(99)])
    done = run(folder, "mirror", *to, "--once", "--delete")
    assert done.code == 0, done
    assert spread(folder, two) == folder_view(folder)


def test_the_live_mirror_writes_each_change_to_the_sessions_home(tmp_path: Path, two: list[str]) -> None:
    folder = tmp_path / "sessions"
    for n in range(6):
        session(folder, f"s{n}").add_items_sync([turn(n)])
    with Running(folder, two):
        for n in range(6):
            session(folder, f"s{n}").add_items_sync([turn(100 + n)])
        session(folder, "new").add_items_sync([turn(1)])
        wait_until(lambda: spread(folder, two) == folder_view(folder))
    assert spread(folder, two) == folder_view(folder)
