"""The directory API: list, open, delete, fork; permissions; no lock files."""

from __future__ import annotations

import copy
import os
import pickle
import stat
import subprocess
import sys
import tempfile
import time
import weakref
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_session import JSONLSession, SessionDirectory, SessionFileError, SessionInfo, UnsafePathError
from jsonl_session.session.listing import utc_seconds


def test_list_reports_counts_sizes_and_newest_first(sessions_dir: Path) -> None:
    store = SessionDirectory(sessions_dir)
    assert store.list() == [] and store.ids() == []
    # without timestamps a session ranks by mtime (with them, by its newest item's stamp,
    # and two adds in one millisecond tie, broken by id)
    store.open("old", timestamps=False).add_items_sync([{"a": 1}, {"b": 2}])
    store.open("new", timestamps=False).add_items_sync([{"c": 3}])
    os.utime(store.open("old").path, (1_000_000_000, 1_000_000_000))
    (sessions_dir / "README.txt").write_text("not a session")
    infos = store.list()
    assert [(i.session_id, i.items) for i in infos] == [("new", 1), ("old", 2)]
    assert infos[1].size == len(b'{"a":1}\n{"b":2}\n')
    assert infos[1].modified.year == 2001
    assert store.ids() == ["new", "old"]


def test_a_listed_session_is_an_immutable_value(sessions_dir: Path) -> None:
    JSONLSession("a", sessions_dir).add_items_sync([{"role": "user", "content": "hi"}])
    (first,) = SessionDirectory(sessions_dir).list()
    (again,) = SessionDirectory(sessions_dir).list()
    assert first == again and hash(first) == hash(again) and len({first, again}) == 1
    assert first != SessionInfo("b", first.path, 1, first.size, first.modified)
    assert repr(first).startswith("SessionInfo(session_id='a', path=")
    assert (first.items, first.paused, first.forked_from) == (1, False, None)
    with pytest.raises(AttributeError, match="immutable"):
        first.items = 2
    with pytest.raises(AttributeError, match="immutable"):
        del first.size
    # as the frozen dataclass it replaced: it pickles (multiprocessing), copies, matches, weakrefs
    assert pickle.loads(pickle.dumps(first)) == first
    assert copy.copy(first) == first and copy.deepcopy(first) == first
    match first:
        case SessionInfo("a", _, items):
            assert items == 1
        case _:
            pytest.fail("no match")
    assert weakref.ref(first)() is first


def test_a_listed_session_equals_one_built_from_a_path_and_a_datetime(sessions_dir: Path) -> None:
    # a listing keeps str paths and stat times until asked (start-up), and is the same value
    JSONLSession("a", sessions_dir).add_items_sync([{"role": "user", "content": "hi"}])
    path = sessions_dir / "a.jsonl"
    (listed,) = SessionDirectory(str(sessions_dir) + "/").list()  # a trailing slash, as a shell completes
    modified = datetime.fromtimestamp(os.stat(path).st_mtime, tz=timezone.utc)
    newest = JSONLSession("a", sessions_dir).get_items_with_times_sync()[-1][1]
    assert (
        newest is not None and listed.last_activity == newest.timestamp()
    )  # the newest item's time, from .times
    built = SessionInfo(
        "a", path, 1, path.stat().st_size, modified, last_activity=listed.last_activity, default_title="hi"
    )
    assert hash(listed) == hash(built) and listed == built and repr(listed) == repr(built)
    assert type(listed.path) is type(path) and listed.path == path
    assert listed.mtime == built.mtime == modified.timestamp()
    assert pickle.loads(pickle.dumps(listed)) == built


def test_the_listing_orders_as_its_datetimes_do(sessions_dir: Path) -> None:
    # 400 ns apart: different stat times, the same microsecond, so the later id comes first
    store = SessionDirectory(sessions_dir)
    for session_id, nanoseconds in (("a", 1_700_000_000_000_000_400), ("b", 1_700_000_000_000_000_000)):
        store.open(session_id).add_items_sync([{"n": 1}])
        os.utime(sessions_dir / f"{session_id}.jsonl", ns=(nanoseconds, nanoseconds))
    infos = store.list()
    assert infos[0].mtime > infos[1].mtime or infos[0].modified == infos[1].modified
    assert [info.session_id for info in infos] == ["b", "a"]
    assert infos == sorted(infos, key=lambda info: (info.modified, info.session_id), reverse=True)


