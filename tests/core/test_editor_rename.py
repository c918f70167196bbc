"""Why an editor that saves by rename is not safe while a writer runs (docs/format.md).

``sed -i``, vim's default ``backupcopy=auto`` on most files, and many IDEs save by writing a new
file and renaming it over the old one. They take no lock, so an item appended between the
editor reading the file and renaming its copy over it is acknowledged to the writer and then
replaced away. ``stress/editor_rename.py`` measures it with a real writer and ``sed -i``
(42 of 3,000 acknowledged appends lost); this test replays the steps in order, deterministically.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import cli_env

from jsonl_session import JSONLSession

APPEND = """
import sys
from jsonl_session import JSONLSession
JSONLSession("convo", sys.argv[1]).add_items_sync([{"role": "user", "content": "acknowledged"}])
"""


def append_from_another_process(directory: Path) -> None:
    subprocess.run([sys.executable, "-c", APPEND, str(directory)], check=True, env=cli_env())


@pytest.mark.skipif(shutil.which("sed") is None, reason="needs sed")
def test_sed_i_saves_by_rename(sessions_dir: Path) -> None:
    session = JSONLSession("convo", sessions_dir)
    session.add_items_sync([{"role": "user", "content": "hello"}])
    before = os.stat(session.path).st_ino
    subprocess.run(["sed", "-i", "s/hello/HELLO/", str(session.path)], check=True)
    assert os.stat(session.path).st_ino != before  # a new file took the old one's name
    assert session.get_items_sync() == [{"role": "user", "content": "HELLO"}]  # picked up at once


def test_an_append_made_while_a_rename_saving_editor_is_open_is_lost(sessions_dir: Path) -> None:
    session = JSONLSession("convo", sessions_dir)
    session.add_items_sync([{"role": "user", "content": "hello"}])
    opened = session.path.read_bytes()  # 1. the editor reads the file (no lock: editors take none)
    append_from_another_process(sessions_dir)  # 2. a writer appends; add_items returns
    assert session.get_items_sync()[-1] == {"role": "user", "content": "acknowledged"}
    copy = session.path.with_name(".convo.jsonl.sed")  # 3. the editor saves: new file, renamed over
    copy.write_bytes(opened.replace(b"hello", b"HELLO"))
    os.replace(copy, session.path)
    assert session.get_items_sync() == [{"role": "user", "content": "HELLO"}]  # the append is gone


def test_an_append_after_the_save_goes_to_the_new_file(sessions_dir: Path) -> None:
    session = JSONLSession("convo", sessions_dir)
    session.add_items_sync([{"role": "user", "content": "hello"}])  # keeps its descriptor open
    copy = session.path.with_name(".convo.jsonl.sed")
    copy.write_bytes(session.path.read_bytes().replace(b"hello", b"HELLO"))
    os.replace(copy, session.path)
    session.add_items_sync([{"role": "user", "content": "after"}])  # never to the old inode
    assert JSONLSession("convo", sessions_dir).get_items_sync() == [
        {"role": "user", "content": "HELLO"},
        {"role": "user", "content": "after"},
    ]


def test_format_md_says_what_is_safe_and_points_to_edit() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "format.md").read_text(encoding="utf-8")
    section = doc.split("### Editing by hand while a writer runs", 1)[1].split("\n## ", 1)[0]
    assert "**Not safe while a writer runs: editors that save by rename** (`sed -i`" in section
    assert "`jsonl-session edit ID`" in section and "stress/editor_rename.py" in section
