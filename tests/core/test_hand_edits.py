"""Files as people and crashes leave them: hand edits, torn tails, replaced files."""

from __future__ import annotations

import asyncio
import os
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

from jsonl_session import ItemNotStorableError, JSONLSession, MalformedLineError, TornTailWarning


def write(session: JSONLSession, data: bytes) -> None:
    session.path.parent.mkdir(parents=True, exist_ok=True)
    session.path.write_bytes(data)


def test_blank_lines_crlf_and_bom_are_accepted(session: JSONLSession) -> None:
    write(session, b'\xef\xbb\xbf{"a":1}\r\n\r\n   \n{"b":2}\r\n\n')
    assert session.get_items_sync() == [{"a": 1}, {"b": 2}]
    assert session.get_items_sync(1) == [{"b": 2}]
    assert session.get_items_sync(2) == [{"a": 1}, {"b": 2}]
    assert session.pop_item_sync() == {"b": 2}
    assert session.pop_item_sync() == {"a": 1}
    assert session.pop_item_sync() is None


def test_bom_on_a_file_of_one_line(session: JSONLSession) -> None:
    write(session, b'\xef\xbb\xbf{"a":1}\n')
    assert session.get_items_sync(1) == [{"a": 1}]
    assert session.get_items_sync() == [{"a": 1}]


def test_last_line_without_newline_is_an_item_and_next_append_adds_it(session: JSONLSession) -> None:
    write(session, b'{"a":1}\n{"b":2}')
    assert session.get_items_sync() == [{"a": 1}, {"b": 2}]
    assert session.get_items_sync(1) == [{"b": 2}]
    session.add_items_sync([{"c": 3}])
    assert session.path.read_bytes() == b'{"a":1}\n{"b":2}\n{"c":3}\n'


def test_pop_of_a_last_line_without_newline(session: JSONLSession) -> None:
    write(session, b'{"a":1}\n{"b":2}')
    assert session.pop_item_sync() == {"b": 2}
    assert session.path.read_bytes() == b'{"a":1}\n'


def test_torn_tail_is_skipped_by_readers_and_moved_aside_by_the_next_writer(session: JSONLSession) -> None:
    write(session, b'{"a":1}\n{"b":"half a li')
    before = session.path.read_bytes()
    assert session.get_items_sync() == [{"a": 1}]
    assert session.get_items_sync(5) == [{"a": 1}]
    assert session.path.read_bytes() == before  # readers never repair
    with pytest.warns(TornTailWarning, match="partial last line"):
        session.add_items_sync([{"c": 3}])
    assert session.path.read_bytes() == b'{"a":1}\n{"c":3}\n'
    assert session.sidecar_path.read_bytes() == b'{"b":"half a li\n'
    assert session.get_items_sync() == [{"a": 1}, {"c": 3}]


def test_pop_moves_a_torn_tail_aside_then_pops_the_real_last_item(session: JSONLSession) -> None:
    write(session, b'{"a":1}\n{"b":2}\n{"c":')
    with pytest.warns(TornTailWarning):
        assert session.pop_item_sync() == {"b": 2}
    assert session.path.read_bytes() == b'{"a":1}\n'
    assert session.sidecar_path.read_bytes() == b'{"c":\n'


def test_every_torn_fragment_is_kept_in_the_sidecar(session: JSONLSession) -> None:
    for fragment in (b'{"x', b"\x00\xff garbage"):
        with open(session.path if session.path.exists() else _mk(session), "ab") as f:
            f.write(fragment)
        with pytest.warns(TornTailWarning):
            session.add_items_sync([{"ok": True}])
    assert session.sidecar_path.read_bytes() == b'{"x\n\x00\xff garbage\n'
    assert session.get_items_sync() == [{"ok": True}, {"ok": True}]


def _mk(session: JSONLSession) -> Path:
    session.path.parent.mkdir(parents=True, exist_ok=True)
    session.path.touch()
    return session.path


def test_repair_sync_moves_a_torn_tail_now(session: JSONLSession) -> None:
    write(session, b'{"a":1}\n{"b')
    with pytest.warns(TornTailWarning):
        assert session.repair_sync() == b'{"b'
    assert session.repair_sync() is None
    assert session.path.read_bytes() == b'{"a":1}\n'


