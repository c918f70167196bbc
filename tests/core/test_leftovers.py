"""A rewrite killed before its rename leaves a temporary copy: `check` names it, `--fix` removes it (#15.6).

Before the fix ``check`` said nothing about such a file (the first test failed) and nothing
ever removed it. The writers here are real processes, paused right after writing their
temporary file and then SIGKILLed, exactly where a crash would leave one.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import run

from jsonl_session import JSONLSession, SessionDirectory
from jsonl_session.core.temp_files import is_orphaned, temp_files

ITEM = {"role": "user", "content": "hi"}

# Runs one kind of rewrite, pausing (on stdin) once its temporary file is written and synced.
WRITER = r"""
import os, sys
from jsonl_session import JSONLSession
from jsonl_session.core import storage
from jsonl_session.tools.secrets import redact_session

real = storage.write_at_end
def pausing(fd, payload, size_before, *, durable):
    real(fd, payload, size_before, durable=durable)
    name = os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))
    if name.endswith(".tmp") and (sys.argv[3] != "times" or ".jsonl.times." in name):
        print("written", flush=True)
        sys.stdin.readline()
storage.write_at_end = pausing

session = JSONLSession(sys.argv[2], sys.argv[1])
if sys.argv[3] == "rewrite":
    with session.rewrite() as draft:
        draft.items.append({"role": "assistant", "content": "new"})
elif sys.argv[3] == "replace":
    session.replace_items_sync([{"role": "assistant", "content": "new"}])
elif sys.argv[3] == "sidecar":  # a whole-object sidecar (.run, .lineage) replaced under the session's lock
    from jsonl_session.core import sidecar_files
    with session.locked(write=True, create=False):
        run_file = sidecar_files.sidecar(session.path, sidecar_files.RUN)
        sidecar_files.write_json(run_file, {"pending": []}, durable=True)
elif sys.argv[3] == "metadata":  # .meta, replaced whole by set_metadata
    session.set_metadata_sync(title="Refund", tags=["billing"])
elif sys.argv[3] == "times":  # a rewrite's new .times, written after the items (paused there)
    with session.rewrite() as draft:
        draft.items.append({"role": "assistant", "content": "new"})
else:
    redact_session(session)
