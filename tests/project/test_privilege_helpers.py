"""The helpers that run tests as ``nobody`` skip, with a reason, when ``nobody`` cannot read the code.

From a clone in a private folder (``/root/src``, 0700) a child that dropped to ``nobody``
failed with ``ModuleNotFoundError`` at its first import of a module not loaded yet:
a failure that says nothing about the library.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import privilege_helpers
import pytest
from privilege_helpers import call_as_nobody, needs_root, run_as_nobody


@pytest.fixture
def private_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (private / "module.py").write_text("")
    monkeypatch.setattr(privilege_helpers, "source_folders", lambda: [private])
    privilege_helpers.nobody_reads_the_source.cache_clear()
    yield private
    privilege_helpers.nobody_reads_the_source.cache_clear()


@needs_root
def test_a_call_as_nobody_skips_when_nobody_cannot_read_the_source(private_source: Path) -> None:
    with pytest.raises(pytest.skip.Exception, match="cannot read") as skipped:
        call_as_nobody(os.getpid)
    assert str(private_source) in str(skipped.value)


@needs_root
def test_the_cli_as_nobody_skips_when_nobody_cannot_read_the_source(private_source: Path) -> None:
    with pytest.raises(pytest.skip.Exception, match="cannot read"):
        run_as_nobody(private_source, "ls")


@needs_root
def test_the_source_of_this_run_is_checked_for_real() -> None:
    privilege_helpers.nobody_reads_the_source.cache_clear()
    folders = privilege_helpers.source_folders()
    assert Path(privilege_helpers.__file__).parent.parent / "jsonl_session" in folders
    assert isinstance(privilege_helpers.nobody_reads_the_source(), str | type(None))
