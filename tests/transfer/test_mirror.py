"""``mirror``: a real PostgreSQL and a real Redis kept equal to a folder, once and live.

Every comparison reads the database through the Agents SDK's own ``SQLAlchemySession`` and
``RedisSession`` (``sdk_view``), in this process or in another one (``sdk_view_elsewhere``):
what the mirror promises is that the SDK reads exactly what ``get_items()`` reads from the files.
The outages (``kill -9``, a database restarted) are in ``test_mirror_outages.py``, the
state machine of folder operations in ``test_mirror_states.py``.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run
from process_helpers import wait_until
from test_transfer import TRICKY

from jsonl_session import JSONLSession, SessionDirectory
from jsonl_session.transfer import (
    MirrorOutcome,
    RedisClusterRefused,
    catch_up_mirror,
    catch_up_mirror_sync,
    mirror_folder,
)
from jsonl_session.transfer.mirror.plan import plan

pytestmark = pytest.mark.sdk
pytest.importorskip("agents", reason="the Agents SDK (extra 'agents') is not installed")

# -- the databases, and what the SDK reads there ---------------------------------------------------


async def sdk_view_async(url: str) -> dict[str, list[Any]]:
    """Every session stored at ``url`` (empty ones too) and its items, as the SDK's classes read them."""
    from jsonl_session.transfer import open_backend

    async with open_backend(url) as backend:
        view = {}
        for session_id in await backend.session_ids():
            session = backend.session(session_id)  # the SDK's SQLAlchemySession / RedisSession
            try:
                view[session_id] = await session.get_items()
            finally:
                backend.done(session)
        return view


def sdk_view(url: str) -> dict[str, list[Any]]:
    return asyncio.run(sdk_view_async(url))


_ELSEWHERE = """
import asyncio, json, sys
url, ids = sys.argv[1], json.loads(sys.argv[2])

async def main():
    out = {}
    if url.startswith("redis"):
        from agents.extensions.memory.redis_session import RedisSession
        for session_id in ids:
            session = RedisSession.from_url(session_id, url=url)
            out[session_id] = await session.get_items()
            await session.close()
    else:
        from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
        from sqlalchemy.ext.asyncio import create_async_engine
        engine = create_async_engine(url.replace("postgresql://", "postgresql+asyncpg://", 1))
        for session_id in ids:
            out[session_id] = await SQLAlchemySession(session_id, engine=engine).get_items()
        await engine.dispose()
    print(json.dumps(out))

asyncio.run(main())
"""


