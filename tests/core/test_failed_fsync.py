"""A failed fsync leaves the session file byte-identical, on every write path, blocking and async.

The error reaches the caller and the file is exactly what it was before the call, so a retry
neither duplicates nor loses anything. The async calls run their syncs in worker threads
through other functions than their blocking twins (``storage.sync_or_undo`` after an inline
write, a compaction's replace), so each is tested itself: a failed ``fdatasync`` on the async
append once no longer undid it. A removal over 1 MiB is kept in an unnamed file
(``core/undo_buffer.py``) and must be put back from the offset where it began.

No unprivileged way to make fsync fail exists (dm-error needs root), so a forked child patches
``storage._fdatasync`` to raise EIO; the parent compares the bytes.
"""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pytest
from process_helpers import answer_from_fork

from jsonl_session import JSONLSession
from jsonl_session.core import item_times, undo_buffer

_BATCH = [{"role": "user", "content": "x" * 3000}, {"role": "assistant", "content": "y" * 3000}]
BIG = undo_buffer.IN_MEMORY + 4096  # spills to disk when removed


def _rewrite(session: JSONLSession) -> None:
    with session.rewrite() as draft:
        draft.items = draft.items[:1]


OPERATIONS: dict[str, Callable[[JSONLSession], object]] = {
    "add": lambda session: session.add_items_sync(_BATCH),
    "add-async": lambda session: asyncio.run(session.add_items(_BATCH)),
    "add-one-async": lambda session: asyncio.run(session.add_items([{"role": "user", "content": "hi"}])),
    "pop": lambda session: session.pop_item_sync(),
    "pop-async": lambda session: asyncio.run(session.pop_item()),
    "clear": lambda session: session.clear_session_sync(),
    "clear-async": lambda session: asyncio.run(session.clear_session()),
    "replace": lambda session: session.replace_items_sync([{"replaced": True}]),
    "replace-async": lambda session: asyncio.run(session._atomic_replace_items([{"replaced": True}])),
    "rewrite": _rewrite,
    "rewind": lambda session: session.rewind_sync(1),
    "rewind-async": lambda session: asyncio.run(session.rewind(1)),
}


def _child(conn: Connection, directory: str, operation: str, warm: bool, undo_fails: str | None) -> None:
    try:
        from jsonl_session.core import storage

        session = JSONLSession("faults", directory)
        if warm:  # the folder is synced already: the async append then writes inline
            session.get_items_sync(limit=1)
            session._handle.folder_unsynced = False
        real = storage._fdatasync

        def failing(fd: int) -> None:
            raise OSError(errno.EIO, "fsync failed")

        storage._fdatasync = failing
        if undo_fails == "restore":  # the disk refuses a removal's bytes back too

            def refused(self: undo_buffer.Removed, fd: int) -> None:
                raise OSError(errno.ENOSPC, "restore failed")

            undo_buffer.Removed.restore = refused  # type: ignore[method-assign]
        elif undo_fails == "truncate":  # an append's bytes cannot be cut off again

            def cannot_cut(fd: int, length: int) -> None:
                raise OSError(errno.EROFS, "truncate failed")

            storage.os.ftruncate = cannot_cut  # type: ignore[attr-defined]
        try:
            OPERATIONS[operation](session)
            outcome = "returned"
        except OSError as exc:
            outcome = errno.errorcode.get(exc.errno or 0, str(exc))
        finally:
            storage._fdatasync = real
        conn.send(("ok", outcome))
    except BaseException as exc:  # noqa: BLE001  (reported: the parent asserts on it)
        conn.send(("raised", f"{type(exc).__name__}: {exc}"))


def fail_fsync_in_child(
    directory: Path, operation: str, *, warm: bool = False, undo_fails: str | None = None
) -> tuple[str, str]:
    result: tuple[str, str] = answer_from_fork(_child, str(directory), operation, warm, undo_fails)
    return result


def seeded(directory: Path, items: list[dict[str, Any]]) -> tuple[JSONLSession, bytes]:
    session = JSONLSession("faults", directory)
    session.add_items_sync(items)
    return session, session.path.read_bytes()


