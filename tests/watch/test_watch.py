"""How a watch turns what happened to a file into changes (deterministic: no waiting on events).

Each test changes a real file, then asks the watcher's view of that file (``FileTail``: one
file's engine state, read under the lock) to catch up, exactly as a wake-up does. The live
tests in test_watch_live.py cover wake-ups, processes and stopping.
"""

from __future__ import annotations

import itertools
import os
from typing import Any

import pytest

from jsonl_session import JSONLSession, MalformedLineError
from jsonl_session.core.codec import encode_items
from jsonl_session.core.locking import FileHandle
from jsonl_session.watch import Change, apply
from jsonl_session.watch.follower import FileTail

A, B, C, D = ({"n": n} for n in range(4))


def poll(tail: FileTail) -> list[Change]:
    changes = tail.poll()
    assert changes is not None, "the lock is free, so a poll must not report it busy"
    return changes


def kinds(changes: list[Change]) -> list[tuple[str, Any]]:
    return [(c.kind, c.items if c.kind in ("appended", "replaced") else c.count) for c in changes]


class Mirror:
    """A watcher's tail plus the list rebuilt from its changes, checked against the file each time."""

    def __init__(self, session: JSONLSession, start: Any = "all") -> None:
        self.session = session
        self.tail = FileTail(session.path, session.session_id)
        self.items: list[Any] = []
        self.tail.start = start
        self.changes = self.catch_up()

    def catch_up(self) -> list[Change]:
        changes = poll(self.tail)
        for change in changes:
            apply(change, self.items)
        return changes

    def check(self) -> list[tuple[str, Any]]:
        changes = self.catch_up()
        assert self.items == self.session.get_items_sync()
        return kinds(changes)


@pytest.fixture
def mirror(session: JSONLSession) -> Mirror:
    return Mirror(session)


def test_apply_rebuilds_every_kind() -> None:
    items: list[Any] = []
    apply(Change("appended", "s", [A, B, C], 3), items)
    assert apply(Change("removed", "s", [], 2), items) == [A]
    assert apply(Change("removed", "s", [], 5), items) == []  # more than we hold: empty, no error
    apply(Change("appended", "s", [A], 1), items)
    assert apply(Change("replaced", "s", [B, C], 2), items) == [B, C]
    assert apply(Change("cleared", "s", [], 2), items) == []
    apply(Change("appended", "s", [D], 1), items)
    assert apply(Change("deleted", "s", [], 1), items) == []
    with pytest.raises(ValueError, match="unknown change kind"):
        apply(Change("exploded", "s"), items)  # type: ignore[arg-type]


def test_missing_file_is_empty_until_it_appears(session: JSONLSession, mirror: Mirror) -> None:
    assert mirror.changes == [] and not session.path.exists()
    session.add_items_sync([A, B])
    assert mirror.check() == [("appended", [A, B])]
    assert mirror.check() == []  # nothing new: nothing reported


def test_appends_between_two_wakeups_arrive_together_in_order(session: JSONLSession, mirror: Mirror) -> None:
    for item in (A, B, C):
        session.add_items_sync([item])
    assert mirror.check() == [("appended", [A, B, C])]


def test_pops_are_removed_with_their_count(session: JSONLSession, mirror: Mirror) -> None:
    session.add_items_sync([A, B, C, D])
    mirror.check()
    session.pop_item_sync()
    assert mirror.check() == [("removed", 1)]
    session.pop_item_sync()
    session.pop_item_sync()
    assert mirror.check() == [("removed", 2)]


def test_pop_then_append_between_wakeups_is_removed_then_appended(
    session: JSONLSession, mirror: Mirror
) -> None:
    session.add_items_sync([A, B, C])
    mirror.check()
    session.pop_item_sync()
    session.pop_item_sync()
    session.add_items_sync([{"n": 9, "longer": "than what was popped"}])
    assert mirror.check() == [("removed", 2), ("appended", [{"n": 9, "longer": "than what was popped"}])]
    # Same size as the popped line: only its bytes tell them apart.
    session.pop_item_sync()
    session.add_items_sync([{"n": 8, "longer": "than what was popped"}])
    assert mirror.check() == [("removed", 1), ("appended", [{"n": 8, "longer": "than what was popped"}])]


