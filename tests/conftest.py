"""Fixtures shared by the whole suite. Area-specific helpers live next to their tests."""

from __future__ import annotations

import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from jsonl_session import JSONLSession


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C tests need SIGINT to be Ctrl-C, whoever started the run.

    A background job of a non-interactive shell (and some CI runners) starts with SIGINT
    ignored; Python then installs no KeyboardInterrupt handler, and children inherit the
    ignore, so every test that presses Ctrl-C on a child hung until its timeout. A caught
    signal is reset to the default in a child at exec, so this restores them too.
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


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
