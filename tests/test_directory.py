"""The directory API: list, open, delete, fork; permissions; no lock files."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from jsonl_session import JSONLSession, SessionDirectory, UnsafePathError


def test_list_reports_counts_sizes_and_newest_first(sessions_dir: Path) -> None:
    store = SessionDirectory(sessions_dir)
    assert store.list() == [] and store.ids() == []
    store.open("old").add_items_sync([{"a": 1}, {"b": 2}])
    store.open("new").add_items_sync([{"c": 3}])
    os.utime(store.open("old").path, (1_000_000_000, 1_000_000_000))
    (sessions_dir / "README.txt").write_text("not a session")
    infos = store.list()
    assert [(i.session_id, i.items) for i in infos] == [("new", 1), ("old", 2)]
    assert infos[1].size == len(b'{"a":1}\n{"b":2}\n')
    assert infos[1].modified.year == 2001
    assert store.ids() == ["new", "old"]


def test_delete(sessions_dir: Path) -> None:
    store = SessionDirectory(sessions_dir)
    session = store.open("x")
    session.add_items_sync([{"a": 1}])
    assert store.delete("x") is True
    assert store.delete("x") is False
    assert not session.path.exists()
    assert session.get_items_sync() == []


def test_fork_copies_the_first_n_items(sessions_dir: Path) -> None:
    store = SessionDirectory(sessions_dir)
    store.open("src").add_items_sync([{"i": i} for i in range(5)])
    fork = store.fork("src", "dst", at=2)
    assert fork.get_items_sync() == [{"i": 0}, {"i": 1}]
    assert store.open("src").get_items_sync() == [{"i": i} for i in range(5)]
    assert store.fork("src", "all").get_items_sync() == [{"i": i} for i in range(5)]


def test_fork_never_overwrites_and_needs_a_source(sessions_dir: Path) -> None:
    store = SessionDirectory(sessions_dir)
    store.open("src").add_items_sync([{"i": 1}])
    store.open("dst").add_items_sync([{"keep": True}])
    with pytest.raises(FileExistsError):
        store.fork("src", "dst")
    assert store.open("dst").get_items_sync() == [{"keep": True}]
    with pytest.raises(FileNotFoundError):
        store.fork("missing", "other")
    assert not store.exists("other")


def test_new_files_are_owner_only_and_directories_0700(tmp_path: Path) -> None:
    old_umask = os.umask(0o000)  # even with a permissive umask
    try:
        session = JSONLSession("x", tmp_path / "deep" / "sessions")
        session.add_items_sync([{"a": 1}])
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(session.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(session.path.parent.stat().st_mode) == 0o700


def test_no_lock_or_temporary_files_appear_next_to_sessions(sessions_dir: Path) -> None:
    session = JSONLSession("x", sessions_dir)
    session.add_items_sync([{"a": 1}, {"b": 2}])
    session.get_items_sync()
    session.pop_item_sync()
    with session.rewrite() as draft:
        draft.items.append({"c": 3})
    session.clear_session_sync()
    assert [p.name for p in sessions_dir.iterdir()] == ["x.jsonl"]


def test_symlink_at_the_session_path_is_refused(sessions_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.jsonl"
    target.write_bytes(b'{"secret":1}\n')
    sessions_dir.mkdir()
    (sessions_dir / "x.jsonl").symlink_to(target)
    session = JSONLSession("x", sessions_dir)
    for call in (session.get_items_sync, lambda: session.add_items_sync([{"a": 1}]), session.pop_item_sync):
        with pytest.raises(UnsafePathError, match="symlink"):
            call()
    assert target.read_bytes() == b'{"secret":1}\n'


def test_read_only_file_still_reads(sessions_dir: Path) -> None:
    session = JSONLSession("x", sessions_dir)
    session.add_items_sync([{"a": 1}])
    session.close()
    session.path.chmod(0o400)
    if os.access(session.path, os.W_OK):
        pytest.skip("running as root: permissions are not enforced")
    assert JSONLSession("x", sessions_dir).get_items_sync() == [{"a": 1}]