def test_clear_and_pops_that_empty_the_file_are_cleared(session: JSONLSession, mirror: Mirror) -> None:
    session.add_items_sync([A, B])
    mirror.check()
    session.clear_session_sync()
    assert mirror.check() == [("cleared", 2)]
    assert session.path.exists()
    session.add_items_sync([C])
    assert mirror.check() == [("appended", [C])]
    session.pop_item_sync()
    assert mirror.check() == [("cleared", 1)]


def test_cleared_and_refilled_between_wakeups_is_replaced(session: JSONLSession, mirror: Mirror) -> None:
    session.add_items_sync([A, B])
    mirror.check()
    session.clear_session_sync()
    session.add_items_sync([C, D, A])
    assert mirror.check() == [("replaced", [C, D, A])]


def test_rename_over_the_file_is_replaced_even_with_the_same_prefix(
    session: JSONLSession, mirror: Mirror
) -> None:
    session.add_items_sync([A, B])
    mirror.check()
    session.replace_items_sync([A, B, C])  # tmp file + rename: a new inode
    assert mirror.check() == [("replaced", [A, B, C])]
    temp = session.path.with_name("outside.tmp")  # e.g. git checkout
    temp.write_bytes(encode_items([D]))
    os.replace(temp, session.path)
    assert mirror.check() == [("replaced", [D])]
    session.replace_items_sync([])
    assert mirror.check() == [("cleared", 1)]


def test_deleted_and_created_again(session: JSONLSession, mirror: Mirror) -> None:
    session.add_items_sync([A, B])
    mirror.check()
    session.path.unlink()
    assert mirror.check() == [("deleted", 2)]
    assert mirror.check() == []
    session.add_items_sync([C])
    assert mirror.check() == [("appended", [C])]


def test_deleted_and_recreated_between_wakeups(session: JSONLSession, mirror: Mirror) -> None:
    session.add_items_sync([A, B])
    mirror.check()
    session.path.unlink()
    session.add_items_sync([C, D])  # the inode number may even be reused
    assert mirror.check()[-1] in (("replaced", [C, D]), ("appended", [C, D]))


def test_rewritten_in_place_is_seen(session: JSONLSession, mirror: Mirror) -> None:
    session.add_items_sync([A, B, C])
    mirror.check()
    with open(session.path, "r+b") as file:  # same inode, new content
        file.truncate(0)
        file.write(encode_items([D, {"x": "something else entirely"}]))
    assert mirror.check() == [("replaced", [D, {"x": "something else entirely"}])]


def test_half_written_line_is_held_back_then_delivered_whole(session: JSONLSession, mirror: Mirror) -> None:
    session.add_items_sync([A])
    mirror.check()
    line = encode_items([{"role": "user", "content": "a longer message"}])
    cuts = [0, 5, 20, len(line) - 2, len(line)]  # every prefix short of "}\n" is not an item yet
    with open(session.path, "ab") as file:
        for low, high in itertools.pairwise(cuts):
            file.write(line[low:high])
            file.flush()
            if high < len(line):
                assert mirror.catch_up() == []
    assert mirror.check() == [("appended", [{"role": "user", "content": "a longer message"}])]


def test_valid_last_line_without_newline_is_an_item_and_the_next_append_follows(
    session: JSONLSession, mirror: Mirror
) -> None:
    session.path.parent.mkdir(parents=True)
    session.path.write_bytes(b'{"n":0}\n{"n":1}')  # hand-edited: no final newline
    assert mirror.check() == [("appended", [A, B])]
    session.add_items_sync([C])  # the writer adds the missing newline first
    assert mirror.check() == [("appended", [C])]
    with open(session.path, "ab") as file:
        file.write(b'{"n":3}')
    assert mirror.check() == [("appended", [D])]
    with open(session.path, "ab") as file:
        file.write(b"junk\n")  # glued to the last line: it is no longer the item we delivered
    with pytest.raises(MalformedLineError) as error:
        mirror.catch_up()
    assert error.value.line == 4 and error.value.path == session.path


