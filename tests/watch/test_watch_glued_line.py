"""A follower when another tool glues bytes onto a last line that had no newline.

A valid last item without its newline (a hand edit) is an item: the follower delivers it.
If another tool then appends without first writing a newline, its bytes are glued to that
line, which is another line now (a torn tail, or an item followed by more). The file has
only grown and our mark is unchanged, so "only appends" looks true, but the last delivered
line is no longer what it was: the follower must compare again, or its list and the file
part ways. Removing that check went unnoticed by the suite.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jsonl_session import JSONLSession
from jsonl_session.core.codec import encode_items
from jsonl_session.watch import Change
from jsonl_session.watch.engine import FileState, Seen
from jsonl_session.watch.follower import FileTail

A, B, C = ({"n": n} for n in range(3))
MARK = bytes(range(16))


def apply(items: list[Any], changes: list[Change]) -> list[Any]:
    """What a consumer of the changes holds afterwards."""
    for change in changes:
        if change.kind == "appended":
            items = [*items, *change.items]
        elif change.kind == "removed":
            items = items[: len(items) - change.count]
        elif change.kind in ("cleared", "deleted"):
            items = []
        elif change.kind == "replaced":
            items = list(change.items)
    return items


def look(state: FileState, content: bytes) -> list[Change]:
    """One wake-up with an unchanged mark and inode: only appends seem possible."""
    seen = Seen((1, 7), len(content), MARK)
    offset = state.wanted(seen)
    changes = state.update(seen, content[offset:], offset, None)
    if changes is None:
        changes = state.update(seen, content, 0, None)
    assert changes is not None
    return changes


# What another tool glues on, and the items every reader then sees.
GLUED = {
    "a torn fragment": (b'{"n":9', [A]),  # the line is a torn tail now: readers skip it
    "spaces, then a new line": (b'   \n{"n":2}\n', [A, B, C]),
    "a newline only": (b"\n", [A, B]),
}


@pytest.mark.parametrize("glued", sorted(GLUED))
def test_the_engine_notices_bytes_glued_to_a_last_line_without_newline(glued: str) -> None:
    """Catches: ``_after_prefix`` trusting the last delivered line when bytes follow it without a newline."""
    extra, expected = GLUED[glued]
    state = FileState(Path("s.jsonl"), "s")
    content = encode_items([A]) + b'{"n":1}'  # B, hand-written without its newline
    held = apply([], look(state, content))
    assert held == [A, B]
    held = apply(held, look(state, content + extra))
    assert held == expected


@pytest.mark.parametrize("glued", sorted(GLUED))
def test_a_follower_of_a_real_file_stays_equal_to_what_readers_see(sessions_dir: Path, glued: str) -> None:
    extra, _ = GLUED[glued]
    session = JSONLSession("s", sessions_dir, durable=False)
    session.add_items_sync([A])
    tail = FileTail(session.path, "s")
    try:
        with session.path.open("ab") as file:  # an editor: the last line without its newline
            file.write(b'{"n":1}')
        held = apply([], tail.poll() or [])
        assert held == session.get_items_sync() == [A, B]
        with session.path.open("ab") as file:  # another tool appends, no newline first
            file.write(extra)
        held = apply(held, tail.poll() or [])
        assert held == session.get_items_sync()
    finally:
        tail.close()
