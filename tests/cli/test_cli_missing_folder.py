"""A folder that does not exist gets one answer from every command: the same line, exit 2.

A typo in ``--dir`` (or an unset ``$JSONL_SESSION_DIR``) must not look like an empty folder:
``check`` saying ``0 problems`` or ``grep`` finding nothing there hides the mistake.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import run

from jsonl_session.cli.commands import _HANDLERS

# Each command that reads the folder, with the arguments it needs to get as far as reading it.
READS_THE_FOLDER: dict[str, list[str]] = {
    "ls": ["ls"],
    "ls --json": ["ls", "--json"],
    "meta": ["meta", "a"],
    "show": ["show", "a"],
    "show --html": ["show", "a", "--html"],
    "show --turns": ["show", "a", "--turns"],
    "tail": ["tail", "a"],
    "pop": ["pop", "a"],
    "clear": ["clear", "a", "--yes"],
    "rm": ["rm", "a", "--yes"],
    "fork": ["fork", "a", "b"],
    "rewind": ["rewind", "a"],
    "check": ["check"],
    "check ID": ["check", "a"],
    "check --fix": ["check", "--fix"],
    "check --secrets": ["check", "--secrets"],
    "redact": ["redact", "a"],
    "edit": ["edit", "a"],
    "grep": ["grep", "x"],
    "stats": ["stats"],
    "stats --turns": ["stats", "--turns"],
    "export": ["export", "a", "--to", "sqlite:///{tmp}/out.db"],
    "export --all": ["export", "--all", "--to", "sqlite:///{tmp}/out.db"],
    "serve": ["serve", "--port", "0"],
    "prune": ["prune", "--older-than", "1d"],
    "restore": ["restore", "a"],
    "restore --list": ["restore", "--list"],
    "git-setup": ["git-setup"],
}
# What may start from nothing: they create the folder, or take a file path, not a folder.
# (``tail -f`` too: it waits for a session the first write creates, folder and all.)
CREATES_OR_TAKES_A_FILE = {"add", "import", "textconv", "mirror"}


def test_every_command_is_covered() -> None:
    covered = {argv[0] for argv in READS_THE_FOLDER.values()}
    assert covered | CREATES_OR_TAKES_A_FILE == set(_HANDLERS)


@pytest.mark.parametrize("argv", READS_THE_FOLDER.values(), ids=READS_THE_FOLDER.keys())
def test_a_missing_folder_is_one_line_naming_dir_and_its_variable(tmp_path: Path, argv: list[str]) -> None:
    missing = tmp_path / "nowhere"
    result = run(missing, *(arg.format(tmp=tmp_path) for arg in argv), timeout=30)
    assert (result.code, result.out) == (2, ""), result
    assert result.err == (
        f"jsonl-session: error: {missing}: no such folder "
        "(name the sessions folder with --dir or $JSONL_SESSION_DIR)\n"
    )
    assert not missing.exists()
    assert not (tmp_path / "out.db").exists()


def test_a_file_where_the_folder_should_be_is_the_same_mistake(tmp_path: Path) -> None:
    not_a_folder = tmp_path / "sessions"
    not_a_folder.write_text("")
    result = run(not_a_folder, "check")
    assert result.code == 2
    assert result.err == (
        f"jsonl-session: error: {not_a_folder}: not a folder "
        "(name the sessions folder with --dir or $JSONL_SESSION_DIR)\n"
    )


def test_check_of_named_files_needs_no_folder(tmp_path: Path) -> None:
    elsewhere = tmp_path / "repo" / "a.jsonl"
    elsewhere.parent.mkdir()
    elsewhere.write_text('{"role": "user", "content": "hi"}\n')
    result = run(tmp_path / "nowhere", "check", str(elsewhere))
    assert result.code == 0, result
    assert run(tmp_path / "nowhere", "check", "--secrets", str(elsewhere)).code == 0
