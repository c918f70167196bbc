"""A folder watch keeps following every session when one of them cannot be read.

Stepped by hand (``catch_up()``), so no test waits on events.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from privilege_helpers import skip_unless_nobody_reads_the_source

from jsonl_session import LockTimeout, MalformedLineError, SessionDirectory
from jsonl_session.core.locking import FileHandle
from jsonl_session.watch import Change, apply, watch_directory, watch_directory_sync

A, B, C = ({"n": n} for n in range(3))


def mirror(changes: list[Change], sessions: dict[str, list[Any]]) -> list[tuple[str, str]]:
    for change in changes:
        if change.kind == "deleted":
            sessions.pop(change.session_id, None)
        else:
            apply(change, sessions.setdefault(change.session_id, []))
    return [(change.session_id, change.kind) for change in changes]


def test_a_malformed_or_conflicted_session_is_reported_and_the_others_followed(sessions_dir: Path) -> None:
    store = SessionDirectory(sessions_dir, durable=False)
    store.open("good").add_items_sync([A])
    store.open("bad").add_items_sync([A])
    sessions: dict[str, list[Any]] = {}
    with watch_directory_sync(sessions_dir) as watch:
        assert mirror(watch.catch_up(), sessions) == [("bad", "appended"), ("good", "appended")]
        with open(sessions_dir / "bad.jsonl", "ab") as file:
            file.write(b"<<<<<<< HEAD\n")  # a git conflict
        store.open("good").add_items_sync([B])
        changes = watch.catch_up()
        assert sorted(mirror(changes, sessions)) == [("bad", "failed"), ("good", "appended")]
        (failed,) = [change for change in changes if change.kind == "failed"]
        assert isinstance(failed.error, MalformedLineError)
        assert (failed.error.path, failed.error.line) == (sessions_dir / "bad.jsonl", 2)
        store.open("good").add_items_sync([C])
        assert mirror(watch.catch_up(), sessions) == [("good", "appended")]  # reported once, not again
        store.open("bad").replace_items_sync([B, C])  # fixed: it is handed over whole
        assert mirror(watch.catch_up(), sessions) == [("bad", "replaced")]
    assert sessions == {"good": [A, B, C], "bad": [B, C]}


def test_a_session_locked_longer_than_lock_timeout_is_reported_not_fatal(sessions_dir: Path) -> None:
    store = SessionDirectory(sessions_dir, durable=False)
    store.open("busy").add_items_sync([A])
    store.open("free").add_items_sync([A])
    holder = FileHandle(sessions_dir / "busy.jsonl")
    sessions: dict[str, list[Any]] = {}
    with watch_directory_sync(sessions_dir, lock_timeout=0.05) as watch:
        mirror(watch.catch_up(), sessions)
        with holder.locked(write=True, create=False, timeout=1):  # e.g. an `edit` left open
            store.open("free").add_items_sync([B])
            changes = watch.catch_up()
            assert sorted(mirror(changes, sessions)) == [("busy", "failed"), ("free", "appended")]
            assert isinstance(changes[[c.kind for c in changes].index("failed")].error, LockTimeout)
        holder.close()
        store.open("busy").add_items_sync([C])
        assert mirror(watch.catch_up(), sessions) == [("busy", "replaced")]
    assert sessions == {"busy": [A, C], "free": [A, B]}


@pytest.fixture
def open_folder() -> Iterator[Path]:
    """A folder anyone may enter (pytest's tmp_path lives under a root-only one)."""
    parent = Path(tempfile.mkdtemp(prefix="watch-folder-"))
    os.chmod(parent, 0o777)
    yield parent / "sessions"
    shutil.rmtree(parent)


def test_an_unreadable_session_is_reported_and_the_others_followed(open_folder: Path) -> None:
    folder = open_folder
    store = SessionDirectory(folder, durable=False)
    for name in ("readable", "secret"):
        store.open(name).add_items_sync([A])
        os.chmod(folder / f"{name}.jsonl", 0o666)
    os.chmod(folder / "secret.jsonl", 0)
    os.chmod(folder, 0o777)
    # Root reads everything: the watch runs in a forked child that drops to "nobody" first
    # (forked, not spawned: nobody may not be able to read this interpreter's files).
    if os.geteuid() == 0:
        skip_unless_nobody_reads_the_source()  # a clone in a private folder: nobody cannot import it
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover  (the child reports through the pipe)
        code = 1
        try:
            os.close(read_end)
            if os.geteuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
            with watch_directory_sync(folder) as watch:
                first = [(c.session_id, c.kind, type(c.error).__name__) for c in watch.catch_up()]
                SessionDirectory(folder, durable=False).open("readable").add_items_sync([C])
                second = [(c.session_id, c.kind) for c in watch.catch_up()]
            os.write(write_end, json.dumps([first, second]).encode())
            code = 0
        except BaseException as exc:  # noqa: BLE001  (reported to the parent, which fails the test)
            os.write(write_end, json.dumps(repr(exc)).encode())
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        report = json.loads(pipe.read() or b"null")
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, report
    first, second = report
    assert sorted(first) == [["readable", "appended", "NoneType"], ["secret", "failed", "PermissionError"]]
    assert second == [["readable", "appended"]]


@pytest.mark.parametrize("bad", [None, math.nan, -1, "10", True])
def test_lock_timeout_of_a_folder_watch_is_validated(sessions_dir: Path, bad: Any) -> None:
    for entry in (watch_directory, watch_directory_sync):
        with pytest.raises(ValueError, match="lock_timeout"):
            entry(sessions_dir, lock_timeout=bad)
    with watch_directory_sync(sessions_dir, lock_timeout=0) as watch:  # zero: try once, never wait
        assert watch.catch_up() == []