@pytest.mark.parametrize(
    ("content", "line", "fragment"),
    [
        (b'{"a":1}\n{"b":\n{"c":3}\n', 2, "not valid JSON"),
        (b'{"a":1}\n[1, 2]\n{"c":3}\n', 2, "not a JSON object"),
        (b'{"a":1}\n\n\n"text"\n{"c":3}\n', 4, "not a JSON object"),
        (b'<<<<<<< HEAD\n{"a":1}\n', 1, "<<<<<<< HEAD"),
        (b'{"a":NaN}\n', 1, "not valid JSON"),
    ],
)
def test_malformed_line_names_file_line_and_text_and_leaves_file_alone(
    session: JSONLSession, content: bytes, line: int, fragment: str
) -> None:
    write(session, content)
    with pytest.raises(MalformedLineError) as caught:
        session.get_items_sync()
    error = caught.value
    assert error.path == session.path
    assert error.line == line
    assert f"{session.path}:{line}:" in str(error)
    assert fragment in str(error)
    assert session.path.read_bytes() == content


def test_limited_read_reports_the_true_line_number(session: JSONLSession) -> None:
    write(session, b'{"a":1}\n' * 5000 + b"oops\n" + b'{"b":2}\n')
    assert session.get_items_sync(1) == [{"b": 2}]
    with pytest.raises(MalformedLineError) as caught:
        session.get_items_sync(2)
    assert caught.value.line == 5001


def test_pop_of_a_malformed_last_line_changes_nothing(session: JSONLSession) -> None:
    content = b'{"a":1}\n{"b" 2}\n'
    write(session, content)
    with pytest.raises(MalformedLineError):
        session.pop_item_sync()
    assert session.path.read_bytes() == content


@pytest.mark.parametrize(
    ("item", "reason"),
    [
        ({"x": float("nan")}, r"item\['x'\] is nan"),
        ({"x": [1, float("inf")]}, r"item\['x'\]\[1\] is inf"),
        ({"x": 2**64}, r"item\['x'\] is an integer beyond 64 bits"),
        ({"x": {"y": -(2**63) - 1}}, r"item\['x'\]\['y'\] is an integer beyond 64 bits"),
        ({"x": object()}, r"item\['x'\] is a object"),
        ({"x": {1, 2}}, r"item\['x'\] is a set"),
        ({"x": (1, 2)}, "tuple"),
        ({1: "non-string key"}, "key 1 that is not a str"),
        (["not", "a", "dict"], "must be a dict"),
    ],
)
def test_items_that_cannot_round_trip_are_refused_before_writing(
    session: JSONLSession, item: object, reason: str
) -> None:
    session.add_items_sync([{"first": 1}])
    before = session.path.read_bytes()
    with pytest.raises(ItemNotStorableError, match=reason) as caught:
        session.add_items_sync([{"ok": 1}, item])
    assert caught.value.index == 1
    assert session.path.read_bytes() == before


def test_datetime_and_uuid_are_refused(session: JSONLSession) -> None:
    import datetime
    import uuid

    for value in (datetime.datetime(2026, 1, 1), uuid.uuid4()):
        with pytest.raises(ItemNotStorableError, match=type(value).__name__):
            session.add_items_sync([{"v": value}])
    assert not session.path.exists()


def test_huge_integers_in_a_hand_edited_file_come_back_exact(session: JSONLSession) -> None:
    write(
        session,
        b'{"id":123456789012345678901234567890,"n":-99999999999999999999}\n{"small":18446744073709551615}\n',
    )
    expected = [{"id": 123456789012345678901234567890, "n": -99999999999999999999}, {"small": 2**64 - 1}]
    assert session.get_items_sync() == expected
    assert session.get_items_sync(2) == expected
    assert session.pop_item_sync() == expected[1]
    assert session.pop_item_sync() == expected[0]


