"""``SessionDirectory.session_path``: a session's file as a str, the same path ``open(id).path`` names."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jsonl_session import InvalidSessionId, SessionDirectory


@pytest.mark.parametrize("folder", ["sessions", ".", "", "./a/./b/", "//shared/x", "///root", "/tmp/s"])
@pytest.mark.parametrize("session_id", ["convo_123", "user/42", "émoji 🙂", ".hidden", "a.jsonl"])
def test_session_path_is_the_path_of_the_opened_session(folder: str, session_id: str) -> None:
    directory = SessionDirectory(folder)
    assert directory.session_path(session_id) == str(directory.open(session_id).path)


def test_session_path_names_the_file_the_folder_lists(sessions_dir: Path) -> None:
    directory = SessionDirectory(sessions_dir)
    for session_id in ("plain", "with/slash", "with space"):
        directory.open(session_id).add_items_sync([{"role": "user", "content": session_id}])
    paths = {session_id: directory.session_path(session_id) for session_id in directory.ids()}
    assert set(paths) == {"plain", "with/slash", "with space"}
    assert all(os.path.isfile(path) for path in paths.values())
    sessions = [name for name in os.listdir(sessions_dir) if not name.endswith(".times")]
    assert sorted(map(os.path.basename, paths.values())) == sorted(sessions)


def test_session_path_refuses_an_id_that_names_no_file() -> None:
    with pytest.raises(InvalidSessionId):
        SessionDirectory("sessions").session_path("")
