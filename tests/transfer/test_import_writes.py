"""What ``import --all`` writes to disk for a session jsonl-session exported: each file once.

An import of an exported session brings its items and its ``.times`` sidecar back. Into a
session the folder lacks, the items are appended to the new, locked, empty file as ``add_items``
appends them (one write, one ``fdatasync``: no temporary file, rename or file id of a rewrite,
which cost the import a fifth more than the SDK's own copy); over one that holds items, they
are written as every rewrite writes them (one synced atomic replace). The ``.times`` comes from
the companion. Writing it twice (stamped by the items' rewrite, then replaced by the
companion's) and syncing it as if it held items made the import three synced writes per
session where the SDK's own copy makes one. Times are advisory and never fsynced by the core
(``core/item_times.py``: a crash may lose the newest ones), so a ``.times`` written where none
was is written once, unsynced. Observed with ``strace`` on a real ``jsonl-session import``
process against a real Redis; the result is still the folder that was exported, byte for byte.
The folder is fsynced once per new session, when its file is created, as ``add_items`` creates
one: creating the file durably and then renaming over it durably synced it twice.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from cli_helpers import cli_env, flush_redis, strace_or_skip
from test_transfer_all import make_folder

from jsonl_session import SessionDirectory
from jsonl_session.transfer.all_sessions import export_all

pytestmark = pytest.mark.sdk
pytest.importorskip("agents", reason="the Agents SDK (extra 'agents') is not installed")


def _traced_import(strace: str, tmp_path: Path, redis_url: str, back: Path, calls: str) -> Path:
    """``jsonl-session import URL --all --dir back`` run under ``strace`` tracing ``calls``: its log."""
    log = tmp_path / "strace.log"
    done = subprocess.run(
        [strace, "-f", "-qq", "-y", "-o", str(log), "-e", f"trace={calls}",
         sys.executable, "-m", "jsonl_session", "import", redis_url, "--all", "--dir", str(back)],
        capture_output=True, text=True, timeout=120, check=False, env=cli_env(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return log


def test_an_exported_session_comes_back_with_its_items_synced_once_and_its_times_written_once(
    tmp_path: Path,
    redis_url: str,
) -> None:
    strace = strace_or_skip()
    flush_redis(redis_url)
    folder, back = tmp_path / "sessions", tmp_path / "back"
    make_folder(folder, 3)
    outcomes = asyncio.run(export_all(SessionDirectory(folder), redis_url))
    assert {o.status for o in outcomes} == {"copied"}
    log = _traced_import(strace, tmp_path, redis_url, back, "openat,fdatasync,fsync,rename,renameat2")
    synced: Counter[str] = Counter()  # file name (a temporary one named after its target) -> syncs
    renamed: Counter[str] = Counter()  # target name -> renames onto it
    unsynced_names: set[str] = set()  # renamed onto, and the folder not fsynced since
    folder_syncs = 0
    for line in log.read_text().splitlines():
        if str(back) not in line:
            continue
        sync = re.search(r"f(?:data)?sync\(\d+<([^>]*)>", line)
        if sync and Path(sync.group(1)) == back:
            folder_syncs += 1
            unsynced_names.clear()
        elif sync:
            synced[Path(sync.group(1)).name] += 1
        moved = re.search(r'rename(?:at2)?\(.*"[^"]*", .*"([^"]+)"', line)
        if moved:
            renamed[Path(moved.group(1)).name] += 1
            unsynced_names.add(Path(moved.group(1)).name)
    # Each new file's name is made durable by one fsync of the folder as it is created, as the
    # SDK's own copy syncs it once.
    assert not unsynced_names
    assert folder_syncs == 3
    for n in range(3):
        name = f"s{n:03d}.jsonl"
        assert renamed[name] == 0, renamed  # the items: appended to the new file, not renamed over it
        assert not [file for file in synced if file.startswith(f".{name}.")], synced  # no temporary file
        assert sum(count for file, count in synced.items() if name in file and ".times" not in file) == 1
        assert renamed[name + ".times"] == 0, renamed  # the companion's .times, written once in place
        assert not [file for file in synced if f"{name}.times" in file], synced
        assert (back / (name + ".times")).read_bytes() == (folder / (name + ".times")).read_bytes()
        assert (back / name).read_bytes() == (folder / name).read_bytes()


def test_an_item_no_line_can_hold_fails_its_session_before_any_file_is_made(
    tmp_path: Path, redis_url: str
) -> None:
    """A small session's items are encoded on the loop (``INLINE_BYTES``), not in a worker: one
    that cannot be written exactly still fails that session alone, and creates no file."""
    import redis

    from jsonl_session.transfer.all_sessions import import_all
    from jsonl_session.transfer.sdk_schema import messages_key, session_key

    flush_redis(redis_url)
    client = redis.Redis.from_url(redis_url)
    try:
        for session_id, message in (("big", '{"n":123456789012345678901234567890}'), ("fine", '{"n":1}')):
            client.hset(session_key(session_id), mapping={"session_id": session_id, "created_at": "1"})
            client.rpush(messages_key(session_id), message)
    finally:
        client.close()
    back = tmp_path / "back"
    outcomes = {o.session_id: o for o in asyncio.run(import_all(redis_url, SessionDirectory(back)))}
    assert (outcomes["big"].status, outcomes["big"].items) == ("failed", 1)
    assert outcomes["big"].detail.endswith("; nothing imported") and not (back / "big.jsonl").exists()
    assert outcomes["fine"].status == "copied" and (back / "fine.jsonl").read_bytes() == b'{"n":1}\n'


def test_a_session_new_to_the_folder_is_created_without_unlinking_sidecars_and_its_name_synced(
    tmp_path: Path, redis_url: str
) -> None:
    """A file the library creates drops the sidecars a deleted namesake left: one ``unlink`` per
    kind, each taking the folder's lock, which every create in the folder waits for; the SDK's
    own copy pays them too. An import lists the destination folder once: a session of which that
    listing found neither the file nor a sidecar is created without them (a sidecar made since
    comes from a writer of this very session), and its name is still made durable once, the
    empty session's too, which no write syncs. Where the listing found a namesake's sidecar, it
    goes (``test_import_sidecars.py``)."""
    strace = strace_or_skip()
    flush_redis(redis_url)
    folder, back = tmp_path / "sessions", tmp_path / "back"
    make_folder(folder, 2)
    (folder / "empty.jsonl").write_bytes(b"")
    outcomes = asyncio.run(export_all(SessionDirectory(folder), redis_url))
    assert {o.status for o in outcomes} == {"copied"}
    back.mkdir()
    log = _traced_import(strace, tmp_path, redis_url, back, "openat,unlink,unlinkat,fsync,fdatasync")
    lines = [line for line in log.read_text().splitlines() if str(back) in line]
    assert not [line for line in lines if re.search(r"\bunlink(?:at)?\(", line)]
    created = Counter(
        Path(found.group(1)).name
        for line in lines
        if "O_CREAT" in line and (found := re.search(r'openat\([^"]*"([^"]+)"', line))
    )
    made = ["s000.jsonl", "s000.jsonl.times", "s001.jsonl", "s001.jsonl.times", "empty.jsonl"]
    assert created == Counter(made)  # each once
    synced_folder = re.compile(rf"f(?:data)?sync\(\d+<{re.escape(str(back))}>")
    assert len([line for line in lines if synced_folder.search(line)]) == 3
    assert files_of(back) == files_of(folder)


def files_of(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def test_a_file_made_after_the_listing_is_left_to_the_usual_way(tmp_path: Path) -> None:
    """The one-hop import of a session new to the folder writes nothing when the file is there
    by now (made since the run listed the folder): the usual way then compares with it."""
    from jsonl_session import JSONLSession
    from jsonl_session.transfer.all_sessions import _import_new, import_items

    JSONLSession("s", tmp_path).add_items_sync([{"n": 0}])
    local = JSONLSession("s", tmp_path, lock_timeout=0)
    assert asyncio.run(_import_new(local, [{"n": 0}, {"n": 1}], {}, False, True)) is None
    assert (tmp_path / "s.jsonl").read_bytes() == b'{"n":0}\n'
    outcome = asyncio.run(import_items(local, [{"n": 0}, {"n": 1}], {}, existed=None))
    assert (outcome.status, (tmp_path / "s.jsonl").read_bytes()) == ("appended", b'{"n":0}\n{"n":1}\n')


def test_an_empty_session_made_here_and_locked_at_once_by_a_reader_is_reported_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader (``watch``, ``ls`` in another process) takes the new file's lock between its
    create and the import's lock: the usual way must take the file as new, not as found there
    (which reported the empty session ``skipped``, its mode and recorded time not restored).
    The reader is a real shared ``flock`` on another open file description, taken at that
    moment by wrapping the create."""
    import fcntl
    import os

    from jsonl_session.core import safe_open
    from jsonl_session.transfer import all_sessions
    from jsonl_session.transfer.all_sessions import import_all

    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "empty.jsonl").write_bytes(b"")
    url = f"sqlite:///{tmp_path / 'all.db'}"
    assert [o.status for o in asyncio.run(export_all(SessionDirectory(folder), url))] == ["copied"]
    held: list[int] = []
    create_new, import_items = safe_open.create_new, all_sessions.import_items

    def create_then_a_reader_locks(path: Path, *, durable: bool) -> bool:
        made = create_new(path, durable=durable)
        if made:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            fcntl.flock(fd, fcntl.LOCK_SH)
            held.append(fd)
        return made

    async def the_reader_gone_then_the_usual_way(*args: object, **kwargs: object) -> object:
        for fd in held:
            os.close(fd)  # its lock goes with it
        return await import_items(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(safe_open, "create_new", create_then_a_reader_locks)
    monkeypatch.setattr(all_sessions, "import_items", the_reader_gone_then_the_usual_way)
    back = tmp_path / "back"
    outcomes = asyncio.run(import_all(url, SessionDirectory(back), concurrency=1))
    assert held, "the one-hop path was not taken"
    assert [(o.session_id, o.status) for o in outcomes] == [("empty", "copied")]
