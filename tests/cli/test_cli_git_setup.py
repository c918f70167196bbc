"""``jsonl-session git-setup`` in a real git repository: merges that report, diffs that work anywhere.

Two branches that each add to a session conflict in the session and in its sidecars; git must
report every one of them and leave valid files (no conflict markers in any of them), and
``git diff`` must show a transcript with the virtual environment off ``PATH``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from cli_helpers import cli_env, run

from jsonl_session import JSONLSession
from jsonl_session.core.names import KINDS, TORN_SUFFIX, USAGE
from jsonl_session.tools.git_setup import gitattributes_lines


def git(repo: Path, *args: str, check: bool = True, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], check=False, capture_output=True, text=True, env=env or git_env(repo)
    )
    assert not check or done.returncode == 0, done
    return done.stdout + done.stderr


def git_env(repo: Path) -> dict[str, str]:
    """No user or system git config: only what git-setup writes counts."""
    return cli_env(
        HOME=str(repo.parent),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "sessions").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    return repo


def say(repo: Path, text: str) -> None:
    JSONLSession("chat", repo / "sessions").add_items_sync([{"role": "user", "content": text}])


def two_branches_add_to_one_session(repo: Path) -> None:
    """``first`` committed on main, then ``from alice`` on branch alice and ``from main`` on main."""
    say(repo, "first")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    git(repo, "checkout", "-q", "-b", "alice")
    say(repo, "from alice")
    git(repo, "commit", "-q", "-am", "alice")
    git(repo, "checkout", "-q", "main")
    say(repo, "from main")
    git(repo, "commit", "-q", "-am", "main")


def test_git_setup_writes_every_kind_once_and_a_driver_that_needs_no_path(repo: Path) -> None:
    sessions = repo / "sessions"
    first = run(sessions, "git-setup")
    assert first.code == 0 and ".gitattributes: added" in first.err and "textconv" in first.err, first
    attributes = (sessions / ".gitattributes").read_bytes()
    config = (repo / ".git" / "config").read_bytes()
    again = run(sessions, "git-setup")
    assert (again.code, again.err) == (0, f"{sessions}: git already set up; nothing changed\n")
    assert (sessions / ".gitattributes").read_bytes() == attributes
    assert (repo / ".git" / "config").read_bytes() == config

    def attribute(name: str, file: str) -> str:
        return git(repo, "check-attr", name, "--", f"sessions/{file}").rsplit(": ", 1)[1].strip()

    assert attribute("merge", "chat.jsonl") == "unset" and attribute("diff", "chat.jsonl") == "jsonl-session"
    for kind in KINDS:
        assert attribute("merge", "chat.jsonl" + kind) == ("union" if kind == USAGE else "unset"), kind
        assert attribute("merge", "chat.jsonl" + kind + TORN_SUFFIX) == "unset", kind
    assert attribute("merge", "chat.jsonl" + TORN_SUFFIX) == "unset"


def test_outside_a_repository_git_setup_says_so(tmp_path: Path) -> None:
    result = run(tmp_path, "git-setup", env=git_env(tmp_path))
    assert (
        result.code == 2
        and result.err.startswith("jsonl-session: error: git-setup: ")
        and "\n" not in (result.err[:-1])
    )
    assert not (tmp_path / ".gitattributes").exists()


def test_two_branches_adding_to_a_session_conflict_in_it_and_its_sidecars_without_markers(
    repo: Path,
) -> None:
    sessions = repo / "sessions"
    assert run(sessions, "git-setup").code == 0
    two_branches_add_to_one_session(repo)

    merged = git(repo, "merge", "alice", check=False)
    assert "CONFLICT" in merged
    conflicted = git(repo, "diff", "--name-only", "--diff-filter=U").split()
    assert conflicted == ["sessions/chat.jsonl", "sessions/chat.jsonl.times"]
    for path in sessions.iterdir():
        assert b"<<<<<<<" not in path.read_bytes(), path
    assert [item["content"] for item in JSONLSession("chat", sessions).get_items_sync()] == [
        "first",
        "from main",
    ]
    check = run(sessions, "check")
    assert check.code == 0, check


def test_git_diff_shows_a_transcript_without_the_venv_on_path(repo: Path) -> None:
    sessions = repo / "sessions"
    assert run(sessions, "git-setup").code == 0
    say(repo, "first")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    say(repo, "a new question")
    bare = git_env(repo) | {"PATH": "/usr/bin:/bin"}
    diff = git(repo, "diff", "--", "sessions/chat.jsonl", env=bare)
    assert "+   2  user" in diff and "+      a new question" in diff, diff


def test_the_workflows_page_shows_the_lines_git_setup_writes() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "workflows.md").read_text(encoding="utf-8")
    shown = page.split("$ cat sessions/.gitattributes\n", 1)[1].split("```", 1)[0].splitlines()
    assert shown == gitattributes_lines()


def test_without_git_setup_a_merge_leaves_markers_and_ls_says_it_needs_a_merge(repo: Path) -> None:
    sessions = repo / "sessions"
    two_branches_add_to_one_session(repo)
    assert "CONFLICT" in git(repo, "merge", "alice", check=False)
    assert b"\n=======\n" in (sessions / "chat.jsonl").read_bytes()  # git's text merge wrote markers

    listed = run(sessions, "ls")
    assert listed.code == 0, listed.err
    heading, row = listed.out.splitlines()
    assert heading.split()[-2:] == ["TITLE", "NOTE"]
    # the three items of both sides, not the three marker lines; the note says what to do
    assert row.split()[:2] == ["chat", "3"] and row.endswith('"first"  needs merge')
    (record,) = map(json.loads, run(sessions, "ls", "--json").out.splitlines())
    assert (record["items"], record["needs_merge"], record["default_title"]) == (3, True, "first")

    (sessions / "chat.jsonl").write_bytes(
        b"".join(
            line + b"\n" for line in (sessions / "chat.jsonl").read_bytes().splitlines() if line[:1] == b"{"
        )
    )  # resolved by hand: both sides kept
    (record,) = map(json.loads, run(sessions, "ls", "--json").out.splitlines())
    assert (record["items"], record["needs_merge"]) == (3, False)
    assert "NOTE" not in run(sessions, "ls").out
