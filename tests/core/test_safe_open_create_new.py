"""``safe_open.create_new``: a session file created for a caller that has just listed its folder.

An import lists the destination folder once; a session of which it found neither the file nor
a sidecar is created without the six ``unlink`` calls a create makes for a deleted namesake's
sidecars (each takes the folder's lock). The file is still owner-only, never made through a
symlink, and never taken from someone who made it first.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from jsonl_session.core.safe_open import create_new


def test_creates_an_empty_owner_only_file_whatever_the_umask(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    before = os.umask(0)
    try:
        assert create_new(path, durable=True) is True
    finally:
        os.umask(before)
    held = os.lstat(path)
    assert stat.S_ISREG(held.st_mode) and stat.S_IMODE(held.st_mode) == 0o600 and held.st_size == 0


def test_a_file_already_there_is_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"n":1}\n')
    assert create_new(path, durable=True) is False
    assert path.read_bytes() == b'{"n":1}\n'


def test_a_symlink_in_its_place_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.jsonl"
    (tmp_path / "s.jsonl").symlink_to(target)
    assert create_new(tmp_path / "s.jsonl", durable=True) is False
    assert not target.exists()


def test_its_missing_folders_are_made_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "s.jsonl"
    assert create_new(path, durable=True) is True
    assert path.exists()
    assert stat.S_IMODE(os.stat(tmp_path / "a").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(tmp_path / "a" / "b").st_mode) == 0o700


def test_sidecars_are_not_looked_at(tmp_path: Path) -> None:
    """The caller's listing found none; one made since is a writer's of this very session."""
    (tmp_path / "s.jsonl.times").write_bytes(b"kept")
    assert create_new(tmp_path / "s.jsonl", durable=False) is True
    assert (tmp_path / "s.jsonl.times").read_bytes() == b"kept"
