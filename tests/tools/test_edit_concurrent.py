"""``jsonl-session edit`` beside a running agent, with real processes.

Before: the edit held the session's lock while the editor was open, so the agent's append
failed with LockTimeout (the first test failed); an edit that changed nothing said "saved";
removing a tool call's output was saved without a word; a killed edit left the conversation
in the shared temp folder. The editor here is a script that says when it is open and then
waits for a line on its stdin (inherited from the edit process), which the test controls.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import cli_env, run

from jsonl_session import JSONLSession, SessionDirectory
from jsonl_session.core.temp_files import temp_files

CALL = {"type": "function_call", "name": "lookup", "arguments": "{}", "call_id": "call_1"}
OUTPUT = {"type": "function_call_output", "call_id": "call_1", "output": "ok"}
ITEMS: list[Any] = [
    {"role": "user", "content": "Hello"},
    CALL,
    OUTPUT,
    {"role": "assistant", "content": "Hi"},
]


class Edit:
    """A real ``jsonl-session edit`` whose editor waits, after it opened, for ``finish()``."""

    def __init__(self, tmp_path: Path, folder: Path, body: str, answers: str = "") -> None:
        script = tmp_path / "editor.py"
        script.write_text(
            "import json, pathlib, sys\n"
            "path = pathlib.Path(sys.argv[1])\n"
            "print('editor open', path, flush=True)\n"
            "sys.stdin.readline()\n" + body
        )
        self.temp_folder = tmp_path / "tmp"
        self.temp_folder.mkdir(exist_ok=True)
        env = cli_env(EDITOR=f"{sys.executable} {script}", VISUAL="", TMPDIR=str(self.temp_folder))
        self.answers = answers
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jsonl_session", "edit", "c", "--dir", str(folder)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
        assert self.process.stdout is not None
        opened = self.process.stdout.readline().split()
        assert opened[:2] == ["editor", "open"], opened
        self.copy = Path(opened[2])

    def finish(self) -> tuple[int, str]:
        """Let the editor save, answer the edit's first question if asked to; the exit code and stderr."""
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.write("\n")  # the editor's line (it reads ahead: answers must wait)
        self.process.stdin.flush()
        seen = ""
        if self.answers:
            while not seen.endswith("] "):  # the prompt, e.g. "save anyway? [y/N] "
                character = self.process.stderr.read(1)
                assert character, seen
                seen += character
            self.process.stdin.write(self.answers)
        self.process.stdin.close()
        code = self.process.wait(timeout=60)
        return code, seen + self.process.stderr.read()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream:
                stream.close()


@pytest.fixture
def edits() -> Iterator[list[Edit]]:
    started: list[Edit] = []
    yield started
    for edit in started:
        edit.stop()


def seeded(folder: Path) -> JSONLSession:
    session = JSONLSession("c", folder)
    session.add_items_sync(ITEMS)
    return session


CHANGE_LAST = (
    "lines = path.read_text().splitlines()\n"
    "lines[-1] = json.dumps({'role': 'assistant', 'content': 'Edited'}, separators=(',', ':'))\n"
    "path.write_text('\\n'.join(lines) + '\\n')\n"
)


def test_an_agent_appends_while_the_editor_is_open_and_its_items_are_kept(
    tmp_path: Path, sessions_dir: Path, edits: list[Edit]
) -> None:
    session = seeded(sessions_dir)
    edits.append(Edit(tmp_path, sessions_dir, CHANGE_LAST))
    assert edits[0].copy.parent == sessions_dir  # the copy sits next to the session, not in $TMPDIR
    assert list(edits[0].temp_folder.iterdir()) == []
    agent = JSONLSession(
        "c", sessions_dir, lock_timeout=0.2
    )  # another process's writer, e.g. a running agent
    agent.add_items_sync([{"role": "user", "content": "racing 1"}])  # no LockTimeout: nothing waits
    agent.add_items_sync([{"role": "user", "content": "racing 2"}])
    code, err = edits[0].finish()
    assert (code, err) == (0, "c: saved (4 -> 6 items; 2 added meanwhile kept)\n")
    assert session.get_items_sync() == [
        *ITEMS[:-1],
        {"role": "assistant", "content": "Edited"},
        {"role": "user", "content": "racing 1"},
        {"role": "user", "content": "racing 2"},
    ]
    assert temp_files(sessions_dir) == []


