"""``jsonl-session meta``, ``ls --tag/--user/--json`` and ``show``'s header line.

Real processes on real files: what a user types and sees, exit codes included.
"""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import run

from jsonl_session import JSONLSession

QUESTION = "Why did my refund for order A-1042 not arrive yet? It has been two weeks now."


def folder_with(tmp_path: Path, *ids: str) -> Path:
    folder = tmp_path / "sessions"
    for session_id in ids:
        JSONLSession(session_id, folder).add_items_sync(
            [
                {"role": "user", "content": f"{QUESTION} ({session_id})"},
                {"role": "assistant", "content": "Checking."},
            ]
        )
    return folder


def test_meta_sets_and_prints_title_tags_owner_and_keys(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, "refund")
    done = run(
        folder,
        "meta", "refund", "--title", "Refund A-1042", "--tag", "billing", "--tag", "bug",
        "--owner", "user-42", "--set", "ticket=T-12", "--set", "note=a=b",
    )  # fmt: skip
    assert done.code == 0, done.err
    lines = done.out.splitlines()
    assert lines[:3] == ["title:   Refund A-1042", "tags:    billing, bug", "owner:   user-42"]
    assert lines[3:5] == ["extra:   note = a=b", "extra:   ticket = T-12"]
    assert lines[5].startswith("updated: 20")
    changed = run(folder, "meta", "refund", "--untag", "bug", "--unset", "note", "--no-title", "--json")
    assert changed.code == 0, changed.err
    record = json.loads(changed.out)
    assert record["id"] == "refund" and record["title"] is None
    assert record["default_title"] == QUESTION[:59] + "…"
    assert (record["tags"], record["owner"], record["extra"]) == (["billing"], "user-42", {"ticket": "T-12"})
    shown = run(folder, "meta", "refund")  # no option: only shows
    assert shown.code == 0 and "(none set: the first user message)" in shown.out.splitlines()[0]


def test_meta_refuses_bad_values_with_a_usage_error_and_unknown_sessions(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, "refund")
    bad = run(folder, "meta", "refund", "--tag", "two\nlines")
    assert bad.code == 2 and "one line" in bad.err and len(bad.err.splitlines()) == 1
    assert run(folder, "meta", "refund", "--set", "novalue").code == 2
    assert run(folder, "meta", "refund", "--title", "a", "--no-title").code == 2
    missing = run(folder, "meta", "nope", "--title", "x")
    assert missing.code == 1 and "no such session" in missing.err
    assert not (folder / "nope.jsonl").exists() and not (folder / "refund.jsonl.meta").exists()


def test_ls_filters_by_tag_and_user_and_shows_the_columns(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, "a", "b", "c")
    assert run(folder, "meta", "a", "--tag", "bug", "--owner", "ana", "--title", "Crash on start").code == 0
    assert run(folder, "meta", "b", "--tag", "bug", "--tag", "ios", "--owner", "ben").code == 0
    listed = run(folder, "ls")
    assert listed.code == 0, listed.err
    heading, *rows = listed.out.splitlines()
    assert heading.split()[-3:] == ["OWNER", "TAGS", "TITLE"]
    row = {line.split()[0]: line for line in rows}
    assert row["a"].endswith("ana    bug      Crash on start")
    # no title set: the first user message, shortened to the column and quoted
    assert row["c"].endswith(f'-      -        "{QUESTION[:37]}…"')
    tagged = run(folder, "ls", "--tag", "bug", "--json")
    records = [json.loads(line) for line in tagged.out.splitlines()]
    assert sorted(record["id"] for record in records) == ["a", "b"]
    by_id = {record["id"]: record for record in records}
    assert (by_id["a"]["title"], by_id["a"]["tags"], by_id["a"]["owner"]) == (
        "Crash on start",
        ["bug"],
        "ana",
    )
    assert by_id["b"]["title"] is None and by_id["b"]["tags"] == ["bug", "ios"]
    assert (by_id["a"]["default_title"], by_id["b"]["default_title"]) == (None, QUESTION[:59] + "…")
    assert [line.split()[0] for line in run(folder, "ls", "--user", "ben").out.splitlines()[1:]] == ["b"]
    assert [
        line.split()[0] for line in run(folder, "ls", "--tag", "bug", "--tag", "ios").out.splitlines()[1:]
    ] == ["b"]
    nobody = run(folder, "ls", "--user", "zoe")
    assert nobody.code == 1 and nobody.out == "" and "no session match" in nobody.err


def test_ls_without_metadata_shows_the_default_title_only(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, "a")
    heading = run(folder, "ls").out.splitlines()[0]
    assert heading.split()[-1] == "TITLE" and "OWNER" not in heading and "TAGS" not in heading
    record = json.loads(run(folder, "ls", "--json").out)
    assert (record["title"], record["tags"], record["owner"]) == (None, [], None)
    # the one definition: what get_metadata (and the viewer) shows
    assert record["default_title"] == JSONLSession("a", folder).get_metadata_sync().default_title


def test_show_starts_with_a_header_line_only_for_a_session_with_metadata(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, "plain", "tagged")
    assert run(folder, "meta", "tagged", "--tag", "billing", "--owner", "user-42").code == 0
    assert run(folder, "show", "plain").out.splitlines()[0].split()[0] == "1"
    first = run(folder, "show", "tagged").out.splitlines()[0]
    assert first == f"title: {QUESTION[:59]}… · tags: billing · owner: user-42"
    assert run(folder, "meta", "tagged", "--title", "\u202eevil").code == 0
    assert "\\u202e" in run(folder, "show", "tagged").out.splitlines()[0]  # printable, as items are
    assert json.loads(run(folder, "show", "tagged", "--json").out.splitlines()[0])["role"] == "user"


def test_rm_takes_the_meta_file_with_the_session(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, "gone")
    assert run(folder, "meta", "gone", "--title", "bye").code == 0
    assert (folder / "gone.jsonl.meta").exists()
    assert run(folder, "rm", "gone", "--yes").code == 0
    assert not (folder / "gone.jsonl.meta").exists()


def test_a_hand_broken_meta_file_is_named_and_the_transcript_still_shown(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, "broken")
    (folder / "broken.jsonl.meta").write_text("{not json")
    shown = run(folder, "show", "broken")
    assert shown.code == 0 and "broken.jsonl.meta" in shown.err and "warning" in shown.err
    assert shown.out.splitlines()[0].split()[0] == "1"
    page = run(folder, "show", "broken", "--html", "-o", str(tmp_path / "b.html"))
    assert page.code == 0, page.err
    assert "unreadable" not in page.err and "broken.jsonl.meta" in (tmp_path / "b.html").read_text()
    assert run(folder, "meta", "broken").code == 1  # meta itself says what is wrong