@settings(max_examples=2000, deadline=None)
@given(st.floats(min_value=-2e9, max_value=4e9, allow_nan=False))
def test_a_listed_time_is_the_datetime_and_second_datetime_shows(mtime: float) -> None:
    shown = datetime.fromtimestamp(mtime, tz=timezone.utc)
    assert time.gmtime(utc_seconds(mtime))[:6] == shown.timetuple()[:6]
    listed = SessionInfo._listed("a", "a.jsonl", os.stat_result((0,) * 7 + (0, mtime, 0)), 1, False, None)
    assert listed.modified == shown and listed.mtime == shown.timestamp()


def test_the_empty_folder_name_is_the_current_folder(
    sessions_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Path("") is "."; a listing that keeps the name must scan "." too, not find nothing
    JSONLSession("a", sessions_dir).add_items_sync([{"n": 1}])
    monkeypatch.chdir(sessions_dir)
    store = SessionDirectory("")
    assert store.ids() == ["a"] and [info.path for info in store.list()] == [Path("a.jsonl")]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(["", "/", "//", ".", "..", "a", "b c", "./"]), max_size=8).map("".join))
def test_a_listed_path_is_written_as_pathlib_writes_it(folder: str) -> None:
    # listing works on str paths (start-up); the names in messages and warnings stay as before
    store = SessionDirectory(folder)
    assert store._path_of("x.jsonl") == str(PurePosixPath(folder) / "x.jsonl")
    assert PurePosixPath(store.directory) == PurePosixPath(folder)


