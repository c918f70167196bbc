"""Security: no session id or planted link reads or writes outside the sessions folder.

Covers ids that try to climb out (plain, percent-encoded, Unicode look-alikes, absolute
paths, NUL), symlinks and FIFOs planted at a session or sidecar path, and the owner-only
modes of everything the library creates.
"""

from __future__ import annotations

import multiprocessing
import os
import stat
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_session import InvalidSessionId, JSONLSession, SessionDirectory, TornTailWarning, UnsafePathError
from jsonl_session.core.names import filename_for, id_for

_ctx = multiprocessing.get_context("fork")

HOSTILE_IDS = [
    "../escape",
    "../../etc/passwd",
    "..",
    ".",
    "...",
    "/etc/passwd",
    "/tmp/escape",
    "a/../../b",
    "sub/dir/id",
    "..\\escape",
    "%2e%2e%2fescape",  # already percent-encoded: must not be decoded into a path
    "..%2F..%2Fescape",
    "%00",
    "a\x00b",
    "\u2025/escape",  # two-dot leader
    "\uff0e\uff0e\uff0fescape",  # fullwidth . . /
    "..\u2215escape",  # division slash
    "..\u2044escape",  # fraction slash
    "\u202eevil.jsonl",  # right-to-left override
    "e\u0301",  # combining accent (NFD); "é" (NFC) must be a different session
    "é",
    "~",
    "~root",
    "$HOME",
    "x.jsonl.torn",
    ".hidden",
    "CON",
    " ",
    "\n",
]


def _files_under(root: Path) -> set[Path]:
    return {Path(folder) / name for folder, _, names in os.walk(root) for name in names}


@pytest.mark.parametrize("session_id", HOSTILE_IDS, ids=[repr(i) for i in HOSTILE_IDS])
def test_a_hostile_id_stays_inside_the_folder(tmp_path: Path, session_id: str) -> None:
    directory = tmp_path / "sessions"
    session = JSONLSession(session_id, directory, durable=False)
    assert session.path.parent == directory
    session.add_items_sync([{"id": session_id}])
    times = session.path.with_name(session.path.name + ".times")  # its sidecar, beside it
    assert _files_under(tmp_path) == {session.path, times}
    assert session.get_items_sync() == [{"id": session_id}]
    assert id_for(session.path.name) == session_id
    assert SessionDirectory(directory).ids() == [session_id]


def test_look_alike_ids_are_different_sessions(tmp_path: Path) -> None:
    directory = SessionDirectory(tmp_path, durable=False)
    for session_id in ["e\u0301", "é", "..", "\u2025", "%2e%2e"]:
        directory.open(session_id).add_items_sync([{"id": session_id}])
    for session_id in ["e\u0301", "é", "..", "\u2025", "%2e%2e"]:
        assert directory.open(session_id).get_items_sync() == [{"id": session_id}]
    assert len([path for path in tmp_path.iterdir() if path.suffix == ".jsonl"]) == 5


@pytest.mark.parametrize("session_id", ["", "\ud800", "x" * 300], ids=["empty", "lone-surrogate", "too-long"])
def test_ids_that_cannot_name_a_file_are_refused(tmp_path: Path, session_id: str) -> None:
    with pytest.raises(InvalidSessionId):
        JSONLSession(session_id, tmp_path)
    assert not any(tmp_path.iterdir())


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=80))
def test_any_id_maps_to_one_plain_name_in_the_folder_and_back(session_id: str) -> None:
    try:
        name = filename_for(session_id)
    except InvalidSessionId:
        return  # refused ids never reach the file system
    assert "/" not in name and "\x00" not in name and name not in (".", "..")
    assert len(name.encode()) <= 255
    assert os.path.normpath(os.path.join("/sessions", name)).startswith("/sessions/")
    assert id_for(name) == session_id


