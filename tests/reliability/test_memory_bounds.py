"""Memory is bounded by design: no read path's peak follows the size of a hostile file.

A property over every read path, not one file: for each of ``ls``, ``show``, ``stats``, the
``serve`` index and page, ``restore --list``, the recall tool, ``grep`` and ``check``, a folder
holding one hostile sidecar (each kind a path reads), archive or session of 300 MB must cost
the command at most :data:`BOUND_KIB` more peak memory than the same command on the same
folder without it. A case that still fails is a strict ``xfail`` naming who is fixing it: it
turns into a failure the moment the fix lands, and the mark is then removed.

Peak memory is a property of the code, not of the machine's speed, so it may be asserted
(``tests/project/test_memory.py`` does the same): :func:`peak_kib` runs the command in a fresh
Python and reports the larger of its own peak resident memory (``VmHWM``) and that of any
process it started and waited for (``RUSAGE_CHILDREN``: the ``serve`` process, the system's
``grep``). Each hostile file is cheap to make: sidecars and sessions are sparse files
(``truncate``), an archive is about 1 MB of gzip that says 300 MB (a decompression bomb).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import tarfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from cli_helpers import cli_env

from jsonl_session import JSONLSession

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmHWM from /proc")

BIG = 300 * 1024 * 1024
"""The hostile file: 300 MB on disk or once decompressed."""
BOUND_KIB = 50 * 1024
"""What one hostile file may add to a command's peak memory: 50 MiB, a sixth of its size."""
PROBE_TIMEOUT = 120
"""Seconds a probe may take (a few, usually): a hang is reported as one, under pytest's own timeout."""

PROBE = """
import os, resource, subprocess, sys, urllib.error, urllib.request
folder = sys.argv[1]

def cli(*args):
    from jsonl_session.cli.commands import main
    try:
        main([*args, "--dir", folder])
    except SystemExit:
        pass

def serve(*paths):
    server = subprocess.Popen(
        [sys.executable, "-m", "jsonl_session", "serve", "--dir", folder, "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    url = server.stdout.readline().strip()
    try:
        for path in paths:
            try:
                with urllib.request.urlopen(url + path, timeout=60) as response:
                    while response.read(1 << 16):
                        pass
            except urllib.error.HTTPError:
                pass
    finally:
        server.terminate()
        server.wait()

{operation}
with open("/proc/self/status") as status:
    own = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print(max(own, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss), file=sys.stderr)
"""


