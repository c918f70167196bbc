"""The pure change engine (no I/O) and the marks storage leaves for it on real files."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from jsonl_session import JSONLSession
from jsonl_session.core import change_mark as marks
from jsonl_session.core.codec import encode_items
from jsonl_session.core.locking import FileHandle
from jsonl_session.watch import Change
from jsonl_session.watch.engine import FileState, Seen

A, B, C = ({"n": n} for n in range(3))
MARK = bytes(range(16))
FILE = (1, 7)


def look(
    state: FileState, content: bytes, mark: bytes | None = MARK, identity: tuple[int, int] = FILE
) -> Any:
    """One wake-up: give the engine the bytes it asks for (and all of them if it asks again)."""
    seen = Seen(identity, len(content), mark)
    offset = state.wanted(seen)
    changes = state.update(seen, content[offset:], offset, None)
    if changes is None:
        changes = state.update(seen, content, 0, None)
    return offset, changes


def test_same_inode_and_mark_reads_only_from_the_last_delivered_line() -> None:
    state = FileState(Path("s.jsonl"), "s")
    first = encode_items([A, B])
    assert look(state, first) == (0, [Change("appended", "s", [A, B], 2)])
    offset, changes = look(state, first + encode_items([C]))
    assert offset == len(encode_items([A]))  # the start of B, the last delivered line
    assert changes == [Change("appended", "s", [C], 1)]


@pytest.mark.parametrize("mark", [None, MARK[:8] + b"new gen!"])
def test_without_the_same_mark_the_whole_file_is_compared(mark: bytes | None) -> None:
    state = FileState(Path("s.jsonl"), "s")
    look(state, encode_items([A, B]))
    # Popped B and appended C: the same size, so only the bytes can tell.
    offset, changes = look(state, encode_items([A, {"n": 9}]), mark=mark)
    assert offset == 0
    assert changes == [Change("removed", "s", [], 1), Change("appended", "s", [{"n": 9}], 1)]


def test_another_file_id_on_the_same_inode_is_a_new_file() -> None:
    state = FileState(Path("s.jsonl"), "s")
    look(state, encode_items([A, B]))
    offset, changes = look(state, encode_items([A, B, C]), mark=b"other id" + MARK[8:])
    assert (offset, changes) == (0, [Change("replaced", "s", [A, B, C], 3)])


def test_a_changed_last_line_under_a_trusted_mark_is_caught() -> None:
    # An edit in place by another tool keeps our mark: the last delivered line still gives it away.
    state = FileState(Path("s.jsonl"), "s")
    look(state, encode_items([A, B]))
    assert look(state, encode_items([A, C]))[1] == [
        Change("removed", "s", [], 1),
        Change("appended", "s", [C], 1),
    ]


def test_storage_marks_every_write_but_appends(session: JSONLSession) -> None:
    def mark() -> bytes | None:
        handle = FileHandle(session.path)
        try:
            with handle.locked(write=False, create=False, timeout=1) as fd:
                return marks.read(fd)
        finally:
            handle.close()

    session.add_items_sync([A, B])
    created = mark()
    if created is None:
        pytest.skip("no user extended attributes on this file system")
    session.add_items_sync([C])
    assert mark() == created  # appends leave it alone
    session.pop_item_sync()
    popped = mark()
    assert popped is not None and popped != created and popped[:8] == created[:8]  # same file, new generation
    session.clear_session_sync()
    cleared = mark()
    assert cleared is not None and cleared not in (created, popped) and cleared[:8] == created[:8]
    session.replace_items_sync([A])
    replaced = mark()
    assert replaced is not None and replaced[:8] != created[:8]  # a new file


def look_quickly(state: FileState, content: bytes) -> tuple[int, Any]:
    """One wake-up on a file that only grew: the bytes from the last delivered line must do."""
    seen = Seen(FILE, len(content), MARK)
    offset = state.wanted(seen)
    return offset, state.update(seen, content[offset:], offset, None)


def test_the_quick_path_serves_every_append_without_a_second_read() -> None:
    """Catches (mutation testing, ``mutation/``): the quick path giving up (``None``) where only
    appends happened: the last line's slice, length or hash taken from the wrong place, the
    newline after a last line that had none not accepted, an unchanged file read whole. The
    full read that followed gave the same changes, so only this test tells them apart."""
    state = FileState(Path("s.jsonl"), "s")
    one, two = encode_items([A]), encode_items([A, B])
    assert look(state, two) == (0, [Change("appended", "s", [A, B], 2)])
    assert look_quickly(state, two) == (len(one), [])  # nothing new: not a read of everything
    three = two + encode_items([C])
    assert look_quickly(state, three) == (len(one), [Change("appended", "s", [C], 1)])
    unterminated = three + b'{"n":3}'  # an editor saved the last line without its newline
    assert look_quickly(state, unterminated) == (len(two), [Change("appended", "s", [{"n": 3}], 1)])
    assert look_quickly(state, unterminated) == (len(three), [])
    finished = unterminated + b'\n{"n":4}\n'  # the newline comes, then another line
    assert look_quickly(state, finished) == (len(three), [Change("appended", "s", [{"n": 4}], 1)])


def test_bytes_glued_to_a_last_line_without_newline_are_never_delivered_as_a_new_line() -> None:
    """Catches: the glue check reading past the data when the bytes start mid-file (offset > 0):
    ``{"n":2}`` glued onto ``{"n":1}`` was delivered as a new item, the file's line being neither."""
    state = FileState(Path("s.jsonl"), "s")
    start = encode_items([A]) + b'{"n":1}'
    assert look(state, start) == (0, [Change("appended", "s", [A, B], 2)])
    glued = start + b'{"n":2}\n'
    offset, changes = look_quickly(state, glued)
    assert offset == len(encode_items([A])) and changes is None  # the whole file is needed


def test_a_file_renamed_over_with_the_same_first_lines_is_a_replacement_not_an_append() -> None:
    """Catches: "same file" decided by ``identity !=``: a new file (another inode, no marks)
    that began with the same bytes was taken for the old one grown, and only its new line sent."""
    state = FileState(Path("s.jsonl"), "s")
    two = encode_items([A, B])
    assert look(state, two, mark=None) == (0, [Change("appended", "s", [A, B], 2)])
    changes = look(state, two + encode_items([C]), mark=None, identity=(1, 8))[1]
    assert changes == [Change("replaced", "s", [A, B, C], 3)]


def test_what_a_wake_up_saw_cannot_be_changed_afterwards() -> None:
    seen = Seen(FILE, 10, MARK)
    with pytest.raises(dataclasses.FrozenInstanceError):
        seen.size = 11  # type: ignore[misc]
    assert hash(seen) == hash(Seen(FILE, 10, MARK))