# -- planted links and special files ---------------------------------------------------------


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file outside the sessions folder that a planted symlink points at."""
    target = tmp_path / "precious.txt"
    target.write_bytes(b"do not touch\n")
    os.utime(target, (1_000_000_000, 1_000_000_000))
    return target


def _untouched(target: Path) -> bool:
    return target.read_bytes() == b"do not touch\n" and target.stat().st_mtime == 1_000_000_000


def _operations(session: JSONLSession) -> list[Callable[[], Any]]:
    def rewrite() -> None:
        with session.rewrite() as draft:
            draft.items = [{"x": 1}]

    return [
        session.get_items_sync,
        lambda: session.get_items_sync(limit=1),
        lambda: session.add_items_sync([{"x": 1}]),
        session.pop_item_sync,
        session.clear_session_sync,
        lambda: session.replace_items_sync([{"x": 1}]),
        rewrite,
        session.repair_sync,
    ]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("dangling", [False, True], ids=["to-a-file", "dangling"])
def test_a_symlink_at_the_session_path_is_refused_by_every_operation(
    tmp_path: Path, outside: Path, dangling: bool
) -> None:
    directory = tmp_path / "sessions"
    directory.mkdir()
    session = JSONLSession("victim", directory)
    target = tmp_path / "not-yet-there.txt" if dangling else outside
    session.path.symlink_to(target)
    for operation in _operations(session):
        with pytest.raises(UnsafePathError) as caught:
            operation()
        assert caught.value.path == session.path
    store = SessionDirectory(directory)
    with pytest.raises(UnsafePathError):
        store.delete("victim")
    with pytest.raises(UnsafePathError if not dangling else FileNotFoundError):
        store.fork("victim", "copy")  # a dangling link is "no such session"
    assert store.list() == []  # a symlink is not listed as a session
    assert session.path.is_symlink() and os.readlink(session.path) == str(target)
    assert _untouched(outside)
    assert not (tmp_path / "not-yet-there.txt").exists()


@pytest.mark.timeout(30)
def test_forking_onto_a_symlinked_target_is_refused(tmp_path: Path, outside: Path) -> None:
    store = SessionDirectory(tmp_path / "sessions")
    store.open("source").add_items_sync([{"n": 1}])
    (tmp_path / "sessions" / "copy.jsonl").symlink_to(outside)
    with pytest.raises(UnsafePathError):
        store.fork("source", "copy")
    assert _untouched(outside)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("dangling", [False, True], ids=["to-a-file", "dangling"])
def test_a_symlink_at_the_sidecar_path_is_not_written_through(
    tmp_path: Path, outside: Path, dangling: bool
) -> None:
    session = JSONLSession("victim", tmp_path / "sessions")
    session.add_items_sync([{"n": 1}])
    with session.path.open("ab") as file:
        file.write(b'{"n":2,"torn')
    before = session.path.read_bytes()
    target = tmp_path / "not-yet-there.txt" if dangling else outside
    session.sidecar_path.symlink_to(target)
    for operation in (lambda: session.add_items_sync([{"n": 3}]), session.pop_item_sync, session.repair_sync):
        with pytest.raises(UnsafePathError) as caught:
            operation()
        assert caught.value.path == session.sidecar_path
        assert session.path.read_bytes() == before, "the torn tail was cut without being saved"
    assert _untouched(outside)
    assert not (tmp_path / "not-yet-there.txt").exists()
    assert session.get_items_sync() == [{"n": 1}]  # reading never needs the sidecar


@pytest.mark.timeout(30)
@pytest.mark.parametrize("where", ["session", "sidecar"])
def test_a_fifo_planted_at_a_path_is_refused_without_hanging(tmp_path: Path, where: str) -> None:
    session = JSONLSession("victim", tmp_path)
    if where == "sidecar":
        session.add_items_sync([{"n": 1}])
        with session.path.open("ab") as file:
            file.write(b'{"torn')
    os.mkfifo(session.path if where == "session" else session.sidecar_path)
    before = session.path.read_bytes() if where == "sidecar" else None
    with pytest.raises(UnsafePathError):
        session.add_items_sync([{"n": 2}])
    if where == "session":
        with pytest.raises(UnsafePathError):
            session.get_items_sync()
    else:
        assert session.path.read_bytes() == before


def test_a_hard_link_is_the_same_file_and_is_written_a_documented_limit(tmp_path: Path) -> None:
    """Not a defence we claim: a hard link is the file itself, not a redirection.

    Only the file's owner (or root) can plant one (``fs.protected_hardlinks``), and a process
    running as you can already write your files. The guarantee covers symlinks.
    """
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_bytes(b'{"n":1}\n')
    directory = tmp_path / "sessions"
    directory.mkdir()
    os.link(elsewhere, directory / "linked.jsonl")
    JSONLSession("linked", directory, durable=False).add_items_sync([{"n": 2}])
    assert elsewhere.read_bytes() == b'{"n":1}\n{"n":2}\n'


# -- owner-only modes ------------------------------------------------------------------------------


def _create_everything(root: str, umask: int) -> dict[str, int]:
    os.umask(umask)
    warnings.simplefilter("ignore", TornTailWarning)
    directory = Path(root) / "a" / "b" / "sessions"
    session = JSONLSession("s", directory)
    session.add_items_sync([{"n": 1}])
    with session.path.open("ab") as file:
        file.write(b"{torn")
    session.add_items_sync([{"n": 2}])  # creates the sidecar
    other = JSONLSession("replaced", directory)
    other.replace_items_sync([{"n": 1}])  # created through a temporary file and a rename
    SessionDirectory(directory).fork("s", "forked")  # and its .lineage
    session.record_usage_sync(object())  # the usage log (a result without usage records zeros)
    paths = [Path(root) / "a", Path(root) / "a" / "b", *sorted(Path(directory).parent.iterdir())]
    paths += sorted(directory.iterdir())
    return {str(path.relative_to(root)): stat.S_IMODE(path.stat().st_mode) for path in paths}


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o077])
def test_everything_created_is_owner_only_whatever_the_umask(tmp_path: Path, umask: int) -> None:
    parent, child = _ctx.Pipe()

    def run() -> None:
        child.send(_create_everything(str(tmp_path), umask))

    process = _ctx.Process(target=run)  # umask is per process: keep it out of the test runner
    process.start()
    modes = parent.recv()
    process.join()
    assert modes == {
        "a": 0o700,
        "a/b": 0o700,
        "a/b/sessions": 0o700,
        "a/b/sessions/forked.jsonl": 0o600,
        "a/b/sessions/forked.jsonl.lineage": 0o600,
        "a/b/sessions/forked.jsonl.times": 0o600,
        "a/b/sessions/replaced.jsonl.times": 0o600,
        "a/b/sessions/s.jsonl.times": 0o600,
        "a/b/sessions/s.jsonl.usage": 0o600,
        "a/b/sessions/replaced.jsonl": 0o600,
        "a/b/sessions/s.jsonl": 0o600,
        "a/b/sessions/s.jsonl.torn": 0o600,
    }


def test_a_rewrite_keeps_the_mode_the_user_chose(tmp_path: Path) -> None:
    session = JSONLSession("shared", tmp_path, durable=False)
    session.add_items_sync([{"n": 1}])
    session.path.chmod(0o640)
    session.replace_items_sync([{"n": 2}])
    assert stat.S_IMODE(session.path.stat().st_mode) == 0o640
