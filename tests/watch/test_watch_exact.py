"""Exactness of the live tail: after every wake-up the follower's list equals ``get_items()``.

Random sequences of library operations run *between two wake-ups*, then the blocking watcher
catches up once (deterministically, without waiting for an event) and its list is compared
with the file. These tests catch a follower that drifts from the file: pops or a clear followed
by appends that leave the remembered last line byte-identical at its old offset, a rename
whose new file gets the old inode number back, and ``start=n`` with fewer than n items.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule
from process_helpers import SPAWN, running
from watch_helpers import WAIT, Stepper, racing_writer

from jsonl_session import JSONLSession
from jsonl_session.core.codec import encode_items

# Items of equal length, so that different histories often put identical bytes at identical
# offsets (the case a "last line still there?" check cannot tell apart).
POOL = [{"n": n} for n in range(4)] + [{"role": "user", "content": "hi"}]
ITEMS = st.lists(st.sampled_from(POOL), min_size=1, max_size=3)
ANY_ITEMS = st.lists(st.sampled_from(POOL), max_size=4)


class FollowerMatchesFile(RuleBasedStateMachine):
    """Library operations by anyone, a wake-up now and then; the follower must always match."""

    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="watch-exact-"))
        self.session = JSONLSession("s", self.directory, durable=False)
        self.other = JSONLSession("s", self.directory, durable=False)  # a second writer, its own descriptor
        self.stepper = Stepper(self.session, start="all")

    @rule(items=ITEMS, by_other=st.booleans())
    def add(self, items: list[Any], by_other: bool) -> None:
        (self.other if by_other else self.session).add_items_sync(items)

    @rule(count=st.integers(1, 3))
    def pop(self, count: int) -> None:
        for _ in range(count):
            self.session.pop_item_sync()

    @rule()
    def clear(self) -> None:
        self.session.clear_session_sync()

    @rule(items=ANY_ITEMS)
    def replace(self, items: list[Any]) -> None:
        self.other.replace_items_sync(items)

    @rule(keep=st.integers(0, 3), items=ANY_ITEMS)
    def rewrite(self, keep: int, items: list[Any]) -> None:
        with self.session.rewrite() as draft:
            draft.items = draft.items[:keep] + items

    @rule()
    def delete(self) -> None:
        self.session.path.unlink(missing_ok=True)

    @rule(items=ANY_ITEMS, times=st.integers(1, 2))
    def rename_over(self, items: list[Any], times: int) -> None:
        # An outside tool (editor, git checkout) writes a new file and renames it over the
        # session; twice in a row the second file usually gets the first's inode number back.
        for _ in range(times):
            self.directory.mkdir(exist_ok=True)
            temp = self.directory / "outside.tmp"
            temp.write_bytes(encode_items(items))
            os.replace(temp, self.session.path)

    @rule()
    def wake_up(self) -> None:
        self.stepper.catch_up()
        assert self.stepper.items == self.session.get_items_sync()

    def teardown(self) -> None:
        try:
            self.wake_up()
        finally:
            self.stepper.close()
            self.session.close()
            self.other.close()
            shutil.rmtree(self.directory, ignore_errors=True)


FollowerMatchesFile.TestCase.settings = settings(
    # 1,000 sequences of up to 15 operations and wake-ups: ~30-60 s on two cores.
    max_examples=int(os.environ.get("WATCH_EXACT_EXAMPLES", "1000")),
    stateful_step_count=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
FollowerMatchesFile.TestCase.pytestmark = [pytest.mark.timeout(900), pytest.mark.slow]  # type: ignore[attr-defined]
test_follower_matches_the_file_after_any_operations_between_wakeups = FollowerMatchesFile.TestCase


A, B, C, D = ({"n": n} for n in range(4))


def test_pops_then_appends_that_restore_the_last_line_at_its_offset(session: JSONLSession) -> None:
    session.add_items_sync([A, B])
    stepper = Stepper(session)
    session.pop_item_sync()
    session.pop_item_sync()
    session.add_items_sync([C, B])  # B is back, byte for byte, at its old offset
    stepper.catch_up()
    assert stepper.items == [C, B] == session.get_items_sync()


def test_clear_then_identical_readd_then_more(session: JSONLSession) -> None:
    session.add_items_sync([A, B])
    stepper = Stepper(session)
    session.clear_session_sync()
    session.add_items_sync([A, B])  # the same bytes again: nothing to report is right
    session.add_items_sync([C])
    stepper.catch_up()
    assert stepper.items == [A, B, C] == session.get_items_sync()


def test_rename_over_that_reuses_the_inode_number(session: JSONLSession) -> None:
    session.add_items_sync([A, B])
    stepper = Stepper(session)
    old_inode = session.path.stat().st_ino
    session.replace_items_sync([D])  # a new inode; the old number is freed
    session.replace_items_sync([C, B])  # ext4 hands the freed number to this one
    if session.path.stat().st_ino != old_inode:
        pytest.skip("this file system did not reuse the inode number (tmpfs does not)")
    stepper.catch_up()
    assert stepper.items == [C, B] == session.get_items_sync()


def test_outside_rename_reusing_the_inode_number_without_marks(session: JSONLSession) -> None:
    # Files written by other tools carry no mark of ours: the follower must compare.
    session.add_items_sync([A, B])
    session.close()  # our cached descriptor would keep the old inode (and its number) alive
    stepper = Stepper(session)
    old_inode = session.path.stat().st_ino
    for items in ([D], [C, B]):
        temp = session.directory / "outside.tmp"
        temp.write_bytes(encode_items(items))
        os.replace(temp, session.path)
    if session.path.stat().st_ino != old_inode:
        pytest.skip("this file system did not reuse the inode number (tmpfs does not)")
    stepper.catch_up()
    assert stepper.items == [C, B] == session.get_items_sync()


@pytest.mark.parametrize("length", [0, 1, 3, 5])
@pytest.mark.parametrize("relation", ["0", "1", "len-1", "len", "len+1", "2*len", "more"])
def test_start_n_replays_the_newest_n_for_every_n(session: JSONLSession, length: int, relation: str) -> None:
    n = {
        "0": 0,
        "1": 1,
        "len-1": max(0, length - 1),
        "len": length,
        "len+1": length + 1,
        "2*len": 2 * length,
        "more": length * 3 + 7,
    }[relation]
    items = [{"n": number} for number in range(length)]
    if items:
        session.add_items_sync(items)
    stepper = Stepper(session, start=n)
    newest = items[max(0, length - n) :] if n else []
    assert stepper.items == newest
    session.add_items_sync([D])
    stepper.catch_up()
    assert stepper.items == [*newest, D]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 6, 20])  # len = 3: 1, len-1, len, len+1, 2*len, more
def test_cli_tail_n_follow_replays_the_newest_n(sessions_dir: Path, n: int) -> None:
    items = [{"n": number} for number in range(3)]
    JSONLSession("live", sessions_dir).add_items_sync(items)
    command = [sys.executable, "-m", "jsonl_session", "tail", "live", "-n", str(n), "-f", "--json"]
    process = subprocess.Popen(
        [*command, "--dir", str(sessions_dir)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert process.stdout is not None
        first = json.loads(process.stdout.readline())  # the replay, then it follows
    finally:
        process.terminate()
        process.communicate(timeout=60)
    assert first == {"kind": "appended", "count": min(n, 3), "items": items[max(0, 3 - n) :]}


def test_writer_processes_racing_a_follower_match_it_at_every_checkpoint(sessions_dir: Path) -> None:
    # Three processes pop, clear, rewrite, replace, delete and append at once while the
    # follower catches up as fast as it can; whenever they all stand still, it must match.
    writers, rounds = 3, 8
    session = JSONLSession("race", sessions_dir, durable=False)
    arrived = [SPAWN.Event() for _ in range(writers)]
    go = [SPAWN.Event() for _ in range(rounds)]
    stepper = Stepper(session)
    with ExitStack() as stack:
        processes = [
            stack.enter_context(running(racing_writer, str(sessions_dir), n, rounds, arrived[n], go))
            for n in range(writers)
        ]
        for round_number in range(rounds):
            polls = 0
            while not all(event.is_set() for event in arrived):
                stepper.catch_up()  # racing the writers
                polls += 1
                if polls > 200_000:
                    raise AssertionError("the writers never reached the checkpoint")
            stepper.catch_up()
            assert stepper.items == session.get_items_sync(), f"checkpoint {round_number}"
            for event in arrived:
                event.clear()
            go[round_number].set()
        for process in processes:
            process.join(WAIT)
    assert [process.exitcode for process in processes] == [0] * writers
    stepper.close()
