"""A symlink where a session belongs is refused by every command and library entry point.

``check --secrets ID`` must not read through a symlinked session to a file outside the folder
(its findings quoted that file); the test of that command failed before the fix. The rest pin
that every other way in refuses it too, and that the file outside is never read or changed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import run

from jsonl_session import JSONLSession, SessionDirectory, UnsafePathError
from jsonl_session.tools.check import check_file
from jsonl_session.tools.secrets import redact_session, scan_file

SECRET = "sk-" + "proj-" + "A1b2C3d4E5f6G7h8J9k0" * 2
OUTSIDE = f'{{"role":"user","content":"outside {SECRET}"}}\n'


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    """``sessions/link.jsonl`` -> a file outside the folder holding an item with a secret."""
    folder = tmp_path / "sessions"
    JSONLSession("real", folder).add_items_sync([{"role": "user", "content": "inside"}])
    outside = tmp_path / "private.jsonl"
    outside.write_text(OUTSIDE)
    (folder / "link.jsonl").symlink_to(outside)
    return folder


COMMANDS = [
    ["show", "link"],
    ["show", "link", "--json"],
    ["tail", "link"],
    ["add", "link", "hi"],
    ["pop", "link"],
    ["clear", "link", "--yes"],
    ["rm", "link", "--yes"],
    ["fork", "link", "copy"],
    ["fork", "real", "link"],
    ["check", "link"],
    ["check", "--secrets", "link"],
    ["check", "--secrets", "{folder}/link.jsonl"],
    ["check", "{folder}/link.jsonl"],
    ["edit", "link"],
    ["grep", "outside", "link"],
    ["stats", "link"],
    ["export", "link", "--to", "sqlite:///{folder}/../x.db"],
    ["import", "sqlite:///{folder}/../x.db", "--id", "real", "--as", "link"],
    ["redact", "link"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_refuses_a_symlinked_session(planted: Path, command: list[str]) -> None:
    outside = planted.parent / "private.jsonl"
    args = [part.format(folder=planted) for part in command]
    if command[0] == "import":  # a database that exists: the refusal must be the symlink's
        import sqlite3

        sqlite3.connect(planted.parent / "x.db").close()
    result = run(planted, *args, env=None)
    assert result.code == 1, (result.out, result.err)
    assert "symlink" in result.err + result.out and "internal error" not in result.err
    assert "outside" not in result.out and "sk-pro" not in result.out  # nothing read through it
    assert outside.read_text() == OUTSIDE
    assert (planted / "link.jsonl").is_symlink()
    assert not (planted / "copy.jsonl").exists()


def test_folder_commands_skip_a_symlinked_session(planted: Path) -> None:
    for command in (["ls"], ["stats"], ["grep", "outside"], ["check", "--secrets"]):
        result = run(planted, *command)
        assert "outside" not in result.out and "sk-pro" not in result.out, command
    assert [info.session_id for info in SessionDirectory(planted).list()] == ["real"]


def test_library_entry_points_refuse_a_symlinked_session(planted: Path) -> None:
    link = planted / "link.jsonl"
    with pytest.raises(UnsafePathError, match="symlink"):
        scan_file(link)
    assert [problem.reason for problem in check_file(link)] == [
        "is a symlink; refusing to follow it out of the sessions folder"
    ]
    session = JSONLSession("link", planted)
    for call in (session.get_items_sync, session.pop_item_sync, session.clear_session_sync):
        with pytest.raises(UnsafePathError):
            call()
    with pytest.raises(UnsafePathError):
        redact_session(session)
    with pytest.raises(UnsafePathError):
        SessionDirectory(planted).fork("link", "copy")
    with pytest.raises(UnsafePathError):
        SessionDirectory(planted).delete("link")
    assert (planted.parent / "private.jsonl").read_text() == OUTSIDE


def test_an_open_session_swapped_for_a_symlink_to_its_own_file_is_refused(tmp_path: Path) -> None:
    """The session's file is replaced by a symlink to the very inode the session holds open
    (hard-linked elsewhere first): the next write must see a symlink, not the same file.

    Catches (mutation testing): the lock's identity check following symlinks, which took the
    link for the file it held and wrote through it."""
    session = JSONLSession("s", tmp_path)
    session.add_items_sync([{"role": "user", "content": "one"}])
    elsewhere = tmp_path / "elsewhere.data"
    elsewhere.hardlink_to(session.path)
    session.path.unlink()
    session.path.symlink_to(elsewhere)
    before = elsewhere.read_bytes()
    with pytest.raises(UnsafePathError, match="symlink"):
        session.add_items_sync([{"role": "user", "content": "two"}])
    assert elsewhere.read_bytes() == before