def test_a_real_conflict_saves_nothing_and_keeps_the_edit(
    tmp_path: Path, sessions_dir: Path, edits: list[Edit]
) -> None:
    session = seeded(sessions_dir)
    edits.append(Edit(tmp_path, sessions_dir, CHANGE_LAST))
    assert JSONLSession("c", sessions_dir).pop_item_sync() == ITEMS[-1]  # e.g. an agent rewinding
    after_pop = session.path.read_bytes()
    code, err = edits[0].finish()
    assert code == 1
    assert "was changed while you edited" in err and "your edit is kept in " in err
    kept = Path(err.split("your edit is kept in ")[1].split()[0])
    assert kept.parent == sessions_dir and kept.name.startswith(".#c.jsonl.kept-")
    assert session.path.read_bytes() == after_pop
    assert kept.read_text().endswith('"Edited"}\n') and not edits[0].copy.exists()
    # `check --fix` must not remove the copy that `edit` has just said it kept.
    for args in (["check"], ["check", "--fix"], ["check", "c"]):
        check = run(sessions_dir, *args)
        assert check.code == 1 and f"{kept}: an edit kept after a conflict" in check.out, args
    assert kept.exists()
    assert [info.session_id for info in SessionDirectory(sessions_dir).list()] == ["c"]


def test_an_edit_that_changes_nothing_does_not_say_saved(
    tmp_path: Path, sessions_dir: Path, edits: list[Edit]
) -> None:
    session = seeded(sessions_dir)
    inode = session.path.stat().st_ino
    edits.append(Edit(tmp_path, sessions_dir, ""))
    assert edits[0].finish() == (0, "c: no change; session left unchanged\n")
    assert session.path.stat().st_ino == inode and session.get_items_sync() == ITEMS


DROP_OUTPUT = (
    "kept = [line for line in path.read_text().splitlines() if 'call_output' not in line]\n"
    "path.write_text(''.join(line + '\\n' for line in kept))\n"
)


@pytest.mark.parametrize(("answers", "saved"), [("y\n", True), ("", False)])
def test_an_edit_leaving_a_tool_call_without_output_warns_before_saving(
    tmp_path: Path, sessions_dir: Path, edits: list[Edit], answers: str, saved: bool
) -> None:
    session = seeded(sessions_dir)
    before = session.path.read_bytes()
    edits.append(Edit(tmp_path, sessions_dir, DROP_OUTPUT, answers))
    code, err = edits[0].finish()
    assert err.startswith(
        "jsonl-session: warning: function_call 'call_1' (lookup) has no function_call_output"
        " (the model API rejects such a history)\nsave anyway? [y/N] "
    )
    if saved:
        assert code == 0 and err.endswith("c: saved (4 -> 3 items)\n")
        assert session.get_items_sync() == [item for item in ITEMS if item is not OUTPUT]
    else:
        assert code == 1 and err.endswith("edit abandoned; session left unchanged\n")
        assert session.path.read_bytes() == before


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_edit_leaves_no_copy_in_the_temp_folder(
    tmp_path: Path, sessions_dir: Path, edits: list[Edit], how: signal.Signals
) -> None:
    session = seeded(sessions_dir)
    before = session.path.read_bytes()
    edits.append(Edit(tmp_path, sessions_dir, CHANGE_LAST))
    copy = edits[0].copy
    os.kill(edits[0].process.pid, how)
    edits[0].process.wait(timeout=60)
    assert list(edits[0].temp_folder.iterdir()) == []
    assert session.path.read_bytes() == before
    if how == signal.SIGTERM:
        assert not copy.exists()  # cleaned up on the way out
        return
    assert [
        json.loads(line) for line in copy.read_text().splitlines()
    ] == ITEMS  # only in the sessions folder
    assert run(sessions_dir, "check", "--fix").code == 0
    assert not copy.exists() and temp_files(sessions_dir) == []
