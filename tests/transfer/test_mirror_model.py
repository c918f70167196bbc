"""The mirror against a model: a real PostgreSQL and a real Redis, a folder, and everyone else.

Hypothesis (derandomized by the suite's profile) drives a folder and the people around it:
agents add, pop, rewrite (under the lock), clear, delete and rename sessions, someone edits a
file by hand (a text editor's temp file and rename), other programs write through the SDK's
own ``SQLAlchemySession``/``RedisSession`` (on ids the folder never had, and on the mirrored
ones), and the mirror runs through its public doors: ``catch_up_mirror``, ``mirror_folder``,
``jsonl-session mirror --once``, two at once, one killed (``kill -9``) in the middle of a
catch-up, one after the database restarted, one while an SDK writer holds a session's row lock.

After every catch-up (a quiet point) the invariant is checked:

* the SDK's own classes read exactly the file's items for every session of the folder;
* everything else in the database (the keys and rows of ids the folder does not have: foreign
  sessions, kept ones, keys of no session at all) is byte for byte what it was, or, with
  ``delete``, exactly that minus the sessions stored there;
* an id the backend cannot hold exactly (Redis ``…:messages``/``…:counter``, which name another
  session's keys; a NUL byte for PostgreSQL) is that one session's failure, and writes nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule, run_state_machine_as_test
from model_helpers import (
    SDK_PREFIX,
    Snapshot,
    after_delete,
    hostile,
    kill_mid_catch_up,
    mirror_once_process,
    outside,
    postgres_server,
    postgres_snapshot,
    redis_server,
    redis_snapshot,
)

from jsonl_session import JSONLSession, SessionDirectory
from jsonl_session.transfer import MirrorOutcome, catch_up_mirror, mirror_folder

pytestmark = pytest.mark.sdk
pytest.importorskip("agents", reason="the Agents SDK (extra 'agents') is not installed")

PLAIN_IDS = ["a", "b", "h", "user/é"]
HOSTILE_IDS = {"redis": ["h:messages", "h:counter"], "postgresql": ["nul\x00id"]}
FOREIGN_IDS = ["ext-1", "ext/2"]  # never in the folder: only other programs write them
PICK = st.integers(0, 11)  # an index into the machine's ids (which depend on the backend)
ITEM = st.sampled_from(["hi", "ok", "東京 🚀", "ok"]).map(
    lambda text: {"role": "user", "content": text}
) | st.integers(0, 99).map(lambda n: {"role": "assistant", "content": f"reply {n}", "n": n})
EXPENSIVE_STEPS = 2
"""Rules that start processes or servers, per example: enough to meet each, bounded for CI."""
THEN = st.sampled_from(["", "", "api", "live"])
"""After a step: nothing yet (steps pile up), or a quiet point (a catch-up, then the invariant)."""
LOCK_RACES = 3
"""Races with an SDK writer holding the row lock, per example (in their own test)."""


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One PostgreSQL and one Redis for the whole module, each restartable by a rule."""
    found: dict[str, Any] = {}
    redis_servers = redis_server(tmp_path_factory)
    postgres_servers = postgres_server()
    found["redis"] = next(redis_servers)
    try:
        found["postgresql"] = next(postgres_servers)
        try:
            yield found
        finally:
            postgres_servers.close()
    finally:
        redis_servers.close()


