"""Load: 8 writer processes, 2 readers and a live watcher on one session; 1,000 sessions in a folder.

A smaller load than ``stress/load.py`` (8 x 2,000 durable appends), with ``durable=False``
for speed. Throughput is printed, never asserted (the machine is shared and noisy).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from . import loadkit


@pytest.mark.timeout(120)
def test_8_writers_with_readers_and_a_watcher_lose_and_reorder_nothing(tmp_path: Path) -> None:
    report = loadkit.one_session(tmp_path, writers=8, appends=250, readers=2, watch=True)
    assert report.reads > 0 and report.watch_changes
    print(f"\n{report.writers} x {report.appends} appends: {report.appends_per_second:,.0f}/s")


@pytest.mark.timeout(120)
def test_1000_sessions_in_one_folder_are_all_listed_and_read_back(tmp_path: Path) -> None:
    report = loadkit.many_sessions(tmp_path / "sessions", sessions=1000)
    print(f"\n{report}")