def test_file_replaced_by_rename_is_seen_and_written_by_the_next_call(session: JSONLSession) -> None:
    session.add_items_sync([{"old": 1}])
    assert session.get_items_sync() == [{"old": 1}]
    old_inode = session.path.stat().st_ino
    replacement = session.path.with_name("editor-save.tmp")
    replacement.write_bytes(b'{"new":1}\n')
    os.replace(replacement, session.path)  # what editors and git checkout do
    assert session.get_items_sync() == [{"new": 1}]
    session.add_items_sync([{"new": 2}])
    assert session.path.read_bytes() == b'{"new":1}\n{"new":2}\n'
    assert session.path.stat().st_ino != old_inode


def test_file_deleted_under_an_open_session(session: JSONLSession) -> None:
    session.add_items_sync([{"a": 1}])
    session.path.unlink()
    assert session.get_items_sync() == []
    assert session.pop_item_sync() is None
    session.add_items_sync([{"b": 2}])
    assert session.path.read_bytes() == b'{"b":2}\n'


def test_file_rewritten_in_place_is_seen(session: JSONLSession) -> None:
    session.add_items_sync([{"a": 1}, {"b": 2}])
    session.path.write_bytes(b'{"edited":true}\n')  # truncate + write, same inode
    assert session.get_items_sync() == [{"edited": True}]


def test_hard_linked_file_replaced_is_still_detected(session: JSONLSession, tmp_path: Path) -> None:
    session.add_items_sync([{"a": 1}])
    os.link(session.path, tmp_path / "backup.jsonl")
    replacement = session.path.with_name("new.tmp")
    replacement.write_bytes(b'{"b":2}\n')
    os.replace(replacement, session.path)
    session.add_items_sync([{"c": 3}])
    assert session.get_items_sync() == [{"b": 2}, {"c": 3}]
    assert (tmp_path / "backup.jsonl").read_bytes() == b'{"a":1}\n'


def test_rewrite_replaces_atomically_and_only_when_changed(session: JSONLSession) -> None:
    session.add_items_sync([{"role": "system", "content": "x"}, {"role": "user", "content": "hi"}])
    inode = session.path.stat().st_ino
    with session.rewrite() as draft:
        pass
    assert session.path.stat().st_ino == inode
    with session.rewrite() as draft:
        draft.items = [i for i in draft.items if i["role"] != "system"]
    assert session.get_items_sync() == [{"role": "user", "content": "hi"}]
    assert session.path.stat().st_ino != inode
    assert oct(session.path.stat().st_mode & 0o777) == oct(0o600)
    assert sorted(p.name for p in session.path.parent.iterdir() if p.suffix != ".times") == [
        session.path.name
    ]


def test_rewrite_that_raises_changes_nothing(session: JSONLSession) -> None:
    session.add_items_sync([{"a": 1}])
    before = session.path.read_bytes()
    with pytest.raises(RuntimeError), session.rewrite() as draft:
        draft.items.append({"b": 2})
        raise RuntimeError("abort the edit")
    assert session.path.read_bytes() == before


def test_rewrite_with_an_unstorable_item_changes_nothing(session: JSONLSession) -> None:
    session.add_items_sync([{"a": 1}])
    before = session.path.read_bytes()
    with pytest.raises(ItemNotStorableError), session.rewrite() as draft:
        draft.items.append({"b": float("nan")})
    assert session.path.read_bytes() == before
    assert sorted(p.name for p in session.path.parent.iterdir() if p.suffix != ".times") == [
        session.path.name
    ]


def test_no_warning_when_nothing_is_torn(session: JSONLSession) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        session.add_items_sync([{"a": 1}])
        session.pop_item_sync()
        session.add_items_sync([{"a": 1}])


def test_a_bom_before_a_blank_first_line_or_alone(session: JSONLSession) -> None:
    write(session, b'\xef\xbb\xbf\n{"a":1}\n')
    assert session.get_items_sync(5) == [{"a": 1}]
    assert session.get_items_sync() == [{"a": 1}]
    assert session.pop_item_sync() == {"a": 1}
    assert session.pop_item_sync() is None
    write(session, b"\xef\xbb\xbf")
    assert session.get_items_sync(1) == [] and session.get_items_sync() == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a lone BOM is not a torn tail
        session.add_items_sync([{"b": 2}])
    assert session.get_items_sync() == [{"b": 2}]
    assert session.get_items_sync(1) == [{"b": 2}]