def peak_kib(folder: Path, operation: str) -> int:
    """Peak resident memory (KiB) of a fresh Python running ``operation`` on ``folder``, or of
    a process it started and waited for, if higher."""
    probe = subprocess.Popen(
        [sys.executable, "-c", PROBE.format(operation=operation), str(folder)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
        start_new_session=True,  # its own group: a hung probe is killed with the server it started
    )
    try:
        _, errors = probe.communicate(timeout=PROBE_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(probe.pid, signal.SIGKILL)
        probe.communicate()
        raise AssertionError(f"{operation!r} did not finish in {PROBE_TIMEOUT} s") from None
    assert probe.returncode == 0, errors[-2000:]
    return int(errors.strip().splitlines()[-1])


# -- the folder and its hostile files ------------------------------------------------------------


def make_folder(folder: Path) -> None:
    """The folder every case starts from: a session ``s`` (with metadata and times), and nothing hostile."""
    session = JSONLSession("s", folder)
    session.add_items_sync(
        [
            {"role": "user", "content": "Where is my refund for order A-1042?"},
            {"role": "assistant", "content": "It left on Monday."},
        ]
    )
    session.set_metadata_sync(owner="alice", title="Refund")


def sparse(path: Path, head: bytes = b"", tail: bytes = b"") -> None:
    """``head``, then a hole up to :data:`BIG` bytes, then ``tail``: 300 MB that take no disk."""
    with path.open("wb") as file:
        file.write(head)
        file.truncate(BIG - len(tail))
        file.seek(BIG - len(tail))
        file.write(tail)


def hostile_meta(folder: Path) -> None:
    """``s.jsonl.meta`` of 300 MB (its limit is 64 KiB): a record's start, then a hole."""
    sparse(folder / "s.jsonl.meta", head=b'{"owner": "alice", "title": "')


def hostile_times(folder: Path) -> None:
    """``s.jsonl.times`` of 300 MB: a hole where records should be (a reader from its tail finds none)."""
    sparse(folder / "s.jsonl.times")


def hostile_lineage(folder: Path) -> None:
    """``s.jsonl.lineage`` of 300 MB: the start of a record, then a hole."""
    sparse(folder / "s.jsonl.lineage", head=b'{"source": "')


def hostile_usage(folder: Path) -> None:
    """``s.jsonl.usage`` of 300 MB: the start of a usage record that never ends."""
    sparse(folder / "s.jsonl.usage", head=b'{"input_tokens": ')


def hostile_run(folder: Path) -> None:
    """``s.jsonl.run`` (a paused run) of 300 MB: the start of a record, then a hole."""
    sparse(folder / "s.jsonl.run", head=b'{"state": "')


def hostile_session(folder: Path) -> None:
    """``big.jsonl``: 300 MB without a newline (one line that never ends), without the word searched."""
    sparse(folder / "big.jsonl", head=b'{"role": "user", "content": "x')


def write_bomb(path: Path, session_id: str, manifest_size: int) -> None:
    """A valid archive of ``session_id`` whose manifest is padded with spaces to ``manifest_size``
    bytes (still valid JSON): 1/230 of that in gzip, streamed out, never held whole."""
    data = b'{"role": "user", "content": "archived refund"}\n'
    manifest = {
        "format": "jsonl-session-archive",
        "version": 1,
        "session_id": session_id,
        "archived_at": "2026-01-02T03:04:05Z",
        "last_written": "2025-11-30T08:00:00Z",
        "items": 1,
        "usage": None,
        "files": [
            {
                "name": f"{session_id}.jsonl",
                "size": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
                "mode": 0o600,
                "mtime": 1764489600.0,
            }
        ],
    }
    head = json.dumps(manifest).encode()
    deflate = zlib.compressobj(1, zlib.DEFLATED, 31)  # 31: the gzip format; 1: fastest, 1.3 MB
    path.parent.mkdir(mode=0o700, exist_ok=True)
    with path.open("wb") as out:

        def member(name: str, size: int, chunks: Callable[[], list[bytes]]) -> None:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = size, 0o600, 1767322245
            out.write(deflate.compress(info.tobuf(format=tarfile.PAX_FORMAT)))
            for chunk in chunks():
                out.write(deflate.compress(chunk))
            out.write(deflate.compress(bytes(-size % 512)))

        def padded() -> list[bytes]:
            spaces = b" " * (1 << 20)
            left = manifest_size - len(head)
            return [head, *(spaces for _ in range(left >> 20)), spaces[: left % (1 << 20)]]

        member("jsonl-session-archive.json", manifest_size, padded)
        member(f"{session_id}.jsonl", len(data), lambda: [data])
        out.write(deflate.compress(bytes(1024)) + deflate.flush())


def hostile_archive(folder: Path) -> None:
    """``.archive/gone.jsonl.<stamp>.tar.gz``: 1.3 MB that decompress to a 300 MB manifest."""
    write_bomb(folder / ".archive" / "gone.jsonl.20260102T030405.000000Z.tar.gz", "gone", BIG)


# -- the table -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One read path over one hostile file: how to make it, what to run, and who is fixing it."""

    path: str
    hostile: Callable[[Path], None]
    operation: str
    failing: str | None = None
    """Set while the path still reads the hostile file whole: ``"<owner> fixing: ..."``."""


CASES = [
    Case("ls", hostile_meta, "cli('ls')"),
    Case("ls --json", hostile_meta, "cli('ls', '--json')"),
    Case("ls --user", hostile_meta, "cli('ls', '--user', 'alice')"),
    Case("ls", hostile_times, "cli('ls')"),
    Case("ls --json", hostile_times, "cli('ls', '--json')"),
    Case("ls", hostile_lineage, "cli('ls')"),
    Case("ls", hostile_usage, "cli('ls')"),
    Case("show", hostile_times, "cli('show', 's')"),
    Case("show --html", hostile_times, "cli('show', 's', '--html')"),
    Case("show", hostile_meta, "cli('show', 's')"),
    Case("show --html", hostile_meta, "cli('show', 's', '--html')"),
    Case("stats", hostile_archive, "cli('stats')"),
    Case("stats", hostile_times, "cli('stats', 's')"),
    Case("stats", hostile_usage, "cli('stats')"),
    Case("restore --list", hostile_archive, "cli('restore', '--list')"),
    Case("restore", hostile_archive, "cli('restore', 'gone')"),
    Case("serve index", hostile_meta, "serve('/', '/api/sessions')"),
    Case("serve index", hostile_times, "serve('/', '/api/sessions')"),
    Case("serve page", hostile_meta, "serve('/session?id=s')"),
    Case("serve page", hostile_times, "serve('/session?id=s')"),
    Case("serve index", hostile_lineage, "serve('/', '/api/sessions')"),
    Case("serve page", hostile_usage, "serve('/session?id=s')"),
    Case("check", hostile_lineage, "cli('check')"),
    Case("check", hostile_meta, "cli('check')"),
    Case("check", hostile_run, "cli('check')"),
    Case(
        "recall",
        hostile_meta,
        "from jsonl_session.tools.recall import search_sessions\n"
        "search_sessions(folder, 'refund', owner='alice')",
    ),
    Case(
        "recall",
        hostile_session,
        "from jsonl_session.tools.recall import search_sessions\nsearch_sessions(folder, 'refund')",
    ),
    Case("grep", hostile_meta, "cli('grep', 'refund')"),
    Case("grep", hostile_session, "cli('grep', 'refund')"),
    Case(
        "grep, Python",
        hostile_session,
        "os.environ['JSONL_SESSION_PYTHON_GREP'] = '1'\ncli('grep', 'refund')",
    ),
]


def _param(case: Case) -> object:
    marks = [pytest.mark.xfail(strict=True, reason=case.failing)] if case.failing else []
    return pytest.param(case, id=f"{case.path}-{case.hostile.__name__}", marks=marks)


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Callable[[Path], None] | None], Path]:
    """``folders(hostile)``: the folder with that hostile file (``None``: without), made once each."""
    made: dict[str, Path] = {}

    def folder_with(hostile: Callable[[Path], None] | None) -> Path:
        name = "plain" if hostile is None else hostile.__name__
        if name not in made:
            folder = tmp_path_factory.mktemp(name)
            make_folder(folder)
            if hostile is not None:
                hostile(folder)
            made[name] = folder
        return made[name]

    return folder_with


