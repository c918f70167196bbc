"""Fork lineage: recorded by fork, stable bytes, shown by ls --tree, checked, carried by rm and edit."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import orjson
from cli_helpers import cli_env, run

from jsonl_session import JSONLSession, SessionDirectory
from jsonl_session.history.lineage import prefix_hash
from jsonl_session.tools.check import check_file

CONVERSATION = [
    {"role": "user", "content": "Plan a trip to Oslo"},
    {"role": "assistant", "content": "Sure. When?"},
    {"role": "user", "content": "In May"},
    {"role": "assistant", "content": "May is lovely."},
]


def make(directory: Path, session_id: str = "trip") -> JSONLSession:
    session = JSONLSession(session_id, directory)
    session.add_items_sync(CONVERSATION)
    return session


def test_fork_records_source_count_hash_and_time_as_stable_bytes(sessions_dir: Path) -> None:
    make(sessions_dir)
    fork = SessionDirectory(sessions_dir).fork("trip", "trip-b", at=2)
    lineage_file = sessions_dir / "trip-b.jsonl.lineage"
    data = lineage_file.read_bytes()
    record = json.loads(data)
    assert list(record) == sorted(record) and data.endswith(b"}\n") and not data.endswith(b"\n\n")
    assert record["source"] == "trip" and record["items"] == 2
    assert record["prefix_sha256"] == prefix_hash(CONVERSATION[:2])
    assert record["forked_at"].endswith("Z")
    assert fork.lineage is not None and fork.lineage.source == "trip"
    assert stat.S_IMODE(lineage_file.stat().st_mode) == 0o600
    assert [path.name for path in sessions_dir.iterdir() if path.name.startswith(".")] == []  # no temp left
    assert fork.path.read_bytes() == b"".join(orjson.dumps(item) + b"\n" for item in CONVERSATION[:2])


def test_a_fork_onto_an_existing_session_writes_no_lineage(sessions_dir: Path) -> None:
    make(sessions_dir)
    make(sessions_dir, "other")
    store = SessionDirectory(sessions_dir)
    try:
        store.fork("trip", "other")
    except FileExistsError:
        pass
    else:
        raise AssertionError("fork overwrote a session")
    assert not (sessions_dir / "other.jsonl.lineage").exists()
    assert store.open("other").get_items_sync() == CONVERSATION


def test_check_reports_a_fork_whose_source_diverged(sessions_dir: Path) -> None:
    source = make(sessions_dir)
    store = SessionDirectory(sessions_dir)
    store.fork("trip", "trip-b", at=2)
    fork_path = sessions_dir / "trip-b.jsonl"
    assert check_file(fork_path) == []
    source.add_items_sync([{"role": "user", "content": "And June?"}])  # growing is not diverging
    assert check_file(fork_path) == []

    with source.rewrite() as draft:
        draft.items[1] = {"role": "assistant", "content": "Sure. Which month?"}
    problems = check_file(fork_path)
    lineage = store.open("trip-b").lineage
    assert lineage is not None
    expected = (
        f"forked from 'trip' at 2 items ({lineage.forked_at}); 'trip' has changed within those items since"
    )
    assert [str(problem) for problem in problems] == [f"{fork_path}: {expected}"]
    result = run(sessions_dir, "check", "trip-b")
    assert result.code == 1 and "has changed within those items" in result.out

    source.rewind_sync(2)
    source.pop_item_sync()
    assert "'trip' now has 1 items" in str(check_file(fork_path)[0])
    store.delete("trip")
    assert "'trip' no longer exists" in str(check_file(fork_path)[0])


def test_a_hand_broken_lineage_file_is_named_by_check(sessions_dir: Path) -> None:
    make(sessions_dir)
    SessionDirectory(sessions_dir).fork("trip", "trip-b")
    lineage_file = sessions_dir / "trip-b.jsonl.lineage"
    lineage_file.write_text('{"source": "trip"')
    problems = check_file(sessions_dir / "trip-b.jsonl")
    assert len(problems) == 1 and problems[0].path == lineage_file and "not valid JSON" in problems[0].reason


def test_ls_tree_and_marks_show_lineage(sessions_dir: Path) -> None:
    make(sessions_dir)
    make(sessions_dir, "solo")
    store = SessionDirectory(sessions_dir)
    store.fork("trip", "trip-b", at=2)
    store.fork("trip", "trip-a")
    store.fork("trip-b", "trip-b2", at_turn=1)
    tree = run(sessions_dir, "ls", "--tree")
    assert tree.code == 0, tree.err
    assert tree.out.splitlines() == [
        "solo  (4 items)",
        "trip  (4 items)",
        "├── trip-a  (4 items)",
        "└── trip-b  (2 items)",
        "    └── trip-b2  (2 items)",
    ]
    listing = run(sessions_dir, "ls")
    heading = listing.out.splitlines()[0].split()
    assert heading == ["ID", "ITEMS", "SIZE", "LAST", "ACTIVITY", "(UTC)", "TITLE", "NOTE"]
    assert any(
        row.startswith("trip-b2 ") and row.endswith("fork of trip-b") for row in listing.out.splitlines()
    )
    rows = {row["id"]: row for row in map(json.loads, run(sessions_dir, "ls", "--json").out.splitlines())}
    assert rows["trip-b2"]["forked_from"] == "trip-b" and rows["solo"]["forked_from"] is None
    assert {info.session_id: info.forked_from for info in store.list()}["trip-a"] == "trip"


def test_rm_deletes_the_metadata_first_and_keeps_the_torn_sidecar(sessions_dir: Path) -> None:
    make(sessions_dir)
    store = SessionDirectory(sessions_dir)
    fork = store.fork("trip", "trip-b")
    for kind in (".usage", ".run", ".torn"):
        (sessions_dir / f"trip-b.jsonl{kind}").write_text("{}\n")
    result = run(sessions_dir, "rm", "trip-b", "--yes")
    assert result.code == 0, result.err
    assert sorted(os.listdir(sessions_dir)) == ["trip-b.jsonl.torn", "trip.jsonl", "trip.jsonl.times"]
    assert fork.lineage is None


def test_edit_keeps_the_lineage(sessions_dir: Path, tmp_path: Path) -> None:
    make(sessions_dir)
    SessionDirectory(sessions_dir).fork("trip", "trip-b")
    before = (sessions_dir / "trip-b.jsonl.lineage").read_bytes()
    editor = tmp_path / "editor.py"
    editor.write_text(
        "import sys\np = sys.argv[1]\nlines = open(p).read().splitlines()\n"
        "open(p, 'w').write(lines[0] + '\\n')\n"
    )
    result = run(sessions_dir, "edit", "trip-b", env=cli_env(EDITOR=f"{sys.executable} {editor}"))
    assert result.code == 0, result.err
    assert JSONLSession("trip-b", sessions_dir).get_items_sync() == CONVERSATION[:1]
    assert (sessions_dir / "trip-b.jsonl.lineage").read_bytes() == before
    assert check_file(sessions_dir / "trip-b.jsonl") == []  # editing the fork is not the source diverging


def test_sidecars_are_not_sessions(sessions_dir: Path) -> None:
    make(sessions_dir)
    SessionDirectory(sessions_dir).fork("trip", "trip-b")
    assert SessionDirectory(sessions_dir).ids() == ["trip", "trip-b"]
    assert sorted(path.name for path in sessions_dir.glob("*.jsonl")) == ["trip-b.jsonl", "trip.jsonl"]


def test_export_takes_the_lineage_along(sessions_dir: Path, tmp_path: Path) -> None:
    import pytest

    pytest.importorskip("agents")
    make(sessions_dir)
    SessionDirectory(sessions_dir).fork("trip", "trip-b")
    url = f"sqlite:///{tmp_path / 'chats.db'}"
    exported = run(sessions_dir, "export", "trip-b", "--to", url)
    assert exported.code == 0, exported.err
    assert "stay" not in exported.err  # the lineage travels in the companion table (transfer.companion)
    back = run(sessions_dir, "import", url, "--id", "trip-b", "--as", "trip-c")
    assert back.code == 0, back.err
    lineage = (sessions_dir / "trip-b.jsonl.lineage").read_bytes()
    assert (sessions_dir / "trip-c.jsonl.lineage").read_bytes() == lineage