TWO_TURNS = [
    {"role": "user", "content": "first"},
    {"role": "assistant", "content": "one"},
    {"role": "user", "content": "second"},
    {"role": "assistant", "content": "two"},
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("warm", [False, True], ids=["first-write", "folder-synced"])
@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_a_failed_fsync_leaves_the_file_byte_identical(tmp_path: Path, operation: str, warm: bool) -> None:
    """Catches: the async append's ``sync_or_undo`` not undoing (the bytes stay, a retry
    duplicates them), and any path whose cut or write is not taken back."""
    session, before = seeded(tmp_path, TWO_TURNS)
    assert fail_fsync_in_child(tmp_path, operation, warm=warm) == ("ok", "EIO")
    assert session.path.read_bytes() == before
    assert not session.sidecar_path.exists()
    assert [path.name for path in tmp_path.iterdir() if path.suffix != ".times"] == [session.path.name], (
        "a temporary file was left"
    )
    session.add_items_sync([{"n": 3}])  # and the next write works
    assert session.path.read_bytes() == before + b'{"n":3}\n'


@pytest.mark.timeout(60)
@pytest.mark.parametrize("operation", ["pop", "pop-async", "rewind", "rewind-async", "clear", "clear-async"])
def test_a_failed_fsync_puts_back_an_item_over_1_mib_after_other_items(
    tmp_path: Path, operation: str
) -> None:
    """Catches: the undo buffer copying the spilled bytes from offset 0 instead of where the
    removal began (a failed pop of the newest item "restored" the file's first bytes)."""
    items = [
        {"role": "user", "content": "a" * 5000},
        {"role": "assistant", "content": "b" * 700_000},
        {"role": "user", "content": "c" * BIG},  # a turn of its own, over 1 MiB
    ]
    session, before = seeded(tmp_path, items)
    assert fail_fsync_in_child(tmp_path, operation) == ("ok", "EIO")
    after = session.path.read_bytes()
    assert len(after) == len(before) and after == before
    assert session.pop_item_sync() == items[-1]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("operation", "undo_fails"),
    [("pop", "restore"), ("pop-async", "restore"), ("clear", "restore"), ("add", "truncate")],
)
def test_when_the_bytes_cannot_go_back_either_the_fsync_error_is_the_one_raised(
    tmp_path: Path, operation: str, undo_fails: str
) -> None:
    """Catches: the best-effort undo's own error escaping (its ``except OSError`` taken away,
    in a removal's restore or an append's cut): the caller must learn that the change was not
    made durable, not that the undo failed."""
    seeded(tmp_path, TWO_TURNS)
    assert fail_fsync_in_child(tmp_path, operation, undo_fails=undo_fails) == ("ok", "EIO")


def _add_then_fail_a_pop(conn: Connection, directory: str, run: str) -> None:
    """In this process: add two items (really synced), then pop the newest with a failing fsync."""
    try:
        from jsonl_session.core import storage

        session = JSONLSession("faults", directory)
        session.add_items_sync([{"n": 1}])
        if "one" not in run:  # else the pop takes the first line, the long way (storage.pop)
            session.add_items_sync([{"n": 2}])  # the item this object added last: its pop blanks the record
        times = Path(f"{session.path}.times").read_bytes()
        real = storage._fdatasync

        def failing(fd: int) -> None:
            raise OSError(errno.EIO, "fsync failed")

        storage._fdatasync = failing
        if run.endswith("no-undo"):  # the line cannot go back either: nor may its record

            def refused(self: undo_buffer.Removed, fd: int) -> None:
                raise OSError(errno.ENOSPC, "restore failed")

            undo_buffer.Removed.restore = refused  # type: ignore[method-assign]
        try:
            if "async" in run:
                asyncio.run(session.pop_item())
            else:
                session.pop_item_sync()
            outcome = "returned"
        except OSError as exc:
            outcome = errno.errorcode.get(exc.errno or 0, str(exc))
        finally:
            storage._fdatasync = real
        conn.send(("ok", (outcome, times)))
    except BaseException as exc:  # noqa: BLE001  (reported: the parent asserts on it)
        conn.send(("raised", f"{type(exc).__name__}: {exc}"))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("run", ["sync", "async"])
def test_a_failed_pop_leaves_its_items_time_as_it_was(tmp_path: Path, run: str) -> None:
    """Catches: a durable pop that blanks its item's ``.times`` record before its sync (the async
    one did, on the loop) and leaves it blank when the sync fails: the item came back without
    its time."""
    status, answer = answer_from_fork(_add_then_fail_a_pop, str(tmp_path), run)
    assert status == "ok", answer
    outcome, times = answer
    assert outcome == "EIO"
    session = JSONLSession("faults", tmp_path)
    assert session.path.read_bytes() == b'{"n":1}\n{"n":2}\n'
    assert Path(f"{session.path}.times").read_bytes() == times
    assert [added is not None for _, added in session.get_items_with_times_sync()] == [True, True]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("run", ["async-no-undo", "sync-no-undo", "one-async-no-undo", "one-sync-no-undo"])
def test_a_pop_whose_line_cannot_go_back_leaves_no_record_for_it(tmp_path: Path, run: str) -> None:
    """Catches: the record kept (or put back) after a failed sync whose line could not be put
    back either: a record of an item that is not in the file, whose time a line identical to it
    would take (found in review; the sync pop and the long way kept it)."""
    status, answer = answer_from_fork(_add_then_fail_a_pop, str(tmp_path), run)
    assert status == "ok", answer
    assert answer[0] == "EIO"
    session = JSONLSession("faults", tmp_path)
    kept = [] if run.startswith("one") else [b'{"n":1}']
    assert session.path.read_bytes() == b"".join(line + b"\n" for line in kept)
    records = item_times.parse_records(Path(f"{session.path}.times").read_bytes())
    assert [record[2] for record in records] == [item_times.fingerprint(line) for line in kept]
