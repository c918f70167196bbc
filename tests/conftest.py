"""Fixtures shared by the whole suite. Area-specific helpers live next to their tests."""

from __future__ import annotations

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
