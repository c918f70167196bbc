"""Fixtures shared by the whole suite. Area-specific helpers live next to their tests."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from jsonl_session import JSONLSession


@pytest.fixture
def sessions_dir(tmp_path: Path) -> Path:
    """An empty folder for session files (not yet created: the first write creates it)."""
    return tmp_path / "sessions"


@pytest.fixture
def session(sessions_dir: Path) -> JSONLSession:
    """A fresh durable session in a temporary folder."""
    return JSONLSession("test", sessions_dir)


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A folder every user can enter (0755, ours); removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="jsonl-session-perm-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
