"""Archives are input: a hand-made or hostile one in ``sessions/.archive/`` cannot write outside
the session being restored, spin ``prune``, send it outside the folder, or exhaust memory.

Each archive here is built by hand (``tarfile`` and ``zlib``), as an attacker would; every
check is on real files, a real second process holding or waiting for the lock, and the peak
resident memory (``VmHWM``) of a real child process running the command.
"""

from __future__ import annotations

import hashlib
import io
import json
import multiprocessing
import os
import subprocess
import sys
import tarfile
import time
import zlib
from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import cli_env, run

from jsonl_session import JSONLSession, SessionFileError, UnsafePathError
from jsonl_session.tools import archive_files
from jsonl_session.tools.retention import ARCHIVED, list_archives, prune, restore

DAY = 86400.0
STAMP = "20260102T030405.000000Z"
ITEM = b'{"role": "user", "content": "archived"}\n'


def manifest_of(session_id: str, files: list[tuple[str, bytes]]) -> bytes:
    return json.dumps(
        {
            "format": "jsonl-session-archive",
            "version": 1,
            "session_id": session_id,
            "archived_at": "2026-01-02T03:04:05Z",
            "last_written": "2025-11-30T08:00:00Z",
            "items": 1,
            "usage": None,
            "files": [
                {
                    "name": name,
                    "size": len(data),
                    "sha256": hashlib.sha256(data).hexdigest(),
                    "mode": 0o666,
                    "mtime": 1764489600.0,
                }
                for name, data in files
            ],
        }
    ).encode()