@pytest.fixture(scope="module")
def baselines(folders: Callable[[Callable[[Path], None] | None], Path]) -> Callable[[str], int]:
    """The peak of each operation on the folder without a hostile file, measured once each."""
    measured: dict[str, int] = {}

    def baseline(operation: str) -> int:
        if operation not in measured:
            measured[operation] = peak_kib(folders(None), operation)
        return measured[operation]

    return baseline


@pytest.mark.parametrize("case", [_param(case) for case in CASES])
def test_one_hostile_file_cannot_raise_a_read_paths_peak_memory(
    case: Case,
    folders: Callable[[Callable[[Path], None] | None], Path],
    baselines: Callable[[str], int],
) -> None:
    folder = folders(case.hostile)
    hostile_bytes = sum(
        path.stat().st_size if path.suffix != ".gz" else BIG for path in folder.rglob("*") if path.is_file()
    )
    assert hostile_bytes >= BIG
    assert peak_kib(folder, case.operation) - baselines(case.operation) < BOUND_KIB


def test_the_bomb_is_small_on_disk_and_a_valid_archive(tmp_path: Path) -> None:
    """The hostile archive is what it claims: small, and readable by tar as a manifest then the session."""
    bomb = tmp_path / ".archive" / "x.jsonl.20260102T030405.000000Z.tar.gz"
    write_bomb(bomb, "x", 4 * 1024 * 1024)
    assert bomb.stat().st_size < 64 * 1024
    with tarfile.open(bomb, "r|gz") as tar:
        manifest = tar.next()
        assert manifest is not None and manifest.name == "jsonl-session-archive.json"
        text = tar.extractfile(manifest).read()  # type: ignore[union-attr]
        assert len(text) == 4 * 1024 * 1024 and json.loads(text)["session_id"] == "x"
        session = tar.next()
        assert session is not None and session.name == "x.jsonl"
        assert tar.extractfile(session).read() == b'{"role": "user", "content": "archived refund"}\n'  # type: ignore[union-attr]
        assert tar.next() is None
