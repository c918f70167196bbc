"""A session watch that starts from where a caller left off (``Known``), on real files.

``serve`` reads a page's bytes once and hands its follower the index of those lines: the
follower then reads only what was appended after them, and whatever else happened between
the caller's look and the follower's start (a pop, a rewrite by another program, a deletion)
is found as at any wake-up. Without an index the follower reads the whole file once and
delivers exactly what follows the caller's position, or everything as ``replaced``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from jsonl_session import JSONLSession
from jsonl_session.core import change_mark, reads
from jsonl_session.core.codec import encode_items
from jsonl_session.core.scanner import parse_item
from jsonl_session.core.transaction import Transaction
from jsonl_session.watch import apply, watch_directory_sync, watch_session_sync
from jsonl_session.watch.engine import FileState, Known, LineIndex
from jsonl_session.watch.follower import seen_of

PIECE = 256  # small pieces: the index is built across many scans, as a page builds it


def item(n: int, letter: str = "x") -> dict[str, Any]:
    return {"n": n, "text": letter * 40}  # every line as long as the others (n < 10)


def session_with(tmp_path: Path, count: int) -> JSONLSession:
    session = JSONLSession("s", tmp_path)
    session.add_items_sync([item(n) for n in range(count)])
    return session


def caller_pass(session: JSONLSession, *, indexed: bool = True) -> tuple[Known, list[Any]]:
    """What a page does: under the shared lock, where the file is; then its one pass over those bytes."""
    path = session.directory / "s.jsonl"
    with Transaction(path, write=False, timeout=5) as file:
        seen = seen_of(file.fd)
        fd = os.dup(file.fd)
    try:
        index = LineIndex()
        items: list[Any] = []
        for scan in reads.scan_file(fd, seen.size, piece_bytes=PIECE):
            index.add(scan)
            items.extend(parse_item(line.data) for line in scan.lines)
    finally:
        os.close(fd)
    return Known(seen, index if indexed else None), items


def followed(session: JSONLSession, known: Known, items: list[Any]) -> list[Any]:
    """The caller's items brought up to date by a follower that starts from ``known``."""
    with watch_session_sync(session, start=known) as watch:
        for change in watch.catch_up():
            apply(change, items)
    return items


@pytest.mark.parametrize("indexed", [True, False])
def test_what_was_appended_after_the_callers_pass_is_delivered_once(tmp_path: Path, indexed: bool) -> None:
    session = session_with(tmp_path, 50)
    known, items = caller_pass(session, indexed=indexed)
    session.add_items_sync([{"n": 50}, {"n": 51}])
    with watch_session_sync(session, start=known) as watch:
        changes = watch.catch_up()
        assert [(change.kind, change.items) for change in changes] == [("appended", [{"n": 50}, {"n": 51}])]
        for change in changes:
            apply(change, items)
        assert items == session.get_items_sync()
        session.pop_item_sync()  # and it follows exactly from there
        [change] = watch.catch_up()
        assert (change.kind, change.count) == ("removed", 1)


@pytest.mark.parametrize("indexed", [True, False])
def test_nothing_new_is_nothing_delivered(tmp_path: Path, indexed: bool) -> None:
    session = session_with(tmp_path, 20)
    known, _ = caller_pass(session, indexed=indexed)
    with watch_session_sync(session, start=known) as watch:
        assert watch.catch_up() == []
        session.add_items_sync([{"n": 20}])
        [change] = watch.catch_up()
    assert change.items == [{"n": 20}]


def test_the_index_makes_the_first_look_read_from_the_last_line_only(tmp_path: Path) -> None:
    session = session_with(tmp_path, 30)
    known, _ = caller_pass(session)
    session.add_items_sync([{"n": 30}])
    path = session.directory / "s.jsonl"
    state = FileState(path, "s")
    assert known.index is not None
    state.adopt(known, known.index)
    with Transaction(path, write=False, timeout=5) as file:
        seen = seen_of(file.fd)
    last_line_start = len(encode_items([item(n) for n in range(29)]))
    assert state.wanted(seen) == last_line_start  # not 0: the caller's bytes are not read again


@pytest.mark.parametrize("indexed", [True, False])
def test_a_pop_between_the_pass_and_the_start_is_found(tmp_path: Path, indexed: bool) -> None:
    session = session_with(tmp_path, 9)
    known, items = caller_pass(session, indexed=indexed)
    session.pop_item_sync()  # then longer than before, a line's end where the caller stopped: the mark says
    session.add_items_sync([item(8, "y"), item(9, "y")])
    assert followed(session, known, items) == session.get_items_sync()


# Without an index, an edit in place that keeps the inode, the mark and a line's end where the
# caller stopped goes unseen (as for any follower: docs/live-tail.md, "Edits by other tools").
@pytest.mark.parametrize(
    ("indexed", "how"),
    [(True, "in place"), (True, "renamed"), (False, "renamed"), (True, "copied"), (False, "copied")],
)
def test_a_rewrite_by_an_editor_between_the_pass_and_the_start_is_found(
    tmp_path: Path, indexed: bool, how: str
) -> None:
    session = session_with(tmp_path, 8)
    known, items = caller_pass(session, indexed=indexed)
    path = session.directory / "s.jsonl"
    # The caller's last line edited (same length), two more: longer, a line's end where the caller stopped.
    rewritten = encode_items([*(item(n) for n in range(7)), item(7, "y"), item(8), item(9)])
    if how == "in place":  # same inode and mark: the index's last line differs (edits before it go unseen)
        path.write_bytes(rewritten)
    else:  # a new file renamed over the session: no mark, or the old one copied with it (cp -a, rsync -X)
        temporary = tmp_path / "s.jsonl.tmp"
        temporary.write_bytes(rewritten)
        if how == "copied":
            os.setxattr(temporary, change_mark.NAME, os.getxattr(path, change_mark.NAME))
        os.replace(temporary, path)
    assert followed(session, known, items) == session.get_items_sync()


@pytest.mark.parametrize("indexed", [True, False])
def test_a_truncation_between_the_pass_and_the_start_is_found(tmp_path: Path, indexed: bool) -> None:
    session = session_with(tmp_path, 10)
    known, items = caller_pass(session, indexed=indexed)
    path = session.directory / "s.jsonl"
    with path.open("r+b") as file:
        file.truncate(len(encode_items([item(n) for n in range(4)])))
    assert followed(session, known, items) == session.get_items_sync()


@pytest.mark.parametrize("indexed", [True, False])
def test_a_deletion_between_the_pass_and_the_start_is_delivered(tmp_path: Path, indexed: bool) -> None:
    session = session_with(tmp_path, 5)
    known, _ = caller_pass(session, indexed=indexed)
    (session.directory / "s.jsonl").unlink()
    with watch_session_sync(session, start=known) as watch:
        assert [change.kind for change in watch.catch_up()] == ["deleted"]


def test_a_folder_watch_cannot_start_from_one_files_position(tmp_path: Path) -> None:
    session = session_with(tmp_path, 1)
    known, _ = caller_pass(session)
    with pytest.raises(TypeError, match="folder watch"):
        watch_directory_sync(tmp_path, start=known)