def test_rewrite_writes_items_changed_in_place(session: JSONLSession) -> None:
    """Regression: the draft was a shallow copy, so an in-place edit also changed the
    'original' it was compared with, and nothing was written."""
    session.add_items_sync([{"role": "user", "content": "my password is hunter2"}])
    with session.rewrite() as draft:
        draft.items[0]["content"] = "my password is [REDACTED]"
    assert session.get_items_sync() == [{"role": "user", "content": "my password is [REDACTED]"}]


def test_rewrite_notices_changes_that_compare_equal(session: JSONLSession) -> None:
    session.add_items_sync([{"a": 1, "b": 2}])
    with session.rewrite() as draft:
        draft.items[0]["a"] = 1.0  # 1 == 1.0, but the bytes differ
    assert session.path.read_bytes() == b'{"a":1.0,"b":2}\n'
    with session.rewrite() as draft:
        draft.items = [{"b": 2, "a": 1.0}]  # same dict, other key order
    assert session.path.read_bytes() == b'{"b":2,"a":1.0}\n'


def test_rewrite_of_a_crlf_file_with_no_change_leaves_it_alone(session: JSONLSession) -> None:
    write(session, b'{"a":1}\r\n\r\n')
    with session.rewrite():
        pass
    assert session.path.read_bytes() == b'{"a":1}\r\n\r\n'


def test_clear_keeps_a_torn_tail_in_the_sidecar(session: JSONLSession) -> None:
    write(session, b'{"a":1}\n{"b":"cut')
    with pytest.warns(TornTailWarning):
        session.clear_session_sync()
    assert session.path.read_bytes() == b""
    assert session.sidecar_path.read_bytes() == b'{"b":"cut\n'


def test_a_long_torn_tail_whose_end_looks_like_an_item_is_not_returned(session: JSONLSession) -> None:
    """Regression: the newest-lines read parsed the end of a line longer than its first
    block, so get_items(limit=1) returned a fragment of a torn line as an item."""
    fragment = b'{"role":"user","content":"' + b"x" * 10_000 + b'","text":"' + b"y" * 100 + b'"}'
    write(session, b'{"a":1}\n' + fragment[:20] + fragment[-3000:])  # torn, but its end parses
    assert session.get_items_sync(1) == [{"a": 1}]
    assert session.get_items_sync() == [{"a": 1}]