def sdk_view_elsewhere(url: str, ids: list[str]) -> dict[str, list[Any]]:
    """The items of ``ids`` read by the SDK's own classes, opened by URL in another process."""
    done = subprocess.run(
        [sys.executable, "-c", _ELSEWHERE, url, json.dumps(ids)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result: dict[str, list[Any]] = json.loads(done.stdout)
    return result


def folder_view(directory: Path) -> dict[str, list[Any]]:
    """Every session of the folder and its items, as ``get_items()`` reads them."""
    folder = SessionDirectory(directory)
    return {session_id: folder.open(session_id).get_items_sync() for session_id in folder.ids()}


def equal_soon(directory: Path, url: str, *, delete: bool = True, timeout: float = 20) -> None:
    """Wait until the database holds exactly the folder's sessions (``delete``) or at least them."""
    last: list[Any] = []

    def equal() -> bool:
        files, stored = folder_view(directory), sdk_view(url)
        last[:] = [files, stored]
        if delete:
            return files == stored
        return all(stored.get(session_id) == items for session_id, items in files.items())

    try:
        wait_until(equal, timeout)
    except AssertionError:
        files, stored = last
        for session_id in sorted(set(files) | set(stored)):
            if files.get(session_id) != stored.get(session_id):
                print(session_id, "file:", files.get(session_id), "db:", stored.get(session_id))
        raise


class Running:
    """``mirror_folder`` in a thread of its own, stopped (what the files hold mirrored) on exit."""

    def __init__(self, directory: Path | SessionDirectory, url: str | list[str], **options: Any) -> None:
        self.stop = threading.Event()
        self.outcomes: list[MirrorOutcome] = []
        self.notices: list[str] = []
        self.error: BaseException | None = None
        options.setdefault("report", self.outcomes.append)
        options.setdefault("notice", self.notices.append)
        self._thread = threading.Thread(target=self._run, args=(directory, url, options), daemon=True)

    def _run(self, directory: Path | SessionDirectory, url: str | list[str], options: dict[str, Any]) -> None:
        try:
            asyncio.run(mirror_folder(directory, url, stop_event=self.stop, **options))
        except BaseException as exc:  # noqa: BLE001  (the test raises it)
            self.error = exc

    def caught_up(self) -> bool:
        if self.error is not None:
            raise self.error
        return any(notice.startswith("caught up") for notice in self.notices)

    def __enter__(self) -> Running:  # noqa: PYI034  (never subclassed)
        self._thread.start()
        wait_until(self.caught_up, 30, "the first catch-up")
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self._thread.join(30)
        assert not self._thread.is_alive(), "the mirror did not stop"
        if self.error is not None and exc[0] is None:
            raise self.error


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path / "sessions"


def session(directory: Path, session_id: str) -> JSONLSession:
    return JSONLSession(session_id, directory, durable=False)


def empty_file(directory: Path, session_id: str) -> None:
    """A session file without items, made by another tool (``touch``)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{session_id}.jsonl").touch(mode=0o600)


def turn(n: int, who: str = "user") -> dict[str, Any]:
    return {"role": who, "content": f"message {n}"}


# -- the smallest difference (pure) ----------------------------------------------------------------


def test_the_plan_keeps_the_longest_common_prefix_and_is_idempotent() -> None:
    assert plan(["a", "b"], ["a", "b", "c"]) == plan([], ["a", "b", "c"], first=2)
    assert plan(['"a"', '"b"', '"x"'], ['"a"', '"b"', '"c"', '"d"']).keep == 2
    assert plan(['"x"'], []).remove == 1 and not plan(['"x"'], []).add
    assert not plan(['"a"'], ['"a"']).changes
    # Compared by content: another encoder's text of the same value is the same item; 1 is not true.
    assert not plan(['{"a": [1, 2.5]}'], ['{"a":[1,2.5]}']).changes
    assert plan(['{"a":true}'], ['{"a":1}']).keep == 0
    assert plan([b"\xff not utf-8", b"{]"], ['"a"', '"b"']).keep == 0  # rows the SDK skips: replaced


# -- catching up once ------------------------------------------------------------------------------


def test_catch_up_creates_appends_rewrites_and_then_finds_everything_the_same(
    folder: Path, database: str
) -> None:
    session(folder, "grows").add_items_sync(TRICKY)
    empty_file(folder, "empty")
    outcomes = {o.session_id: o for o in catch_up_mirror_sync(folder, database)}
    assert outcomes["grows"] == MirrorOutcome("grows", "created", 4, 0, 0, 4)
    assert outcomes["empty"].status == "created" and outcomes["empty"].items == 0
    assert sdk_view(database) == folder_view(folder) == {"grows": TRICKY, "empty": []}

    session(folder, "grows").add_items_sync([turn(5)])
    session(folder, "empty").add_items_sync([turn(1)])
    outcomes = {o.session_id: o for o in catch_up_mirror_sync(folder, database)}
    assert outcomes["grows"] == MirrorOutcome("grows", "appended", 5, 4, 0, 1)
    assert outcomes["empty"].status == "appended"

    rewritten = session(folder, "grows")
    rewritten.pop_item_sync()
    rewritten.pop_item_sync()
    rewritten.add_items_sync([turn(7), turn(8, "assistant")])
    outcomes = {o.session_id: o for o in catch_up_mirror_sync(folder, database)}
    assert outcomes["grows"] == MirrorOutcome("grows", "rewritten", 5, 3, 2, 2)
    assert outcomes["empty"].status == "same"
    assert sdk_view(database) == folder_view(folder)
    assert [o.status for o in catch_up_mirror_sync(folder, database)] == ["same", "same"]


def test_deletions_propagate_only_when_asked(folder: Path, database: str) -> None:
    for name in ("kept", "gone"):
        session(folder, name).add_items_sync([turn(1)])
    catch_up_mirror_sync(folder, database)
    SessionDirectory(folder).delete("gone")

    outcomes = catch_up_mirror_sync(folder, database)
    assert [(o.session_id, o.status) for o in outcomes] == [("kept", "same"), ("gone", "kept")]
    assert set(sdk_view(database)) == {"kept", "gone"}

    dry = catch_up_mirror_sync(folder, database, delete=True, dry_run=True)
    assert [(o.session_id, o.status, o.removed) for o in dry][-1] == ("gone", "deleted", 1)
    assert set(sdk_view(database)) == {"kept", "gone"}  # a dry run writes nothing

    catch_up_mirror_sync(folder, database, delete=True)
    assert sdk_view(database) == folder_view(folder) == {"kept": [turn(1)]}


def test_a_dry_run_writes_nothing_and_says_what_it_would_do(folder: Path, database: str) -> None:
    session(folder, "a").add_items_sync([turn(1), turn(2)])
    outcomes = catch_up_mirror_sync(folder, database, dry_run=True)
    assert [(o.status, o.appended) for o in outcomes] == [("created", 2)]
    assert outcomes[0].describe(dry_run=True) == "a: would create with 2 items"
    assert sdk_view(database) == {}


# -- the command line ------------------------------------------------------------------------------


def test_cli_verify_dry_run_once_and_json(folder: Path, database: str) -> None:
    session(folder, "a").add_items_sync([turn(1), turn(2)])
    session(folder, "b").add_items_sync([turn(1)])

    verify = run(folder, "mirror", "--to", database, "--verify")
    assert verify.code == 1
    assert verify.out.splitlines() == ["a: would create with 2 items", "b: would create with 1 item"]
    assert "verified: 2 sessions" in verify.err and "2 would be created" in verify.err

    dry = run(folder, "mirror", "--to", database, "--dry-run", "--json")
    assert dry.code == 0
    assert json.loads(dry.out.splitlines()[0]) == {
        "session_id": "a",
        "status": "created",
        "items": 2,
        "at": 0,
        "removed": 0,
        "appended": 2,
    }
    assert sdk_view(database) == {}

    once = run(folder, "mirror", "--to", database, "--once")
    assert once.code == 0 and "caught up: 2 sessions" in once.err
    assert sdk_view(database) == folder_view(folder)

    verify = run(folder, "mirror", "--to", database, "--verify", "--json")
    assert verify.code == 0
    assert [json.loads(line)["status"] for line in verify.out.splitlines()] == ["same", "same"]


def test_cli_errors_are_one_line_with_exit_codes(folder: Path, redis_url: str) -> None:
    from cli_helpers import free_port

    down = run(folder, "mirror", "--to", f"redis://:hunter2@127.0.0.1:{free_port()}/0", "--once")
    assert down.code == 1 and len(down.err.splitlines()) == 1
    assert "hunter2" not in down.err and "redis://:***@127.0.0.1" in down.err
    assert run(folder, "mirror", "--to", "nothing-like-a-url", "--once").code == 2
    both = run(folder, "mirror", "--to", redis_url, "--once", "--verify")
    assert both.code == 2 and "not allowed with" in both.err


# -- following live --------------------------------------------------------------------------------


def test_live_appends_pops_clears_rewrites_deletes_and_new_sessions(folder: Path, database: str) -> None:
    session(folder, "old").add_items_sync([turn(1), turn(2)])
    with Running(folder, database, delete=True) as mirror:
        assert {o.session_id: o.status for o in mirror.outcomes} == {"old": "created"}
        talk = session(folder, "talk")
        talk.add_items_sync([turn(1)])
        equal_soon(folder, database)
        talk.add_items_sync([turn(2), turn(3, "assistant")])
        equal_soon(folder, database)
        talk.pop_item_sync()
        equal_soon(folder, database)
        talk.replace_items_sync([turn(9), *TRICKY])
        equal_soon(folder, database)
        session(folder, "old").clear_session_sync()
        equal_soon(folder, database)
        assert sdk_view(database)["old"] == []  # cleared: the session stays, empty
        SessionDirectory(folder).delete("old")
        equal_soon(folder, database)
        SessionDirectory(folder).fork("talk", "fork", at=2)
        session(folder, "user/42 é").add_items_sync([turn(1), {"role": "user", "content": "東京 🚀"}])
        empty_file(folder, "new-empty")  # a watch delivers no change for it: adopted by the mirror
        equal_soon(folder, database)
        assert sdk_view(database)["new-empty"] == []
        statuses = [(o.session_id, o.status) for o in mirror.outcomes]
        assert ("talk", "appended") in statuses and ("talk", "rewritten") in statuses
        assert ("old", "deleted") in statuses
    files = folder_view(folder)
    assert sdk_view_elsewhere(database, sorted(files)) == files


def test_live_deletions_are_kept_by_default(folder: Path, database: str) -> None:
    session(folder, "a").add_items_sync([turn(1)])
    with Running(folder, database) as mirror:
        SessionDirectory(folder).delete("a")
        wait_until(lambda: ("a", "kept") in [(o.session_id, o.status) for o in mirror.outcomes])
        session(folder, "a").add_items_sync([turn(2)])  # re-created: the database follows the new one
        equal_soon(folder, database)


def test_a_mirror_started_again_catches_up_on_what_it_missed(folder: Path, database: str) -> None:
    for n in range(5):
        session(folder, f"s{n}").add_items_sync([turn(k) for k in range(n + 1)])
    with Running(folder, database, delete=True):
        equal_soon(folder, database)
    # While no mirror runs: appends, a pop, a rewrite, a deletion, a new session.
    session(folder, "s0").add_items_sync([turn(10)])
    session(folder, "s1").pop_item_sync()
    session(folder, "s2").replace_items_sync([turn(20)])
    SessionDirectory(folder).delete("s3")
    session(folder, "s5").add_items_sync([turn(50)])
    with Running(folder, database, delete=True) as mirror:
        equal_soon(folder, database)
        counts = {o.session_id: o.status for o in mirror.outcomes}
    assert counts == {
        "s0": "appended",
        "s1": "rewritten",
        "s2": "rewritten",
        "s3": "deleted",
        "s4": "same",
        "s5": "created",
    }
    assert any("caught up" in notice and "1 appended" in notice for notice in mirror.notices)


def test_a_malformed_file_fails_alone(folder: Path, database: str) -> None:
    from cli_helpers import write_lines

    session(folder, "fine").add_items_sync([turn(1)])
    write_lines(folder / "bad.jsonl", ['{"role": "user", "content": "ok"}', "{not json"])
    outcomes = {o.session_id: o for o in catch_up_mirror_sync(folder, database)}
    assert outcomes["bad"].status == "failed" and "bad.jsonl:2" in outcomes["bad"].detail
    assert outcomes["fine"].status == "created"
    with Running(folder, database) as mirror:
        assert any(o.session_id == "bad" and o.status == "failed" for o in mirror.outcomes)
        session(folder, "fine").add_items_sync([turn(2)])
        wait_until(lambda: sdk_view(database)["fine"] == [turn(1), turn(2)])


def test_another_writer_in_the_database_is_overwritten_at_the_next_comparison(
    folder: Path, database: str
) -> None:
    session(folder, "a").add_items_sync([turn(1), turn(2)])
    catch_up_mirror_sync(folder, database)

    async def meddle() -> None:
        from jsonl_session.transfer import open_backend

        async with open_backend(database) as backend:
            remote = backend.session("a")
            await remote.pop_item()
            await remote.add_items([turn(99), turn(98)])

    asyncio.run(meddle())
    outcome = catch_up_mirror_sync(folder, database)[0]
    assert (outcome.status, outcome.at, outcome.removed, outcome.appended) == ("rewritten", 1, 2, 1)
    assert sdk_view(database) == folder_view(folder)


# -- Redis Cluster ---------------------------------------------------------------------------------


@pytest.fixture
def cluster_node(tmp_path: Path) -> Iterator[str]:
    """A redis-server started in cluster mode (one node, no slots: enough to be refused)."""
    from cli_helpers import start_redis_server, stop_process

    process, port = start_redis_server(tmp_path, cluster=True)
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop_process(process)


def test_a_cluster_node_starts_on_a_port_above_55535(tmp_path: Path) -> None:
    """Regression: the node's bus port was its port + 10000, no port at all above 55535, so the
    server exited and the fixture handed tests a dead address (a CI run drew port 59025)."""
    from cli_helpers import start_redis_server, stop_process

    port = next(p for p in range(65000, 55535, -7) if _port_is_free(p))
    process, started = start_redis_server(tmp_path, cluster=True, port=port)
    try:
        with socket.create_connection(("127.0.0.1", started), timeout=10) as connection:
            connection.sendall(b"PING\r\n")
            assert connection.recv(64) == b"+PONG\r\n"
    finally:
        stop_process(process)


def _port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def test_a_redis_cluster_is_refused_with_a_clear_message(folder: Path, cluster_node: str) -> None:
    session(folder, "a").add_items_sync([turn(1)])
    with pytest.raises(RedisClusterRefused, match="Redis Cluster node: the Agents SDK's RedisSession cannot"):
        asyncio.run(catch_up_mirror(folder, cluster_node))
    result = run(folder, "mirror", "--to", cluster_node)
    assert result.code == 1 and len(result.err.splitlines()) == 1
    assert "mirror to a standalone Redis server instead" in result.err
