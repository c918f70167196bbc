"""``tools.retention``: prune archives idle sessions with their sidecars, restore brings them back.

Real files and real processes: a writer that holds the session's lock while prune waits for
it, and prune and restore processes SIGKILLed before each of their file-system calls, then
run again.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import tarfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from jsonl_session import JSONLSession, SessionDirectory, SessionExistsError, SessionFileError
from jsonl_session.tools import archive_files
from jsonl_session.tools.retention import (
    ARCHIVED,
    SKIPPED,
    WOULD_ARCHIVE,
    archived_usage,
    list_archives,
    parse_duration,
    prune,
    restore,
)
from jsonl_session.tools.stats import folder_stats

ROOT = Path(__file__).resolve().parents[2]
DAY = 86400.0
USAGE = (
    b'{"at":"2026-01-01T00:00:00Z","cached_tokens":1,"input_tokens":100,"model":"m","output_tokens":20,'
    b'"paused":false,"reasoning_tokens":0,"requests":2,"total_tokens":120,"turn":1,"turn_sha256":null}\n'
)
LINEAGE = b'{"forked_at": "2026-01-01T00:00:00Z", "items": 0, "prefix_sha256": "%s", "source": "x"}\n' % (
    b"0" * 64
)


def make_old(folder: Path, session_id: str, *, days: float = 40, sidecars: bool = True) -> dict[str, bytes]:
    """A session with every kind of sidecar, all last written ``days`` ago; its files' bytes by name."""
    session = JSONLSession(session_id, folder)
    session.add_items_sync(
        [
            {"role": "user", "content": f"Weather in Paris? ({session_id})"},
            {"role": "assistant", "content": "Sunny. é ✓"},
        ]
    )
    session.close()
    path = folder / f"{session_id}.jsonl"
    if sidecars:
        with open(path, "ab") as handle:
            handle.write(b'{"role": "user", "cont')  # a torn tail stays as it is: archived byte for byte
        (folder / f"{session_id}.jsonl.usage").write_bytes(USAGE)
        (folder / f"{session_id}.jsonl.lineage").write_bytes(LINEAGE)
        (folder / f"{session_id}.jsonl.run").write_bytes(b'{"state": 1}\n')
        (folder / f"{session_id}.jsonl.torn").write_bytes(b'{"half\n')
    when = time.time() - days * DAY
    files = {}
    for file in folder.iterdir():
        if file.name.startswith(f"{session_id}.jsonl"):
            os.utime(file, (when, when))
            files[file.name] = file.read_bytes()
    return files


def files_of(folder: Path) -> dict[str, bytes]:
    return {file.name: file.read_bytes() for file in folder.iterdir() if file.is_file()}


def test_parse_duration_takes_units_and_refuses_bare_numbers() -> None:
    assert parse_duration("90m") == timedelta(minutes=90)
    assert parse_duration("12h") == timedelta(hours=12)
    assert parse_duration("30d") == timedelta(days=30)
    assert parse_duration("1d12h") == timedelta(days=1, hours=12)
    assert parse_duration(" 2W ") == timedelta(weeks=2)
    for bad in ("30", "", "d", "3x", "1d 2", "-1d"):
        with pytest.raises(ValueError, match="not a duration"):
            parse_duration(bad)


def test_a_dry_run_touches_nothing_and_names_only_old_sessions(sessions_dir: Path) -> None:
    make_old(sessions_dir, "old")
    make_old(sessions_dir, "recent", days=1)
    before = files_of(sessions_dir)
    outcomes = prune(sessions_dir, parse_duration("30d"))
    assert [(o.session_id, o.action) for o in outcomes] == [("old", WOULD_ARCHIVE)]
    assert set(outcomes[0].files) == {name for name in before if name.startswith("old.")}
    assert outcomes[0].size == sum(len(data) for name, data in before.items() if name.startswith("old."))
    assert files_of(sessions_dir) == before and not (sessions_dir / ".archive").exists()


