"""``show --html`` / ``--markdown`` and the ``textconv`` git diff driver: the real command, real git."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import cli_env, run
from viewer_helpers import HAND_WRITTEN_BAD_LINES, conversation, write_session

from jsonl_session import JSONLSession

ROOT = Path(__file__).resolve().parents[2]


def page_data(page: str) -> dict[str, Any]:
    marker = '<script type="application/json" id="session-data">'
    start = page.index(marker) + len(marker)
    return json.loads(page[start : page.index("</script>", start)])  # type: ignore[no-any-return]


def test_show_html_writes_one_self_contained_page(sessions_dir: Path, tmp_path: Path) -> None:
    write_session(sessions_dir / "chat.jsonl", conversation())
    out = tmp_path / "chat.html"
    result = run(sessions_dir, "show", "chat", "--html", "-o", str(out))
    assert (result.code, result.err) == (0, f"chat: wrote {out} (9 items)\n")
    page = out.read_text(encoding="utf-8")
    data = page_data(page)
    assert data["title"] == "chat" and data["live"] is None
    items = data["items"]
    assert isinstance(items, list) and [item["number"] for item in items] == list(range(1, 10))
    assert "<link" not in page and "src=" not in page  # nothing to fetch: works offline


def test_show_html_and_markdown_to_stdout_with_the_newest_n(sessions_dir: Path) -> None:
    write_session(sessions_dir / "chat.jsonl", conversation())
    html = run(sessions_dir, "show", "chat", "--html", "-n", "2")
    assert html.code == 0 and [item["number"] for item in page_data(html.out)["items"]] == [8, 9]
    markdown = run(sessions_dir, "show", "chat", "--markdown")
    assert markdown.code == 0 and markdown.out.startswith("### chat\n")
    assert "**6 · handoff to billing\\_agent** call\\_2" in markdown.out


def test_show_html_shows_unreadable_lines_and_warns(sessions_dir: Path) -> None:
    write_session(sessions_dir / "bad.jsonl", conversation()[:2], extra_lines=HAND_WRITTEN_BAD_LINES)
    result = run(sessions_dir, "show", "bad", "--html")
    assert result.code == 0
    assert result.err == (
        f"jsonl-session: warning: {sessions_dir / 'bad.jsonl'}: 4 unreadable lines shown as they are "
        "(line 3, 4, 5, 6); `jsonl-session check` says why\n"
    )
    kinds = [item["kind"] for item in page_data(result.out)["items"]]
    assert kinds == ["system", "user", "invalid", "invalid", "invalid", "invalid"]


@pytest.mark.parametrize(
    "args",
    [["--html", "--markdown"], ["--html", "--json"], ["-o", "x.html"], ["--json", "-o", "x.html"]],
)
def test_show_document_usage_mistakes_exit_2(sessions_dir: Path, args: list[str]) -> None:
    write_session(sessions_dir / "chat.jsonl", conversation())
    result = run(sessions_dir, "show", "chat", *args)
    assert result.code == 2 and result.out == "" and "Traceback" not in result.err


def test_show_html_of_a_missing_session_is_one_line(sessions_dir: Path) -> None:
    sessions_dir.mkdir()  # the folder is there; the session is not
    result = run(sessions_dir, "show", "nope", "--html")
    assert (result.code, result.err) == (
        1,
        f"jsonl-session: error: nope: no such session in {sessions_dir}\n",
    )


def test_textconv_prints_the_transcript_even_of_a_broken_file(tmp_path: Path) -> None:
    path = write_session(tmp_path / "x.jsonl", conversation()[:1], extra_lines=[b"<<<<<<< HEAD"])
    result = run(None, "textconv", str(path))
    assert (result.code, result.err) == (0, "")
    assert result.out == (
        "   1  system\n      You are a travel agent.\n\n"
        "   2  unreadable line: not valid JSON\n      line:\n        <<<<<<< HEAD\n"
    )


# -- git ----------------------------------------------------------------------------------------


def git(repo: Path, *args: str) -> str:
    env = cli_env(GIT_CONFIG_NOSYSTEM="1", HOME=str(repo.parent), GIT_PAGER="cat", LC_ALL="C")
    completed = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True)
    return completed.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    # What the README tells users to run, with this interpreter instead of the console script.
    git(repo, "config", "diff.jsonl-session.textconv", f"{sys.executable} -m jsonl_session textconv")
    # The project's own attributes line: -merge kept, the diff driver added.
    attributes = (ROOT / ".gitattributes").read_text(encoding="utf-8")
    assert "sessions/*.jsonl text eol=lf -merge diff=jsonl-session" in attributes
    (repo / ".gitattributes").write_text(attributes, encoding="utf-8")
    return repo


def test_git_diff_and_log_show_transcript_changes(repo: Path) -> None:
    session = JSONLSession("chat", repo / "sessions")
    session.add_items_sync(conversation()[:2])
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    session.add_items_sync([{"role": "assistant", "content": "It is sunny.\nEnjoy Paris!"}])
    session.add_items_sync([{"role": "user", "content": "Thanks \x1b[31m!"}])

    diff = git(repo, "diff", "--", "sessions/chat.jsonl")  # not its .times sidecar
    added = [line for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert added == [
        "+",
        "+   3  assistant",
        "+      It is sunny.",
        "+      Enjoy Paris!",
        "+",
        "+   4  user",
        "+      Thanks \\x1b[31m!",
    ]
    assert '"role"' not in diff  # transcript text, not JSON
    raw = git(repo, "diff", "--no-textconv")
    assert '+{"role":"assistant","content":"It is sunny.\\nEnjoy Paris!"}' in raw

    git(repo, "commit", "-q", "-am", "reply")
    session.pop_item_sync()
    git(repo, "commit", "-q", "-am", "pop")
    log = git(repo, "log", "-p", "--format=commit %s")
    pop, reply = log.split("commit reply")
    assert "-   4  user\n-      Thanks \\x1b[31m!" in pop
    assert "+   3  assistant\n+      It is sunny.\n+      Enjoy Paris!" in reply
    assert git(repo, "check-attr", "merge", "diff", "--", "sessions/chat.jsonl").splitlines() == [
        "sessions/chat.jsonl: merge: unset",
        "sessions/chat.jsonl: diff: jsonl-session",
    ]


def test_one_unreadable_line_is_shown_as_it_is(sessions_dir: Path) -> None:
    write_session(sessions_dir / "bad.jsonl", conversation()[:2], extra_lines=HAND_WRITTEN_BAD_LINES[:1])
    result = run(sessions_dir, "show", "bad", "--markdown")
    assert result.code == 0
    assert f"{sessions_dir / 'bad.jsonl'}: 1 unreadable line shown as it is (line 3)" in result.err