class MirrorModel(RuleBasedStateMachine):
    """One folder, one database, and the invariant checked at every quiet point (module docstring)."""

    kind = ""  # "redis" or "postgresql": set by the test before running the machine
    server: Any = None
    with_hostile_ids = False
    with_lock_race = False

    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="jsonl-session-model-"))
        self.folder = SessionDirectory(self.directory, durable=False)
        self.ids = PLAIN_IDS + (HOSTILE_IDS[self.kind] if self.with_hostile_ids else [])
        self.budget = 0 if self.with_lock_race else EXPENSIVE_STEPS  # that test spends its time racing
        self.lock_races = LOCK_RACES if self.with_lock_race else 0
        self.loop = asyncio.new_event_loop()
        self.engine: Any = None
        self.run(self._reset())

    @property
    def url(self) -> str:
        return str(self.server.url)

    def run(self, work: Any) -> Any:
        return self.loop.run_until_complete(work)

    def pick(self, n: int) -> str:
        return self.ids[n % len(self.ids)]

    def session(self, session_id: str) -> JSONLSession:
        return self.folder.open(session_id)

    # -- the database, raw and through the SDK -------------------------------------------------

    async def _reset(self) -> None:
        if self.kind == "redis":
            client = self._redis()
            try:
                await client.flushdb()
            finally:
                await client.aclose()
            await self._seed_bystanders()
            return
        from sqlalchemy.ext.asyncio import create_async_engine
        from sqlalchemy.pool import NullPool

        # No pool: a connection never outlives a restart of the server.
        self.engine = create_async_engine(self.async_url, poolclass=NullPool)
        connection = await self._pg()
        try:
            await connection.execute("DROP TABLE IF EXISTS agent_messages, agent_sessions CASCADE")
        finally:
            await connection.close()

    async def _seed_bystanders(self) -> None:
        """Keys of no session (one under the SDK's prefix): a mirror, even with delete, leaves them."""
        client = self._redis()
        try:
            await client.set("someone-else:key", "theirs")
            await client.set(SDK_PREFIX + b"notes:extra", "not a session")
            await client.hset(SDK_PREFIX + b"ext-3", mapping={"session_id": "another id", "x": "1"})
        finally:
            await client.aclose()

    @property
    def async_url(self) -> str:
        return self.url.replace("postgresql://", "postgresql+asyncpg://", 1)

    def _redis(self) -> Any:
        import redis.asyncio

        return redis.asyncio.Redis.from_url(self.url)

    async def _pg(self) -> Any:
        import importlib

        asyncpg: Any = importlib.import_module("asyncpg")  # untyped
        return await asyncpg.connect(self.url)

    async def _snapshot(self) -> Snapshot:
        if self.kind == "redis":
            client = self._redis()
            try:
                return await redis_snapshot(client)
            finally:
                await client.aclose()
        connection = await self._pg()
        try:
            if await connection.fetchval("SELECT to_regclass('agent_messages')") is None:
                return {}
            return await postgres_snapshot(connection)
        finally:
            await connection.close()

    def sdk_session(self, session_id: str) -> Any:
        """The SDK's own session class on this database."""
        if self.kind == "redis":
            from agents.extensions.memory.redis_session import RedisSession

            return RedisSession.from_url(session_id, url=self.url)
        from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession

        return SQLAlchemySession(session_id, engine=self.engine, create_tables=True)

    async def _sdk_read(self, ids: list[str]) -> dict[str, list[Any]]:
        read = {}
        for session_id in ids:
            remote = self.sdk_session(session_id)
            try:
                read[session_id] = await remote.get_items()
            finally:
                if self.kind == "redis":
                    await remote.close()
        return read

    def inside(self) -> list[str]:
        """The folder's sessions that the backend can hold: these the SDK must read exactly."""
        return [session_id for session_id in self.folder.ids() if not hostile(self.kind, session_id)]

    # -- what happens to the folder -----------------------------------------------------------

    @rule(n=PICK, items=st.lists(ITEM, min_size=1, max_size=3), then=THEN)
    def add(self, n: int, items: list[Any], then: str) -> None:
        self.session(self.pick(n)).add_items_sync(items)
        self.quiet_point(then)

    @rule(n=PICK, then=THEN)
    def pop(self, n: int, then: str) -> None:
        self.session(self.pick(n)).pop_item_sync()
        self.quiet_point(then)

    @rule(n=PICK, keep=st.integers(0, 4), items=st.lists(ITEM, max_size=2), then=THEN)
    def rewrite(self, n: int, keep: int, items: list[Any], then: str) -> None:
        """A deliberate edit under the lock (what ``edit`` and ``redact`` do)."""
        with self.session(self.pick(n)).rewrite() as draft:
            draft.items = draft.items[:keep] + items
        self.quiet_point(then)

    @rule(n=PICK, then=THEN)
    def clear(self, n: int, then: str) -> None:
        self.session(self.pick(n)).clear_session_sync()
        self.quiet_point(then)

    @rule(n=PICK, then=THEN)
    def delete(self, n: int, then: str) -> None:
        """``jsonl-session rm``."""
        self.folder.delete(self.pick(n))
        self.quiet_point(then)

    @rule(n=PICK, m=PICK, then=THEN)
    def rename(self, n: int, m: int, then: str) -> None:
        """``mv a.jsonl b.jsonl`` by hand: one session gone, another appears with its items."""
        source, target = self.pick(n), self.pick(m)
        if source != target and self.folder.exists(source) and not self.folder.exists(target):
            os.rename(self.session(source).path, self.session(target).path)
        self.quiet_point(then)

    @rule(n=PICK, items=st.lists(ITEM, max_size=3), then=THEN)
    def hand_edit(self, n: int, items: list[Any], then: str) -> None:
        """A text editor saves the file: a temporary file beside it, renamed over it."""
        path = Path(self.session(self.pick(n)).path)
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(".edit-" + path.name + ".tmp")
        temporary.write_text("".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items), "utf-8")
        os.replace(temporary, path)
        self.quiet_point(then)

    # -- other programs writing through the SDK -----------------------------------------------

    @rule(foreign=st.sampled_from(FOREIGN_IDS), items=st.lists(ITEM, min_size=1, max_size=2), then=THEN)
    def foreign_session(self, foreign: str, items: list[Any], then: str) -> None:
        """Another program's session, on an id the folder never had."""
        self.run(self._sdk_do(foreign, "add", items))
        self.quiet_point(then)

    @rule(
        n=PICK,
        what=st.sampled_from(["add", "pop", "clear"]),
        items=st.lists(ITEM, min_size=1, max_size=2),
        then=THEN,
    )
    def foreign_writer_on_a_mirrored_id(self, n: int, what: str, items: list[Any], then: str) -> None:
        """Another program writes to a session the mirror owns (or keeps): the next catch-up repairs it."""
        session_id = self.pick(n)
        if not hostile(self.kind, session_id):
            self.run(self._sdk_do(session_id, what, items))
        self.quiet_point(then)

    async def _sdk_do(self, session_id: str, what: str, items: list[Any]) -> None:
        remote = self.sdk_session(session_id)
        try:
            if what == "add":
                await remote.add_items(items)
            elif what == "pop":
                await remote.pop_item()
            else:
                await remote.clear_session()
        finally:
            if self.kind == "redis":
                await remote.close()

    # -- the mirror, and the quiet point after it ---------------------------------------------

    def expensive(self) -> bool:
        return self.budget > 0

    def spend(self) -> None:
        self.budget -= 1

    def quiet_point(self, via: str) -> None:
        if via:
            self.catch_up(via, delete=False)

    @rule(via=st.sampled_from(["api", "live", "cli"]), delete=st.booleans())
    def catch_up(self, via: str, delete: bool) -> None:
        if via == "cli" and not self.expensive():
            via = "api"
        before = self.run(self._snapshot())
        if via == "api":
            outcomes = self._api(delete)
        elif via == "live":
            outcomes = self._live(delete)
        else:
            self.spend()
            outcomes = self._cli(
                mirror_once_process(self.directory, self.url, *(["--delete"] if delete else []))
            )
        self.check(before, delete, [outcomes])

    @precondition(lambda self: self.expensive())
    @rule()
    def two_mirrors_at_once(self) -> None:
        """``mirror --once`` in another process while one catches up here."""
        self.spend()
        before = self.run(self._snapshot())
        other = mirror_once_process(self.directory, self.url)
        try:
            here = self._api(delete=False)
        finally:
            there = self._cli(other)
        self.check(before, False, [here, there])

    @precondition(lambda self: self.expensive())
    @rule(stall_at=st.integers(0, 4))
    def kill_9_mid_catch_up(self, stall_at: int) -> None:
        """A mirror killed once it has compared ``stall_at`` sessions (others in flight), then one more."""
        self.spend()
        before = self.run(self._snapshot())
        kill_mid_catch_up(self.directory, self.url, stall_at)
        self.check(before, False, [self._api(delete=False)])

    @precondition(lambda self: self.expensive())
    @rule()
    def database_restarted(self) -> None:
        """Stopped hard and started again (a Redis without persistence comes back empty)."""
        self.spend()
        self.server.restart()
        if self.kind == "redis":
            self.run(self._seed_bystanders())
        before = self.run(self._snapshot())
        self.check(before, False, [self._api(delete=False)])

    @precondition(lambda self: self.lock_races > 0)
    @rule(n=PICK, items=st.lists(ITEM, min_size=1, max_size=2))
    def sdk_writer_holds_the_lock(self, n: int, items: list[Any]) -> None:
        """An SDK writer holds a mirrored session's row lock (its rows inserted, not yet committed)
        while a mirror's catch-up waits for that lock; what the mirror plans must be from after it."""
        self.lock_races -= 1
        session_id = self.pick(n)
        if hostile(self.kind, session_id):
            return
        if not self.folder.exists(session_id):
            self.session(session_id).add_items_sync(items)
        self.quiet_point("api")  # the race needs the session stored, its row there to be locked
        before = self.run(self._snapshot())
        holding, go = threading.Event(), threading.Event()
        failures: list[BaseException] = []
        writer = threading.Thread(target=self._held_writer, args=(session_id, items, holding, go, failures))
        writer.start()
        mirror = None
        try:
            assert holding.wait(60), "the SDK writer never reached its commit"
            mirror = mirror_once_process(self.directory, self.url)
            waited = self.run(_lock_waited_for(mirror))
        finally:
            go.set()
            writer.join(60)
        assert not writer.is_alive()
        if failures:
            raise failures[0]
        outcomes = [self._cli(mirror)]
        if not waited:  # that mirror never met the lock: the writer's rows came after it
            outcomes.append(self._api(delete=False))
        self.check(before, False, outcomes)

    def _held_writer(
        self,
        session_id: str,
        items: list[Any],
        holding: threading.Event,
        go: threading.Event,
        failures: list[BaseException],
    ) -> None:
        """``SQLAlchemySession.add_items`` paused just before its commit (its own engine and loop)."""
        from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
        from sqlalchemy import event
        from sqlalchemy.ext.asyncio import create_async_engine
        from sqlalchemy.pool import NullPool

        async def write() -> None:
            engine = create_async_engine(self.async_url, poolclass=NullPool)
            inserted = threading.Event()

            def executed(*args: Any) -> None:
                if str(args[2]).lstrip().upper().startswith("INSERT INTO AGENT_MESSAGES"):
                    inserted.set()

            def commit(_: Any) -> None:
                if inserted.is_set():
                    holding.set()
                    go.wait(60)

            event.listen(engine.sync_engine, "after_cursor_execute", executed)
            event.listen(engine.sync_engine, "commit", commit)
            try:
                await SQLAlchemySession(session_id, engine=engine).add_items(items)
            finally:
                await engine.dispose()

        try:
            asyncio.run(write())
        except BaseException as exc:  # noqa: BLE001  (raised in the test's thread, by the rule)
            failures.append(exc)
        finally:
            holding.set()  # never leave the test waiting, whatever happened

    def _api(self, delete: bool) -> list[tuple[str, str]]:
        outcomes: list[MirrorOutcome] = self.run(catch_up_mirror(self.directory, self.url, delete=delete))
        return [(o.session_id, o.status) for o in outcomes]

    def _live(self, delete: bool) -> list[tuple[str, str]]:
        """``mirror_folder`` told to stop at once: it catches up on everything, then returns."""
        stop = threading.Event()
        stop.set()
        outcomes: list[MirrorOutcome] = []
        self.run(
            mirror_folder(self.directory, self.url, delete=delete, stop_event=stop, report=outcomes.append)
        )
        return [(o.session_id, o.status) for o in outcomes]

    def _cli(self, process: Any) -> list[tuple[str, str]]:
        out, err = process.communicate(timeout=120)
        refused = any(hostile(self.kind, session_id) for session_id in self.folder.ids())
        assert process.returncode == (1 if refused else 0), err
        lines = [json.loads(line) for line in out.splitlines() if line.strip()]
        return [(line["session_id"], line["status"]) for line in lines]

    def check(self, before: Snapshot, delete: bool, runs: list[list[tuple[str, str]]]) -> None:
        """The invariant (module docstring), after every mirror of ``runs`` has finished."""
        inside = self.inside()
        expected_outside = outside(self.kind, before, set(inside))
        if delete:
            expected_outside = after_delete(self.kind, expected_outside)
        for outcomes in runs:
            statuses: dict[str, set[str]] = {}
            for session_id, status in outcomes:
                statuses.setdefault(session_id, set()).add(status)
            for session_id in self.folder.ids():
                if hostile(self.kind, session_id):
                    assert statuses.get(session_id) == {"failed"}, (session_id, outcomes)
                else:
                    assert "failed" not in statuses.get(session_id, set()), (session_id, outcomes)
        after = self.run(self._snapshot())
        assert outside(self.kind, after, set(inside)) == expected_outside, (
            "the mirror changed what is not its own"
        )
        files = {session_id: self.session(session_id).get_items_sync() for session_id in inside}
        assert self.run(self._sdk_read(inside)) == files

    def teardown(self) -> None:
        try:
            if self.server is not None:
                before = self.run(self._snapshot())
                self.check(before, False, [self._api(delete=False)])
        finally:
            if self.engine is not None:
                self.run(self.engine.dispose())
            self.loop.close()
            shutil.rmtree(self.directory, ignore_errors=True)