def test_new_sidecar_is_made_durable_before_the_session_is_cut(
    session: JSONLSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: the sidecar's directory entry was not fsynced before truncating the
    session, so a power loss could keep the cut and lose the saved bytes."""
    from jsonl_session.core import locking, storage

    events: list[str] = []
    real_fsync_directory = locking.fsync_directory
    real_ftruncate = os.ftruncate

    def spy_fsync_directory(directory: Path) -> None:
        events.append(f"fsync-dir {directory.name}")
        real_fsync_directory(directory)

    def spy_ftruncate(fd: int, length: int) -> None:
        events.append("truncate")
        real_ftruncate(fd, length)

    write(session, b'{"a":1}\n{"b')
    monkeypatch.setattr(storage, "fsync_directory", spy_fsync_directory)
    monkeypatch.setattr(os, "ftruncate", spy_ftruncate)  # the os module storage calls
    with pytest.warns(TornTailWarning):
        session.add_items_sync([{"c": 3}])
    assert events[:2] == [f"fsync-dir {session.path.parent.name}", "truncate"]


@pytest.mark.parametrize("start", [100, 16 * 1024 - 18, 16 * 1024 - 9, 16 * 1024, 32 * 1024 - 1])
def test_a_huge_integer_anywhere_in_a_large_file_is_read_exactly(session: JSONLSession, start: int) -> None:
    """The long-number check works in overlapping 16 KiB pieces: a number that starts at
    ``start`` (across a piece boundary, for some) must still be found and read exactly."""
    first = b'{"p":"' + b"y" * (start - 14) + b'"}\n'  # 9 bytes of frame, then '{"n":' is 5 more
    big = b'{"n":123456789012345678901234567890}\n'
    filler = b'{"pad":"' + b"x" * 100 + b'"}\n'
    write(session, first + big + filler * 400)
    assert session.path.read_bytes().index(b"1234567890123") == start
    assert session.get_items_sync()[1] == {"n": 123456789012345678901234567890}


CHANGES: dict[str, Callable[[JSONLSession], object]] = {
    "clear": lambda session: session.clear_session_sync(),
    "replace": lambda session: session.replace_items_sync([{"c": 3}]),
    "append": lambda session: session.add_items_sync([{"c": 3}]),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_last_item_without_newline_is_not_taken_for_a_torn_tail(session: JSONLSession, change: str) -> None:
    """Catches: the torn-tail check reading ``blank and parses`` for ``blank or parses``: a whole
    last item that only lacks its newline (an editor saved it so) went to the .torn sidecar."""
    write(session, b'{"a":1}\n{"b":2}')
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no TornTailWarning
        CHANGES[change](session)
    assert not session.sidecar_path.exists()
    expected = {"clear": [], "replace": [{"c": 3}], "append": [{"a": 1}, {"b": 2}, {"c": 3}]}[change]
    assert session.get_items_sync() == expected


@pytest.mark.parametrize(
    "call", ["add_items_sync", "clear_session_sync", "pop_item_sync", "replace_items_sync"]
)
def test_a_torn_tail_is_saved_owner_only_and_the_warning_names_the_callers_line(
    session: JSONLSession, call: str
) -> None:
    """Catches: the .torn sidecar created with another mode than 0600 (a fragment of a private
    conversation readable by others), and a warning pointing into the library: a fixed
    ``stacklevel`` named a line of ``session/store.py`` (the calls reach it at different depths)."""
    write(session, b'{"a":1}\n{"b":"cut')
    os.umask(current := os.umask(0))  # read the umask back unchanged
    method = getattr(session, call)
    arguments = ([{"c": 3}],) if call in ("add_items_sync", "replace_items_sync") else ()
    with pytest.warns(TornTailWarning) as caught:
        method(*arguments)
    assert os.stat(session.sidecar_path).st_mode & 0o777 == 0o600 & ~current
    assert [(Path(warning.filename).name, warning.lineno) for warning in caught] == [
        (Path(__file__).name, sys._getframe().f_lineno - 3)
    ]


@pytest.mark.parametrize("durable", [True, False], ids=["durable", "fast"])
def test_an_async_append_after_a_last_line_without_newline(sessions_dir: Path, durable: bool) -> None:
    """Catches: the async append's inline path taken for a file whose last line has no newline
    (``or`` made ``and`` in its test): the new line was glued onto the old one."""
    session = JSONLSession("s", sessions_dir, durable=durable)
    session.add_items_sync([{"a": 1}])  # the folder is synced: later appends go inline
    with session.path.open("ab") as file:
        file.write(b'{"b":2}')  # an editor saved the last line without its newline

    async def main() -> None:
        await session.add_items([{"c": 3}])

    asyncio.run(main())
    assert session.path.read_bytes() == b'{"a":1}\n{"b":2}\n{"c":3}\n'


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o755, 0o604])
def test_a_rewrite_keeps_the_files_mode_bit_for_bit(session: JSONLSession, mode: int) -> None:
    """Catches: the old mode masked with anything but 0o777 (0o776 dropped others' execute bit)."""
    session.add_items_sync([{"a": 1}])
    os.chmod(session.path, mode)
    session.replace_items_sync([{"b": 2}])
    assert oct(os.stat(session.path).st_mode & 0o7777) == oct(mode)


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_torn_tail_of_one_byte_is_kept(session: JSONLSession, change: str) -> None:
    """Catches: the quick "does the file end in a newline" test reading the byte before the
    last: a one-byte fragment after a newline passed for a whole file, and clear lost it."""
    write(session, b'{"a":1}\n{')
    with pytest.warns(TornTailWarning):
        CHANGES[change](session)
    assert session.sidecar_path.read_bytes() == b"{\n"