def test_prune_then_restore_is_byte_identical_sidecars_included(sessions_dir: Path) -> None:
    original = make_old(sessions_dir, "convo")
    recent = make_old(sessions_dir, "recent", days=1)
    os.chmod(sessions_dir / "convo.jsonl", 0o640)
    outcomes = prune(sessions_dir, timedelta(days=30), dry_run=False)
    assert [(o.session_id, o.action) for o in outcomes] == [("convo", ARCHIVED)]
    assert files_of(sessions_dir) == recent  # the session and all five of its files are gone
    archive = outcomes[0].archive
    assert archive is not None and archive.parent == sessions_dir / ".archive"
    with tarfile.open(archive) as tar:  # a standard tar.gz: the manifest first, then the files
        assert tar.getnames() == [archive_files.MANIFEST, *outcomes[0].files]

    restored = restore(sessions_dir, "convo")
    assert set(restored.files) == set(original) and not restored.already_restored
    assert files_of(sessions_dir) == original | recent
    # owner-only, as the library makes every file: an archive's modes are not trusted
    assert (sessions_dir / "convo.jsonl").stat().st_mode & 0o777 == 0o600
    assert list((sessions_dir / ".archive").iterdir()) == []  # the archive goes once restored
    assert JSONLSession("convo", sessions_dir).get_items_sync()[0]["content"] == "Weather in Paris? (convo)"


def test_archived_sessions_are_not_sessions_and_match_no_glob(sessions_dir: Path) -> None:
    make_old(sessions_dir, "convo")
    make_old(sessions_dir, "recent", days=1)
    prune(sessions_dir, timedelta(days=30), dry_run=False)
    folder = SessionDirectory(sessions_dir)
    assert folder.ids() == ["recent"] and [info.session_id for info in folder.list()] == ["recent"]
    assert [path.name for path in sessions_dir.glob("*.jsonl")] == ["recent.jsonl"]
    assert not list(sessions_dir.glob("*/*.jsonl"))
    (archived,) = list_archives(sessions_dir)
    assert (archived.session_id, archived.items) == ("convo", 2)
    assert archived.usage is not None and archived.usage["total_tokens"] == 120


def test_stats_totals_include_archived_usage(sessions_dir: Path) -> None:
    make_old(sessions_dir, "convo")
    make_old(sessions_dir, "recent", days=1)
    before = folder_stats(SessionDirectory(sessions_dir)).tokens_total
    assert before["total_tokens"] == 240
    prune(sessions_dir, timedelta(days=30), dry_run=False)
    stats = folder_stats(SessionDirectory(sessions_dir))
    assert stats.sessions == 1 and set(stats.tokens) == {"recent"} and set(stats.archived) == {"convo"}
    assert stats.tokens_total == before  # nothing spent is forgotten
    assert stats.as_dict()["tokens"]["archived"]["convo"]["input_tokens"] == 100
    assert archived_usage(sessions_dir)["convo"]["runs"] == 1


def _hold_lock_then_write(path: str, locked: Any, hold: float) -> None:
    from jsonl_session.core import storage
    from jsonl_session.core.transaction import Transaction

    with Transaction(path, write=True) as file:
        locked.set()
        time.sleep(hold)
        storage.append(file.fd, Path(path), b'{"role": "user", "content": "late"}\n', durable=True)


def test_a_session_written_while_pruning_is_not_pruned(sessions_dir: Path) -> None:
    make_old(sessions_dir, "busy", sidecars=False)
    make_old(sessions_dir, "idle", sidecars=False)
    context = multiprocessing.get_context("spawn")
    locked = context.Event()
    path = str(sessions_dir / "busy.jsonl")
    writer = context.Process(target=_hold_lock_then_write, args=(path, locked, 1.0))
    writer.start()
    try:
        assert locked.wait(30)
        # prune lists "busy" as idle at once, then waits for its lock while the writer writes
        outcomes = {o.session_id: o for o in prune(sessions_dir, timedelta(days=30), dry_run=False)}
    finally:
        writer.join(30)
    assert outcomes["busy"].action == SKIPPED and outcomes["busy"].reason == "written while pruning"
    assert not outcomes["busy"].failed
    assert outcomes["idle"].action == ARCHIVED
    items = JSONLSession("busy", sessions_dir).get_items_sync()
    assert items[-1] == {"role": "user", "content": "late"} and len(items) == 3
    assert [a.session_id for a in list_archives(sessions_dir)] == ["idle"]