def test_a_session_whose_time_datetime_cannot_hold_is_reported_and_the_rest_listed() -> None:
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no tmpfs at /dev/shm to hold a time past year 9999")
    with tempfile.TemporaryDirectory(dir="/dev/shm") as folder:
        for session_id in ("far", "near"):
            JSONLSession(session_id, folder).add_items_sync([{"n": 1}])
        os.utime(Path(folder, "far.jsonl"), ns=(10**21, 10**21))  # the year 33658
        if os.stat(Path(folder, "far.jsonl")).st_mtime_ns != 10**21:
            pytest.skip("this file system cannot hold that time")
        errors: list[tuple[Path, Exception]] = []
        infos = SessionDirectory(folder).list(on_error=lambda path, exc: errors.append((path, exc)))
        assert [info.session_id for info in infos] == ["near"]
        assert [(path.name, type(exc)) for path, exc in errors] == [("far.jsonl", SessionFileError)]
        assert "far.jsonl" in str(errors[0][1]) and "9999" in str(errors[0][1])
        result = subprocess.run(
            [sys.executable, "-m", "jsonl_session", "ls", "--dir", folder],
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 1 and result.stdout.split("\n")[1].startswith("near")
        assert result.stderr.count("\n") == 1 and "far.jsonl" in result.stderr, result.stderr


def test_a_session_info_keeps_what_its_constructor_was_given() -> None:
    # only a listing converts lazily; a hand-made SessionInfo is the value it was given, as before
    when = datetime(2026, 1, 1, tzinfo=timezone.utc)
    given: list[object] = ["a.jsonl", 1700000000]
    made = SessionInfo("a", given[0], 1, 2, given[1])  # type: ignore[arg-type]
    assert [made.path, made.modified] == given and type(made.path) is not Path
    as_text = SessionInfo("a", given[0], 1, 2, when)  # type: ignore[arg-type]
    assert as_text != SessionInfo("a", Path("a.jsonl"), 1, 2, when)


def test_the_folder_is_a_path_made_when_asked(sessions_dir: Path) -> None:
    store = SessionDirectory(str(sessions_dir))
    assert store.directory == sessions_dir and isinstance(store.directory, Path)
    store.directory = sessions_dir / "other"
    assert store.directory == sessions_dir / "other" and store.list() == []
    for wrong in (b"sessions", 3):
        with pytest.raises(TypeError):
            SessionDirectory(wrong)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            store.directory = wrong  # type: ignore[assignment]
    assert store.directory == sessions_dir / "other"


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
    assert sorted(p.name for p in sessions_dir.iterdir()) == [
        "x.jsonl",
        "x.jsonl.times",
    ]  # and when items came


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


def test_list_counts_items_the_way_readers_see_them(sessions_dir: Path) -> None:
    store = SessionDirectory(sessions_dir)
    session = store.open("x")
    session.add_items_sync([{"a": 1}])
    with open(session.path, "ab") as f:
        f.write(b'\n\n{"torn')
    assert [i.items for i in store.list()] == [1]
    with open(session.path, "ab") as f:
        f.write(b'":1}')  # now a valid unterminated last line
    assert [i.items for i in store.list()] == [2]


def test_fork_of_an_unstorable_item_creates_no_target(sessions_dir: Path) -> None:
    store = SessionDirectory(sessions_dir)
    sessions_dir.mkdir()
    (sessions_dir / "src.jsonl").write_bytes(b'{"id":123456789012345678901234567890}\n')
    with pytest.raises(ValueError, match="beyond 64 bits"):
        store.fork("src", "dst")
    assert store.ids() == ["src"]


def test_exists_does_not_count_a_symlink(sessions_dir: Path, tmp_path: Path) -> None:
    sessions_dir.mkdir()
    (tmp_path / "elsewhere.jsonl").write_bytes(b"{}\n")
    (sessions_dir / "x.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")
    store = SessionDirectory(sessions_dir)
    assert store.exists("x") is False
    store.open("y").add_items_sync([{"a": 1}])
    assert store.exists("y") is True


def test_every_new_directory_is_private(tmp_path: Path) -> None:
    old_umask = os.umask(0o022)
    try:
        JSONLSession("x", tmp_path / "a" / "b" / "sessions").add_items_sync([{"a": 1}])
    finally:
        os.umask(old_umask)
    for folder in (tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "sessions"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


@pytest.mark.parametrize("timeout", [None, -1, float("nan"), "5", True])
def test_lock_timeout_must_be_a_bounded_number(sessions_dir: Path, timeout: object) -> None:
    with pytest.raises(ValueError, match="lock_timeout"):
        JSONLSession("x", sessions_dir, lock_timeout=timeout)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="lock_timeout"):
        SessionDirectory(sessions_dir, lock_timeout=timeout)  # type: ignore[arg-type]


def test_a_call_inside_rewrite_on_the_same_session_fails_fast(sessions_dir: Path) -> None:
    session = JSONLSession("x", sessions_dir, lock_timeout=30)
    session.add_items_sync([{"a": 1}])
    with pytest.raises(RuntimeError, match="already holds the session's lock"), session.rewrite():
        session.get_items_sync()
    assert session.get_items_sync() == [{"a": 1}]


_READ_ONLY_MOUNT = """
set -e
mount --bind "$1" "$1"
mount -o remount,bind,ro "$1"
exec "$2" -c '
import sys
from jsonl_session import JSONLSession, SessionDirectory
directory = sys.argv[1]
assert JSONLSession("x", directory).get_items_sync() == [{"a": 1}]
assert JSONLSession("x", directory).get_items_sync(1) == [{"a": 1}]
assert [i.items for i in SessionDirectory(directory).list()] == [1]
try:
    JSONLSession("x", directory).add_items_sync([{"b": 2}])
except OSError as exc:
    print("write refused:", exc.strerror)
' "$1"
"""


def test_sessions_on_a_read_only_file_system_still_read(sessions_dir: Path) -> None:
    """Regression: readers opened the file read-write and failed with EROFS."""
    import shutil
    import subprocess
    import sys

    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("needs util-linux unshare to mount a read-only folder")
    JSONLSession("x", sessions_dir).add_items_sync([{"a": 1}])
    command = [
        unshare,
        "--user",
        "--map-root-user",
        "--mount",
        "sh",
        "-c",
        _READ_ONLY_MOUNT,
        "sh",
        str(sessions_dir),
        sys.executable,
    ]
    run = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    if run.returncode != 0 and "mount" in run.stderr and "ermission" in run.stderr:
        pytest.skip(f"user namespaces or bind mounts are not permitted here: {run.stderr.strip()}")
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "write refused: Read-only file system"


def test_an_error_after_locking_does_not_leave_the_file_locked(sessions_dir: Path, tmp_path: Path) -> None:
    """Regression: if checking the path failed after the flock was taken (here ENOTDIR,
    because the folder was replaced by a file), the lock stayed held."""
    import fcntl

    session = JSONLSession("x", sessions_dir)
    session.add_items_sync([{"a": 1}])  # caches a descriptor of sessions/x.jsonl
    moved = tmp_path / "moved"
    sessions_dir.rename(moved)
    sessions_dir.write_text("now a file")
    with pytest.raises(NotADirectoryError):
        session.get_items_sync()
    fd = os.open(moved / "x.jsonl", os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if the failed call kept its lock
    finally:
        os.close(fd)