def hand_made(folder: Path, session_id: str, members: list[tarfile.TarInfo | tuple[str, bytes]]) -> Path:
    """``.archive/<id>.jsonl.<stamp>.tar.gz`` with a manifest that lists every regular member
    truthfully (sizes and sums match), then the members; modes 0666 (world-writable)."""
    regular = [member for member in members if isinstance(member, tuple)]
    archive = folder / ".archive" / f"{session_id}.jsonl.{STAMP}.tar.gz"
    archive.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with tarfile.open(archive, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for member in [(archive_files.MANIFEST, manifest_of(session_id, regular)), *members]:
            if isinstance(member, tarfile.TarInfo):
                tar.addfile(member)
                continue
            info = tarfile.TarInfo(member[0])
            info.size, info.mode = len(member[1]), 0o666
            tar.addfile(info, io.BytesIO(member[1]))
    return archive


def special(name: str, kind: bytes, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, link, 0o666
    return info


def live_victim(folder: Path) -> dict[str, bytes]:
    session = JSONLSession("victim", folder)
    session.add_items_sync([{"role": "user", "content": "my bank PIN is 1234"}])
    session.set_metadata_sync(owner="bob")
    session.close()
    return {path.name: path.read_bytes() for path in folder.iterdir() if path.name.startswith("victim.")}


# -- 1. restore writes only the session it restores ------------------------------------------------


def test_restore_refuses_a_member_that_names_another_session_and_writes_nothing(sessions_dir: Path) -> None:
    victim = live_victim(sessions_dir)
    archive = hand_made(
        sessions_dir, "x", [("x.jsonl", ITEM), ("victim.jsonl", b'{"role": "user", "content": "owned"}\n')]
    )

    result = run(sessions_dir, "restore", "x")

    assert result.code == 1 and result.out == ""
    assert len(result.err.splitlines()) == 1 and "victim.jsonl" in result.err and archive.name in result.err
    assert {
        path.name: path.read_bytes() for path in sessions_dir.iterdir() if path.name.startswith("victim.")
    } == victim
    assert not (sessions_dir / "x.jsonl").exists() and archive.exists()


@pytest.mark.parametrize(
    "member",
    [
        ("x.jsonl.notes", b"not a sidecar of ours\n"),
        ("x.jsonl.meta.tmp", b"{}\n"),
        ("..", b""),
        special("x.jsonl.meta", tarfile.SYMTYPE, "../../victim.jsonl"),
        special("x.jsonl.usage", tarfile.LNKTYPE, "victim.jsonl"),
        special("x.jsonl.run", tarfile.DIRTYPE),
        special("x.jsonl.times", tarfile.CHRTYPE),
        special("x.jsonl.lineage", tarfile.FIFOTYPE),
    ],
    ids=lambda member: member[0] if isinstance(member, tuple) else f"{member.name}-{member.type.decode()}",
)
def test_restore_refuses_any_member_that_is_not_one_of_the_sessions_own_files(
    sessions_dir: Path, member: tarfile.TarInfo | tuple[str, bytes]
) -> None:
    victim = live_victim(sessions_dir)
    hand_made(sessions_dir, "x", [("x.jsonl", ITEM), member])
    with pytest.raises(SessionFileError):
        restore(sessions_dir, "x")
    assert sorted(path.name for path in sessions_dir.iterdir()) == sorted([".archive", *victim])


def test_restored_files_get_the_folders_modes_not_the_archives(sessions_dir: Path) -> None:
    hand_made(sessions_dir, "x", [("x.jsonl", ITEM), ("x.jsonl.usage", b"")])
    restore(sessions_dir, "x")
    assert (sessions_dir / "x.jsonl").read_bytes() == ITEM
    for name in ("x.jsonl", "x.jsonl.usage"):
        assert (sessions_dir / name).stat().st_mode & 0o777 == 0o600, name


# -- 2. a future-stamped archive cannot make prune spin under the lock ----------------------------


def _prune_in_child(folder: str, started: Any) -> None:
    started.set()
    outcomes = prune(folder, 30 * DAY, dry_run=False)
    # archived, or the writer wrote first: before the listing (the session is young again, not a
    # candidate) or between the listing and the lock (skipped, as written while pruning)
    assert all(o.action == ARCHIVED or o.reason == "written while pruning" for o in outcomes), outcomes


def _write_in_child(folder: str, started: Any) -> None:
    session = JSONLSession("old", folder)
    assert started.wait(60)
    session.add_items_sync([{"role": "user", "content": "written meanwhile"}])


def make_old(folder: Path) -> None:
    session = JSONLSession("old", folder, timestamps=False)
    session.add_items_sync([{"role": "user", "content": "a month ago"}])
    session.close()
    when = time.time() - 40 * DAY
    for path in folder.glob("old.jsonl*"):
        os.utime(path, (when, when))


def future_archive(folder: Path, stamp: str) -> Path:
    archive = folder / ".archive" / f"old.jsonl.{stamp}.tar.gz"
    archive.parent.mkdir(mode=0o700)
    archive.write_bytes(b"any file named like an archive")
    return archive


def test_prune_names_its_archive_in_one_step_past_a_future_stamped_one(sessions_dir: Path) -> None:
    make_old(sessions_dir)
    future = future_archive(sessions_dir, "29991231T235959.999999Z")
    context = multiprocessing.get_context("spawn")
    started = context.Event()
    pruner = context.Process(target=_prune_in_child, args=(str(sessions_dir), started))
    pruner.start()
    pruner.join(60)  # a safety net, not a measure: a pruner that spins under the lock never ends
    if pruner.is_alive():
        pruner.kill()
        pruner.join()
    assert pruner.exitcode == 0, "prune did not finish"
    (archived,) = set(future.parent.iterdir()) - {future}
    # one microsecond after it, so that it sorts after it: restore takes the newest
    assert archived.name == "old.jsonl.30000101T000000.000000Z.tar.gz"
    restore(sessions_dir, "old")
    assert JSONLSession("old", sessions_dir).get_items_sync() == [{"role": "user", "content": "a month ago"}]


def test_a_writer_is_not_starved_by_prune_past_a_future_stamped_archive(sessions_dir: Path) -> None:
    make_old(sessions_dir)
    future = future_archive(sessions_dir, "29991231T235959.999999Z")
    context = multiprocessing.get_context("spawn")
    started = context.Event()
    writer = context.Process(target=_write_in_child, args=(str(sessions_dir), started))
    writer.start()
    pruner = context.Process(target=_prune_in_child, args=(str(sessions_dir), started))
    pruner.start()
    writer.join(60)  # safety nets, not measures: a pruner spinning under the lock starves the writer
    pruner.join(60)
    for process in (writer, pruner):
        if process.is_alive():
            process.kill()
            process.join()
    assert writer.exitcode == 0, "the writer gave up waiting for the session's lock"
    assert pruner.exitcode == 0, "prune did not finish"
    assert {"role": "user", "content": "written meanwhile"} in JSONLSession(
        "old", sessions_dir
    ).get_items_sync()
    assert all(archive.name >= future.name for archive in future.parent.iterdir())


def test_an_archive_stamped_at_the_end_of_time_is_a_clear_failure_not_a_loop(sessions_dir: Path) -> None:
    make_old(sessions_dir)
    last = future_archive(sessions_dir, "99991231T235959.999999Z")
    (outcome,) = prune(sessions_dir, timedelta(days=30), dry_run=False)
    assert outcome.failed and outcome.reason is not None and last.name in outcome.reason
    assert (sessions_dir / "old.jsonl").exists()


# -- 3. a symlinked .archive is refused ------------------------------------------------------------


def test_prune_refuses_a_symlinked_archive_folder_and_archives_nothing(
    sessions_dir: Path, tmp_path: Path
) -> None:
    make_old(sessions_dir)
    before = (sessions_dir / "old.jsonl").read_bytes()
    outside = tmp_path / "outside"
    outside.mkdir()
    (sessions_dir / ".archive").symlink_to(outside)

    result = run(sessions_dir, "prune", "--older-than", "30d", "--yes")

    assert result.code == 1 and len(result.err.splitlines()) == 1 and "symlink" in result.err
    assert list(outside.iterdir()) == [] and (sessions_dir / "old.jsonl").read_bytes() == before
    with pytest.raises(UnsafePathError):
        prune(sessions_dir, timedelta(days=30), dry_run=False)
    with pytest.raises(UnsafePathError):
        restore(sessions_dir, "old")
    assert list(outside.iterdir()) == [] and (sessions_dir / "old.jsonl").read_bytes() == before


# -- 4. decompression bombs --------------------------------------------------------------------------

BOMB = 200 * 1024 * 1024
"""What the hostile member says once decompressed; the archive itself is a few hundred KB."""
BOUND_KIB = 40 * 1024
"""What a bomb may add to a command's peak memory, against the same command without it."""


def bomb(path: Path, session_id: str, *, manifest_size: int | None, member_size: int) -> None:
    """An archive of ``session_id`` whose manifest (padded with spaces: still valid JSON) or session
    member (its tar header says ``member_size``; the manifest says the true item's size) is huge."""
    head = manifest_of(session_id, [(f"{session_id}.jsonl", ITEM)])
    manifest_size = len(head) if manifest_size is None else manifest_size
    deflate = zlib.compressobj(9, zlib.DEFLATED, 31)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    with path.open("wb") as out:

        def member(name: str, size: int, chunks: Iterable[bytes]) -> None:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = size, 0o600, 1767322245
            out.write(deflate.compress(info.tobuf(format=tarfile.PAX_FORMAT)))
            for chunk in chunks:
                out.write(deflate.compress(chunk))
            out.write(deflate.compress(bytes(-size % 512)))

        def filled(first: bytes, size: int, fill: bytes) -> Iterable[bytes]:
            yield first
            block = fill * (1 << 20)
            left = size - len(first)
            for _ in range(left >> 20):
                yield block
            yield block[: left % (1 << 20)]

        member(archive_files.MANIFEST, manifest_size, filled(head, manifest_size, b" "))
        member(f"{session_id}.jsonl", member_size, filled(ITEM, member_size, b"\0"))
        out.write(deflate.compress(bytes(1024)) + deflate.flush())


PROBE = """
import sys
from jsonl_session.cli.commands import main
code = main(sys.argv[2:] + ["--dir", sys.argv[1]])
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print("PEAK", peak)
sys.exit(code)
"""


def measured(folder: Path, *args: str) -> tuple[int, int, str]:
    """Exit code, peak resident memory (KiB) and stderr of a fresh Python running the command."""
    completed = subprocess.run(
        [sys.executable, "-c", PROBE, str(folder), *args],
        capture_output=True,
        text=True,
        env=cli_env(),
        check=False,
        timeout=120,
    )
    peak = int(completed.stdout.strip().splitlines()[-1].split()[1])
    return completed.returncode, peak, completed.stderr


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("plain")
    JSONLSession("s", folder).add_items_sync([{"role": "user", "content": "hello"}])
    return folder


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmHWM from /proc")
@pytest.mark.parametrize("where", ["manifest", "member"])
@pytest.mark.parametrize("command", [("restore", "--list"), ("restore", "gone"), ("stats",)], ids=" ".join)
def test_a_decompression_bomb_costs_no_memory_and_is_named(
    tmp_path: Path, plain: Path, where: str, command: tuple[str, ...]
) -> None:
    if where == "member" and command != ("restore", "gone"):
        pytest.skip("only restore reads members")
    folder = tmp_path / "sessions"
    JSONLSession("s", folder).add_items_sync([{"role": "user", "content": "hello"}])
    archive = folder / ".archive" / f"gone.jsonl.{STAMP}.tar.gz"
    if where == "manifest":
        bomb(archive, "gone", manifest_size=BOMB, member_size=len(ITEM))
    else:
        bomb(archive, "gone", manifest_size=None, member_size=BOMB)
    assert archive.stat().st_size < 1024 * 1024

    code, peak, err = measured(folder, *command)
    _, baseline, _ = measured(plain, *command)

    assert peak - baseline < BOUND_KIB, (peak, baseline)
    assert code == 1 and archive.name in err, err
    assert len([line for line in err.splitlines() if archive.name in line]) == 1
    assert "Traceback" not in err
    assert archive.exists() and not (folder / "gone.jsonl").exists()


def test_a_bomb_refuses_before_reading_it(tmp_path: Path) -> None:
    archive = tmp_path / ".archive" / f"gone.jsonl.{STAMP}.tar.gz"
    bomb(archive, "gone", manifest_size=BOMB, member_size=len(ITEM))
    with pytest.raises(SessionFileError, match="manifest"):
        archive_files.read_manifest(archive)
    assert list_archives(tmp_path, on_error=lambda _path, _exc: None) == []