def test_torn_tail_is_never_delivered_and_the_repair_is_not_a_change(
    session: JSONLSession, mirror: Mirror
) -> None:
    session.add_items_sync([A])
    with open(session.path, "ab") as file:
        file.write(b'{"role": "assis')  # a writer killed mid-line
    assert mirror.check() == [("appended", [A])]
    with pytest.warns(UserWarning, match="partial last line"):
        session.add_items_sync([B])  # moves the torn bytes to the sidecar, then appends
    assert mirror.check() == [("appended", [B])]


def test_bom_blank_lines_and_crlf_are_read_like_get_items(session: JSONLSession, mirror: Mirror) -> None:
    session.path.parent.mkdir(parents=True)
    session.path.write_bytes(b'\xef\xbb\xbf{"n":0}\r\n\n   \n{"n":1}\r\n')
    assert mirror.check() == [("appended", [A, B])]
    session.pop_item_sync()
    assert mirror.check() == [("removed", 1)]
    session.pop_item_sync()
    assert mirror.check() == [("cleared", 1)]


def test_malformed_complete_line_raises_with_file_and_line(session: JSONLSession, mirror: Mirror) -> None:
    session.add_items_sync([A, B])
    mirror.check()
    with open(session.path, "ab") as file:
        file.write(b'{"n": 2}\n[1, 2]\n')
    with pytest.raises(MalformedLineError) as error:
        mirror.catch_up()
    assert (error.value.path, error.value.line) == (session.path, 4)
    assert "not a JSON object" in str(error.value)
    assert session.path.read_bytes().endswith(b"[1, 2]\n")  # the file is untouched


@pytest.mark.parametrize(
    ("start", "first"),
    [("all", [A, B, C]), ("now", None), (0, None), (2, [B, C]), (10, [A, B, C])],
)
def test_start_modes_choose_what_is_replayed(session: JSONLSession, start: Any, first: Any) -> None:
    session.add_items_sync([A, B, C])
    mirror = Mirror(session, start)
    assert kinds(mirror.changes) == ([("appended", first)] if first else [])
    # Whatever was replayed, later changes refer to the whole file.
    session.pop_item_sync()
    assert kinds(mirror.catch_up()) == [("removed", 1)]
    session.add_items_sync([D])
    assert kinds(mirror.catch_up()) == [("appended", [D])]
    assert mirror.items == session.get_items_sync()[-len(mirror.items) :] if mirror.items else True


def test_lock_held_by_a_writer_is_reported_busy_not_read(session: JSONLSession, mirror: Mirror) -> None:
    session.add_items_sync([A])
    writer = FileHandle(session.path)
    with writer.locked(write=True, create=False, timeout=1) as fd:
        os.write(fd, b'{"n":1}\n')  # half of a two-item add_items, as far as readers know
        assert mirror.tail.poll() is None
    writer.close()
    assert mirror.check() == [("appended", [A, B])]


def test_no_descriptor_is_held_between_polls(session: JSONLSession, mirror: Mirror) -> None:
    session.add_items_sync([A])
    mirror.check()
    session.close()  # the session object keeps its own descriptor; the watcher must not
    assert not any(
        os.path.realpath(f"/proc/self/fd/{fd}") == str(session.path.resolve())
        for fd in os.listdir("/proc/self/fd")
    )


def test_start_mode_still_applies_when_the_first_poll_finds_the_lock_busy(session: JSONLSession) -> None:
    session.add_items_sync([A, B])
    tail = FileTail(session.path, session.session_id)
    tail.start = "now"
    writer = FileHandle(session.path)
    with writer.locked(write=True, create=False, timeout=1):
        assert tail.poll() is None
    writer.close()
    assert poll(tail) == []  # not a replay of A and B
    session.add_items_sync([C])
    assert kinds(poll(tail)) == [("appended", [C])]
