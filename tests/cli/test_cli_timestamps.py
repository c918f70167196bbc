"""``show`` prints when each item was added, ``ls`` when each session was last active."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

from cli_helpers import run

from jsonl_session import JSONLSession


def test_show_has_a_time_column_blank_for_items_without_a_time(tmp_path: Path) -> None:
    session = JSONLSession("c", tmp_path)
    session.add_items_sync([{"role": "user", "content": "Hello"}])
    with session.path.open("ab") as hand:
        hand.write(b'{"role": "assistant", "content": "by hand"}\n')
    [(_, added), (_, unknown)] = session.get_items_with_times_sync()
    assert added is not None and unknown is None
    shown = run(tmp_path, "show", "c")
    assert shown.code == 0, shown.err
    assert shown.out.splitlines() == [
        f"   1  {added.strftime('%Y-%m-%d %H:%M:%S')}  user: Hello",
        f"   2  {'':19}  assistant: by hand",
    ]
    newest = run(tmp_path, "show", "c", "-n", "1")  # no time among the items shown: no column
    assert newest.out.splitlines() == ["   2  assistant: by hand"]
    as_json = run(tmp_path, "show", "c", "--json")  # items only, exactly as stored
    assert [json.loads(line) for line in as_json.out.splitlines()] == session.get_items_sync()


def test_show_without_any_time_prints_as_before(tmp_path: Path) -> None:
    JSONLSession("c", tmp_path, timestamps=False).add_items_sync([{"role": "user", "content": "Hello"}])
    assert run(tmp_path, "show", "c").out.splitlines() == ["   1  user: Hello"]


def test_ls_shows_the_newest_items_time_else_the_files(tmp_path: Path) -> None:
    timed = JSONLSession("timed", tmp_path)
    timed.add_items_sync([{"role": "user", "content": "Hi"}])
    [(_, added)] = timed.get_items_with_times_sync()
    assert added is not None
    # an edit much later changes the file's time, not its items' times
    os.utime(timed.path, (time.time() + 86_400, time.time() + 86_400))
    untimed = JSONLSession("untimed", tmp_path, timestamps=False)
    untimed.add_items_sync([{"role": "user", "content": "Hi"}])
    os.utime(untimed.path, (1_000_000_000, 1_000_000_000))
    listing = run(tmp_path, "ls")
    assert listing.code == 0, listing.err
    rows = listing.out.splitlines()
    assert rows[0].split() == ["ID", "ITEMS", "SIZE", "LAST", "ACTIVITY", "(UTC)", "TITLE"]
    assert re.split(r"\s{2,}", rows[1])[::3] == ["timed", added.strftime("%Y-%m-%d %H:%M:%S")]
    assert re.split(r"\s{2,}", rows[2])[::3] == ["untimed", "2001-09-09 01:46:40"]
    records = [json.loads(line) for line in run(tmp_path, "ls", "--json").out.splitlines()]
    assert [row["id"] for row in records] == ["timed", "untimed"]  # most recently active first
    assert records[0]["last_activity"] == added.strftime("%Y-%m-%dT%H:%M:%S+00:00")
    assert records[0]["modified"] > records[0]["last_activity"]
    assert records[1]["last_activity"] == records[1]["modified"] == "2001-09-09T01:46:40+00:00"