def test_restore_never_overwrites_a_session_written_after_pruning(sessions_dir: Path) -> None:
    make_old(sessions_dir, "convo")
    prune(sessions_dir, timedelta(days=30), dry_run=False)
    JSONLSession("convo", sessions_dir).add_items_sync([{"role": "user", "content": "new"}])
    with pytest.raises(SessionExistsError, match="restore never overwrites"):
        restore(sessions_dir, "convo")
    assert len(list_archives(sessions_dir)) == 1  # still there to restore once that one is removed


def test_a_damaged_archive_is_refused_and_nothing_is_written(sessions_dir: Path) -> None:
    make_old(sessions_dir, "convo")
    (outcome,) = prune(sessions_dir, timedelta(days=30), dry_run=False)
    assert outcome.archive is not None
    data = bytearray(outcome.archive.read_bytes())
    data[len(data) // 2] ^= 0xFF
    outcome.archive.write_bytes(bytes(data))
    with pytest.raises(SessionFileError):
        restore(sessions_dir, "convo")
    assert not (sessions_dir / "convo.jsonl.usage").exists()


# -- kill -9 at every step ----------------------------------------------------------------

KILLER = """
import os, signal, sys
# Counted before jsonl_session is imported, so that its modules capture the counting versions.
step = [0]
kill_at = int(sys.argv[3])
def counting(function):
    def call(*args, **kwargs):
        step[0] += 1
        if step[0] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return function(*args, **kwargs)
    return call
for name in ("open", "write", "fsync", "fdatasync", "replace", "rename", "unlink", "ftruncate"):
    setattr(os, name, counting(getattr(os, name)))
from jsonl_session.tools.retention import prune, restore
if sys.argv[1] == "prune":
    outcomes = prune(sys.argv[2], 30 * 86400, dry_run=False)
    assert all(outcome.action == "archived" for outcome in outcomes), outcomes
else:
    restore(sys.argv[2], "a")
    restore(sys.argv[2], "b")
print(step[0])
"""


def run_killed(command: str, folder: Path, kill_at: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", KILLER, command, str(folder), str(kill_at)],
        capture_output=True,
        check=False,
        text=True,
        cwd=ROOT,
        timeout=60,
    )


@pytest.mark.slow
@pytest.mark.parametrize("command", ["prune", "restore"])
def test_kill_9_at_every_step_then_a_rerun_loses_nothing(tmp_path: Path, command: str) -> None:
    def fresh(name: str) -> tuple[Path, dict[str, bytes]]:
        folder = tmp_path / name
        original = make_old(folder, "a") | make_old(folder, "b", sidecars=False)
        if command == "restore":
            prune(folder, timedelta(days=30), dry_run=False)
        return folder, original

    folder, _ = fresh("count")
    done = run_killed(command, folder, 0)
    assert done.returncode == 0, done.stderr
    steps = int(done.stdout)
    assert steps > 10
    for kill_at in range(1, steps + 1):
        folder, original = fresh(f"kill-{kill_at}")
        killed = run_killed(command, folder, kill_at)
        assert killed.returncode == -signal.SIGKILL, (kill_at, killed.stderr)
        if command == "prune":  # the re-run finishes, then both come back whole
            outcomes = prune(folder, timedelta(days=30), dry_run=False)
            assert all(outcome.action == ARCHIVED for outcome in outcomes), (kill_at, outcomes)
            assert SessionDirectory(folder).ids() == [], kill_at
            assert sorted(a.session_id for a in list_archives(folder)) == ["a", "b"], kill_at  # not twice
        for session_id in ("a", "b"):
            try:
                restore(folder, session_id)
            except FileNotFoundError:  # a killed restore had finished this one
                assert command == "restore", kill_at
        assert files_of(folder) == original, kill_at
        assert sorted(path.name for path in (folder / ".archive").iterdir()) == [], kill_at
