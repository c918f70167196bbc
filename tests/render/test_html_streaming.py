"""``show --html`` streams: the same page, written a piece at a time, flat memory.

The page is compared byte for byte with the one built whole (``session_html``) on files with
every awkward line (hostile items, bad lines, blank lines, a torn tail, more than one piece);
its peak memory is measured in a child process, as tests/project/test_memory.py does.
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from cli_helpers import run
from viewer_helpers import HAND_WRITTEN_BAD_LINES, conversation, hostile_items, write_session

from jsonl_session.render import file_io
from jsonl_session.render.file_io import session_html, write_session_html


def streamed(path: Path, **options: object) -> tuple[bytes, file_io.Written]:
    out = io.BytesIO()
    written = write_session_html(path, "t", out, **options)  # type: ignore[arg-type]
    return out.getvalue(), written


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\n\n",
        b"".join(orjson.dumps(item) + b"\n" for item in conversation()),
        b"".join(orjson.dumps(item) + b"\n" for item in hostile_items()),
        b"\n".join(HAND_WRITTEN_BAD_LINES) + b"\n\n" + orjson.dumps(conversation()[0]) + b'\n{"role": "us',
        b"\n".join(orjson.dumps(item) for item in conversation() * 3000) + b"\n\n\n<<<<<<< HEAD",
    ],
    ids=["empty", "blank", "conversation", "hostile", "bad-lines-and-torn-tail", "many-pieces"],
)
def test_the_streamed_page_is_the_page_built_whole(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(content)
    whole, found = session_html(path, "t")
    page, written = streamed(path)
    assert page == whole
    assert written.count == len(found.views)
    assert (written.unreadable, written.first_unreadable) == (len(found.unreadable), found.unreadable[:5])


def test_the_newest_n_stream_too(tmp_path: Path) -> None:
    path = write_session(tmp_path / "t.jsonl", conversation(), extra_lines=[b"not json"])
    assert streamed(path, newest=3)[0] == session_html(path, "t", newest=3)[0]


def test_a_piece_of_the_page_never_holds_the_whole_session(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(orjson.dumps(item) + b"\n" for item in conversation() * 20_000))
    sizes = []

    class Sizes(io.RawIOBase):
        def write(self, data: bytes) -> int:  # type: ignore[override]
            sizes.append(len(data))
            return len(data)

    write_session_html(path, "t", Sizes())  # type: ignore[arg-type]
    assert sum(sizes) > 20 * 1024 * 1024 and max(sizes) < 1024 * 1024


# -- the file it writes ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o644])
def test_show_html_o_writes_the_page_with_the_session_files_mode(
    sessions_dir: Path, tmp_path: Path, mode: int
) -> None:
    path = write_session(sessions_dir / "chat.jsonl", conversation())
    path.chmod(mode)
    fresh, existing = tmp_path / "fresh.html", tmp_path / "existing.html"
    existing.write_text("PREVIOUS CONTENT " * 1000)
    existing.chmod(0o666)
    for out in (fresh, existing):
        assert run(sessions_dir, "show", "chat", "--html", "-o", str(out)).code == 0
        assert oct(out.stat().st_mode & 0o777) == oct(mode)
        assert b"PREVIOUS CONTENT" not in out.read_bytes()
    markdown = tmp_path / "chat.md"
    assert run(sessions_dir, "show", "chat", "--markdown", "-o", str(markdown)).code == 0
    assert oct(markdown.stat().st_mode & 0o777) == oct(mode)


# -- memory ---------------------------------------------------------------------------------------

SIZE = 48 * 1024 * 1024
HEADROOM_KIB = 40 * 1024

PROBE = """
import resource, sys
from jsonl_session.cli.commands import main
if sys.argv[2] != "-":
    assert main(["show", "big", "--html", "-o", sys.argv[2], "--dir", sys.argv[1]]) == 0
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""


def peak_kib(folder: Path, out: str) -> int:
    completed = subprocess.run(
        [sys.executable, "-c", PROBE, str(folder), out], capture_output=True, text=True, check=True
    )
    return int(completed.stderr.strip().splitlines()[-1])


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss is in KiB on Linux")
def test_show_html_of_a_big_session_keeps_memory_flat(tmp_path: Path) -> None:
    # ~100,000 realistic items: the whole page in memory peaked near 6x the file.
    folder = tmp_path / "sessions"
    folder.mkdir()
    block = b"".join(orjson.dumps(item) + b"\n" for item in conversation() * 100)
    with (folder / "big.jsonl").open("wb") as file:
        while file.tell() < SIZE:
            file.write(block)
    out = tmp_path / "big.html"
    baseline = peak_kib(folder, "-")
    peak = peak_kib(folder, str(out))
    assert out.stat().st_size > SIZE
    assert peak - baseline < HEADROOM_KIB, (peak, baseline)
