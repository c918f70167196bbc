"""One size formatter for every place a size is shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from jsonl_session import JSONLSession
from jsonl_session.render.file_io import read_views
from jsonl_session.render.markdown import markdown
from jsonl_session.render.sizes import human_size
from jsonl_session.render.views import ViewBuilder


@pytest.mark.parametrize(
    ("size", "shown"),
    [
        (0, "0 B"),
        (1, "1 B"),
        (1023, "1023 B"),
        (1024, "1.0 KB"),
        (4200, "4.1 KB"),
        (1024**2 - 1, "1024.0 KB"),  # rounds up in print, stays in KB: as `ls` always wrote it
        (1024**2, "1.0 MB"),
        (int(12.5 * 1024**2), "12.5 MB"),
        (1024**3, "1.0 GB"),
        (5 * 1024**4, "5120.0 GB"),  # GB is the largest unit
    ],
)
def test_human_size_writes_whole_bytes_then_one_decimal(size: int, shown: str) -> None:
    assert human_size(size) == shown


def test_the_viewer_header_and_ls_write_a_size_alike(sessions_dir: Path) -> None:
    session = JSONLSession("big", sessions_dir)
    session.add_items_sync([{"role": "user", "content": "x" * 3000}])
    found = read_views(session.path, lock_timeout=1)
    size = session.path.stat().st_size
    assert found.meta.endswith(f" · {human_size(size)}") and human_size(size).endswith(" KB")


def test_markdown_folded_blocks_give_their_size_in_bytes() -> None:
    output = "é" * 700  # 700 characters, 1400 bytes
    view = ViewBuilder().view({"type": "function_call_output", "call_id": "c", "output": output}, 1)
    assert "<details><summary>output · 1 line · 1.4 KB</summary>" in markdown("t", [view])
    short = ViewBuilder().view({"type": "function_call_output", "call_id": "c", "output": "ok"}, 2)
    assert "<summary>output · 1 line · 2 B</summary>" in markdown("t", [short])


def test_markdown_sizes_a_block_holding_a_lone_surrogate() -> None:
    # a line may spell one as \ud800, and reading accepts it: its size must not fail the page
    view = ViewBuilder().view({"type": "function_call_output", "call_id": "c", "output": "a\ud800"}, 1)
    assert "· 4 B</summary>" in markdown("t", [view])
