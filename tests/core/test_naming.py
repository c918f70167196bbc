"""Session ids become file names that never leave the directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jsonl_session import InvalidSessionId, JSONLSession, SessionDirectory
from jsonl_session.core.names import filename_for, id_for


@pytest.mark.parametrize("session_id", ["convo_123", "a.b-c_D", "2026-12-02", "x" * 200])
def test_plain_ids_are_the_file_name(session_id: str) -> None:
    assert filename_for(session_id) == session_id + ".jsonl"
    assert id_for(session_id + ".jsonl") == session_id


@pytest.mark.parametrize(
    "session_id",
    [
        "../x",
        "a/b",
        "/etc/passwd",
        "nul\x00byte",
        ".",
        "..",
        "...",
        "a b",
        "üñí",
        "%2F",
        "C:\\x",
        "\u2024\u2024/x",
        "－－／x",
    ],
)
def test_hostile_ids_stay_inside_the_directory(session_id: str, tmp_path: Path) -> None:
    directory = tmp_path / "sessions"
    session = JSONLSession(session_id, directory)
    assert session.path.parent == directory
    assert "/" not in session.path.name and "\x00" not in session.path.name
    session.add_items_sync([{"id": session_id}])
    assert [p.name for p in tmp_path.iterdir()] == ["sessions"]
    assert sorted(directory.iterdir()) == [session.path, session.path.with_name(session.path.name + ".times")]
    assert SessionDirectory(directory).ids() == [session_id]
    assert JSONLSession(session_id, directory).get_items_sync() == [{"id": session_id}]


@pytest.mark.parametrize("session_id", ["", "x" * 201, "\ud800", 42, None])
def test_unusable_ids_are_refused(session_id: object) -> None:
    with pytest.raises(InvalidSessionId):
        filename_for(session_id)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        JSONLSession(session_id)  # type: ignore[arg-type]


@given(st.text(min_size=1, max_size=60))
def test_encoding_is_reversible_and_safe(session_id: str) -> None:
    try:
        name = filename_for(session_id)
    except InvalidSessionId:
        return  # lone surrogates or too long
    assert id_for(name) == session_id
    assert os.sep not in name and "\x00" not in name and name not in (".", "..")
    assert name.endswith(".jsonl") and len(name.encode()) <= 255


@pytest.mark.parametrize(
    "name", ["notes.txt", ".jsonl", "x.jsonl.torn", ".#x.jsonl", "a%2.jsonl", "a%ZZ.jsonl", "%61.jsonl"]
)
def test_files_that_are_not_sessions_are_ignored(name: str) -> None:
    assert id_for(name) is None