"""


class PausedWriter:
    """A real process holding a rewrite's temporary file (and the session's lock) until killed."""

    def __init__(self, folder: Path, session_id: str, how: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(folder), session_id, how],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        assert self.process.stdout.readline() == "written\n"

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        assert self.process.returncode == -signal.SIGKILL


@pytest.fixture
def writers() -> Iterator[list[PausedWriter]]:
    started: list[PausedWriter] = []
    yield started
    for writer in started:
        if writer.process.poll() is None:
            writer.kill()


@pytest.mark.parametrize("how", ["rewrite", "replace", "redact", "sidecar", "metadata", "times"])
def test_check_names_a_killed_rewrites_temporary_file_and_fix_removes_it(
    sessions_dir: Path, writers: list[PausedWriter], how: str
) -> None:
    secret = "sk-" + "proj-" + "A1b2C3d4E5f6G7h8J9k0" * 2
    session = JSONLSession("s", sessions_dir)
    session.add_items_sync([ITEM, {"role": "user", "content": secret}])
    before = session.path.read_bytes()
    writers.append(PausedWriter(sessions_dir, "s", how))
    writers[0].kill()
    (temp,) = temp_files(sessions_dir)
    assert temp.name.startswith(".s.jsonl.")
    if how == "times":  # the items' own replace had finished
        before = session.path.read_bytes()
    assert session.path.read_bytes() == before

    result = run(sessions_dir, "check")
    assert result.code == 1
    size = temp.stat().st_size
    assert (
        result.out
        == f"{temp}: temporary copy ({size} bytes) left by an interrupted rewrite; `check --fix` removes it\n"
    )
    assert [info.session_id for info in SessionDirectory(sessions_dir).list()] == ["s"]  # not a session

    fixed = run(sessions_dir, "check", "--fix")
    assert (fixed.code, fixed.err) == (0, "checked 1 file: 1 problem, 1 fixed\n")
    assert fixed.out.startswith(f"fixed: {temp}: ") and fixed.out.endswith("; removed\n")
    assert temp_files(sessions_dir) == [] and session.path.read_bytes() == before


def test_a_live_rewrites_temporary_file_is_left_alone(
    sessions_dir: Path, writers: list[PausedWriter]
) -> None:
    JSONLSession("s", sessions_dir).add_items_sync([ITEM])
    writers.append(PausedWriter(sessions_dir, "s", "rewrite"))
    (temp,) = temp_files(sessions_dir)
    assert not is_orphaned(temp)  # its writer holds its lock
    result = run(sessions_dir, "check", "--fix", "--lock-timeout", "0.2")  # the writer holds the session too
    assert result.code == 1 and "not checked: lock not acquired within 0.2s" in result.out
    assert temp.exists()
    writers[0].kill()
    assert is_orphaned(temp)


def test_a_temporary_file_whose_session_is_gone_is_found_by_a_folder_check(
    sessions_dir: Path, writers: list[PausedWriter]
) -> None:
    JSONLSession("gone", sessions_dir).add_items_sync([ITEM])
    JSONLSession("kept", sessions_dir).add_items_sync([ITEM])
    writers.append(PausedWriter(sessions_dir, "gone", "replace"))
    writers[0].kill()
    assert run(sessions_dir, "rm", "gone", "--yes").code == 0
    (temp,) = temp_files(sessions_dir)
    result = run(sessions_dir, "check")
    assert result.code == 1 and result.out.startswith(f"{temp}: temporary copy")
    assert run(sessions_dir, "check", "kept").code == 0  # named sessions: only theirs
    assert run(sessions_dir, "check", "--fix").code == 0
    assert temp_files(sessions_dir) == []


def test_a_live_temporary_file_does_not_hide_the_orphans_after_it(
    sessions_dir: Path, writers: list[PausedWriter]
) -> None:
    """Catches (mutation testing): the scan stopping at the first live temporary file, and the
    removed orphan reported as not fixable."""
    from jsonl_session.tools.check import stray_temp_problems

    JSONLSession("s", sessions_dir).add_items_sync([ITEM])
    writers.append(PausedWriter(sessions_dir, "s", "rewrite"))
    (live,) = temp_files(sessions_dir)
    (sessions_dir / "s.jsonl").unlink()  # its session removed by hand while the rewrite waits
    orphan = sessions_dir / ".s.jsonl.ffffffff.tmp"  # sorts after the live one
    orphan.write_text("{}\n")
    found = {problem.path: problem for problem in stray_temp_problems(sessions_dir, fix=True)}
    assert sorted(path.name for path in found) == [".s.jsonl.ffffffff.tmp", "s.jsonl.times"]
    assert (found[orphan].fixable, found[orphan].fixed) == (True, True)
    assert temp_files(sessions_dir) == [live]


@pytest.mark.parametrize("suffix", [".torn", ".usage.torn", ".times"])
def test_every_sidecar_kind_a_restore_writes_has_its_temporary_files_recognised(
    sessions_dir: Path, suffix: str
) -> None:
    # A killed restore leaves the temporaries of what it was putting back, .torn fragments too;
    # they were not recognised (the pattern knew only the sidecar kinds), so check missed them.
    JSONLSession("s", sessions_dir).add_items_sync([ITEM])
    left = sessions_dir / f".s.jsonl{suffix}.0123abcd.tmp"
    left.write_bytes(b"half a restore")
    result = run(sessions_dir, "check", "s", "--fix")
    assert f"{left}: temporary copy (14 bytes) left by an interrupted rewrite; removed" in result.out
    assert not left.exists()