async def _lock_waited_for(mirror: Any) -> bool:
    """Whether the mirror's connection came to wait for a lock (True) or the mirror ended first."""
    import importlib

    asyncpg: Any = importlib.import_module("asyncpg")  # untyped
    connection = await asyncpg.connect(MirrorModel.server.url)
    try:
        while mirror.poll() is None:
            waiting = await connection.fetchval(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
            )
            if waiting:
                return True
            await asyncio.sleep(0.01)  # polling a condition the server reports, not a guess of time
        return False
    finally:
        await connection.close()


def _run(
    servers: dict[str, Any],
    kind: str,
    *,
    hostile_ids: bool = False,
    lock_race: bool = False,
    examples: int = 15,
) -> None:
    MirrorModel.kind, MirrorModel.server = kind, servers[kind]
    MirrorModel.with_hostile_ids, MirrorModel.with_lock_race = hostile_ids, lock_race
    # Shrinking a failure of this machine takes minutes (each step is real I/O); CI reports the
    # failing steps as found, and JSONL_SESSION_SHRINK=1 asks for the smallest reproduction.
    phases = (
        list(Phase) if os.environ.get("JSONL_SESSION_SHRINK") == "1" else [Phase.explicit, Phase.generate]
    )
    try:
        run_state_machine_as_test(
            MirrorModel,
            settings=settings(
                max_examples=examples,
                stateful_step_count=12,
                deadline=None,
                phases=phases,
                report_multiple_bugs=False,
            ),
        )
    finally:
        MirrorModel.server = None


def test_postgresql_reads_the_files_nothing_else_changes_and_a_nul_id_fails_alone(
    servers: dict[str, Any],
) -> None:
    _run(servers, "postgresql", hostile_ids=True, examples=12)


def test_redis_reads_the_files_and_nothing_else_changes(servers: dict[str, Any]) -> None:
    _run(servers, "redis")


def test_ids_naming_another_sessions_redis_keys_fail_alone(servers: dict[str, Any]) -> None:
    _run(servers, "redis", hostile_ids=True, examples=12)


def test_an_sdk_writer_holding_the_row_lock_is_seen_by_the_mirror(servers: dict[str, Any]) -> None:
    _run(servers, "postgresql", lock_race=True, examples=6)
