"""``jsonl-session prune`` and ``restore``: what they print, what they change, their exit codes."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from cli_helpers import run

from jsonl_session import JSONLSession

USAGE = b'{"input_tokens":100,"output_tokens":20,"requests":1,"total_tokens":120,"turn":1}\n'


def old_session(folder: Path, session_id: str, days: float) -> dict[str, bytes]:
    # no .times sidecar: the test ages the files it lists
    session = JSONLSession(session_id, folder, timestamps=False)
    session.add_items_sync([{"role": "user", "content": f"hi from {session_id}"}])
    (folder / f"{session_id}.jsonl.usage").write_bytes(USAGE)
    when = time.time() - days * 86400
    files = {}
    for name in (f"{session_id}.jsonl", f"{session_id}.jsonl.usage"):
        os.utime(folder / name, (when, when))
        files[name] = (folder / name).read_bytes()
    return files


def test_prune_shows_what_it_would_do_then_archives_with_yes_and_restore_brings_it_back(
    sessions_dir: Path,
) -> None:
    original = old_session(sessions_dir, "old", days=40)
    old_session(sessions_dir, "new", days=1)

    shown = run(sessions_dir, "prune", "--older-than", "30d")
    assert shown.code == 0
    assert shown.out.startswith("would archive old  (last written ") and "2 files" in shown.out
    assert "new" not in shown.out
    assert shown.err == "1 session not written for 30d; run again with --yes to archive it\n"
    assert (sessions_dir / "old.jsonl").exists()

    done = run(sessions_dir, "prune", "--older-than", "30d", "--yes")
    assert done.code == 0 and done.out.startswith("archived old -> ")
    assert not (sessions_dir / "old.jsonl").exists()
    assert [json.loads(line)["id"] for line in run(sessions_dir, "ls", "--json").out.splitlines()] == ["new"]

    listed = run(sessions_dir, "restore", "--list", "--json")
    (entry,) = [json.loads(line) for line in listed.out.splitlines()]
    assert (entry["id"], entry["items"], entry["usage"]["total_tokens"]) == ("old", 1, 120)

    stats = run(sessions_dir, "stats", "--json")
    tokens = json.loads(stats.out)["tokens"]
    assert tokens["total"]["total_tokens"] == 240 and set(tokens["archived"]) == {"old"}
    assert "old (archived)" in run(sessions_dir, "stats").out

    restored = run(sessions_dir, "restore", "old")
    assert restored.code == 0 and restored.err.startswith("old: restored 2 files from ")
    assert {name: (sessions_dir / name).read_bytes() for name in original} == original


def test_usage_errors_exit_2_and_a_missing_archive_exits_1(sessions_dir: Path) -> None:
    sessions_dir.mkdir()
    bad = run(sessions_dir, "prune", "--older-than", "30")
    assert bad.code == 2 and "not a duration: '30'" in bad.err
    assert run(sessions_dir, "restore").code == 2
    missing = run(sessions_dir, "restore", "nope")
    assert missing.code == 1 and "no archive of this session" in missing.err
