"""A state machine of folder operations, with the mirrored database compared at each quiet point.

Hypothesis (seeded by the suite's profile: every run tries the same examples) appends, pops,
clears, rewrites, deletes, re-creates and forks sessions, touches empty files, and now and
then restarts the mirror (its memory lost, as after ``kill -9``) or runs a one-shot catch-up
underneath it. At a quiet point the mirror's own step is driven directly (the blocking watch's
``catch_up()``, then the replica's transactions, no waiting for wake-ups) and what the SDK's
``SQLAlchemySession`` / ``RedisSession`` read must equal what ``get_items()`` reads, session for
session, empty and deleted ones included (``delete=True``).
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test
from test_mirror import folder_view, sdk_view_async

from jsonl_session import JSONLSession, SessionDirectory
from jsonl_session.transfer.mirror import catch_up_mirror, stored_ids
from jsonl_session.transfer.mirror.follow import Replica
from jsonl_session.transfer.mirror.targets import open_target
from jsonl_session.watch import watch_directory_sync

pytestmark = pytest.mark.sdk

IDS = st.sampled_from(["a", "b", "c", "user/é"])
# Few distinct contents, so identical items are re-added, popped and re-added (the watch must
# not mistake them, nor the mirror's comparison by content).
ITEM = st.sampled_from(["hi", "ok", "bye", "ok"]).map(
    lambda text: {"role": "user", "content": text}
) | st.integers(0, 10**6).map(lambda n: {"role": "assistant", "content": f"reply {n}", "n": n})


class FolderMirror(RuleBasedStateMachine):
    url = ""  # set by the test before running the machine

    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="jsonl-session-mirror-"))
        self.folder = SessionDirectory(self.directory, durable=False)
        self.loop = asyncio.new_event_loop()
        self.stack = AsyncExitStack()
        self.target = self.run(self.stack.enter_async_context(open_target(self.url)))
        self.run(self._empty_database())
        self.watch: Any = None
        self.replica: Replica | None = None
        self.restart_mirror()

    def run(self, work: Any) -> Any:
        return self.loop.run_until_complete(work)

    async def _empty_database(self) -> None:
        if self.url.startswith("redis"):
            await self.target.client.flushdb()
            return
        from sqlalchemy import text

        async with self.target.engine.begin() as connection:
            await connection.execute(text("DELETE FROM agent_messages"))
            await connection.execute(text("DELETE FROM agent_sessions"))

    def session(self, session_id: str) -> JSONLSession:
        return self.folder.open(session_id)

    # -- what happens to the folder -----------------------------------------------------------

    @rule(session_id=IDS, items=st.lists(ITEM, min_size=1, max_size=4))
    def append(self, session_id: str, items: list[Any]) -> None:
        self.session(session_id).add_items_sync(items)

    @rule(session_id=IDS, count=st.integers(1, 3))
    def pop(self, session_id: str, count: int) -> None:
        for _ in range(count):
            self.session(session_id).pop_item_sync()

    @rule(session_id=IDS)
    def clear(self, session_id: str) -> None:
        self.session(session_id).clear_session_sync()

    @rule(session_id=IDS, keep=st.integers(0, 4), items=st.lists(ITEM, max_size=3))
    def rewrite(self, session_id: str, keep: int, items: list[Any]) -> None:
        session = self.session(session_id)
        session.replace_items_sync(session.get_items_sync()[:keep] + items)

    @rule(session_id=IDS)
    def delete(self, session_id: str) -> None:
        self.folder.delete(session_id)

    @rule(session_id=IDS)
    def touch_empty(self, session_id: str) -> None:
        """Another tool makes an empty file (no change is delivered for it)."""
        path = self.session(session_id).path
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch(mode=0o600)

    @rule(source=IDS, copy=IDS, at=st.integers(0, 5))
    def fork(self, source: str, copy: str, at: int) -> None:
        if source == copy or not self.folder.exists(source) or self.session(copy).get_items_sync(limit=1):
            return
        at = min(at, len(self.session(source).get_items_sync()))
        self.folder.fork(source, copy, at=at)

    @rule(session_id=IDS, item=ITEM)
    def another_writer_then_an_append(self, session_id: str, item: Any) -> None:
        """At a quiet point, someone writes to the database through the SDK (the last item
        replaced by another), then the file grows: the mirror's check before appending must
        notice, and repair (compared at once, so every draw of this rule tests it)."""
        self.quiet_point()

        async def meddle() -> None:
            from jsonl_session.transfer import open_backend

            async with open_backend(self.url) as backend:
                remote = backend.session(session_id)
                if await remote.pop_item() is not None:
                    await remote.add_items([{"role": "system", "content": "written elsewhere"}])

        self.run(meddle())
        self.session(session_id).add_items_sync([item])
        self.quiet_point()

    # -- what happens to the mirror -----------------------------------------------------------

    @rule()
    def restart_mirror(self) -> None:
        """The mirror killed and started again: a fresh watch and replica, nothing remembered."""
        if self.watch is not None:
            self.watch.close()
        self.watch = watch_directory_sync(self.directory, start="all")
        self.replica = Replica(self.target, delete=True, report=lambda outcome: None)
        self.started = False

    @rule()
    def one_shot_catch_up_underneath(self) -> None:
        """``mirror --once`` runs while the live mirror has changes still to apply."""
        outcomes = self.run(catch_up_mirror(self.folder, self.url, delete=True))
        assert all(outcome.status != "failed" for outcome in outcomes), outcomes

    @rule()
    def quiet_point(self) -> None:
        """Drive the mirror's step until it is idle, then compare what the SDK reads with the files."""
        replica = self.replica
        assert replica is not None
        changes = self.watch.catch_up()

        async def step() -> None:
            for change in changes:
                replica.take(change)
            if not self.started:  # what the mirror does once its watch is on
                self.started = True
                await replica.adopt_stored_only(self.folder, await stored_ids(self.target))
            await replica.adopt_empty_files(self.folder)
            await replica.settle()

        self.run(step())
        if replica.outage is not None:
            raise replica.outage
        assert self.run(sdk_view_async(self.url)) == folder_view(self.directory)

    def teardown(self) -> None:
        try:
            self.quiet_point()
        finally:
            self.watch.close()
            self.run(self.stack.aclose())
            self.loop.close()
            shutil.rmtree(self.directory, ignore_errors=True)


def test_the_database_equals_the_folder_at_every_quiet_point(database: str) -> None:
    FolderMirror.url = database
    run_state_machine_as_test(
        FolderMirror, settings=settings(max_examples=12, stateful_step_count=25, deadline=None)
    )
