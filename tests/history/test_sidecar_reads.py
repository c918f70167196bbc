"""Sidecars are input: bounded on read, and a bad one never hides its session.

``.meta`` has a 64 KiB limit (docs/metadata.md); a bigger one is refused after reading at most
one byte past it, named by ``check``, and ``ls``, ``SessionDirectory.list()`` and the ``serve``
index list the session without its metadata, with a warning naming the file. A malformed
``.meta`` is listed the same way. (Peak memory with a 300 MB ``.meta`` or ``.times`` is
measured per read path in tests/reliability/test_memory_bounds.py.)
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from cli_helpers import run

from jsonl_session import JSONLSession, SessionDirectory, SessionFileError
from jsonl_session.history.metadata import MAX_BYTES, meta_path, read_metadata

BIG = 300 * 1024 * 1024


def make(folder: Path, session_id: str = "s") -> JSONLSession:
    session = JSONLSession(session_id, folder)
    session.add_items_sync([{"role": "user", "content": "Where is my refund?"}])
    return session


def oversized(session: JSONLSession) -> Path:
    """A sparse 300 MB ``.meta``: a record's start, then a hole."""
    path = meta_path(session.path)
    with path.open("wb") as file:
        file.write(b'{"owner": "alice", "title": "')
        file.truncate(BIG)
    return path


def test_a_meta_over_its_limit_is_refused_on_read_and_a_meta_at_it_is_read(sessions_dir: Path) -> None:
    session = make(sessions_dir)
    path = meta_path(session.path)
    record = b'{"title": "' + b"x" * 100 + b'"}'
    path.write_bytes(record + b" " * (MAX_BYTES - len(record)))  # spaces: still one JSON object
    assert path.stat().st_size == MAX_BYTES
    assert read_metadata(session.path).title == "x" * 100
    path.write_bytes(path.read_bytes() + b" ")  # one byte over
    with pytest.raises(SessionFileError, match=f"over the {MAX_BYTES}-byte limit"):
        read_metadata(session.path)
    oversized(session)
    with pytest.raises(SessionFileError, match="s.jsonl.meta") as raised:
        read_metadata(session.path)
    assert f"{BIG} bytes" in str(raised.value)


@pytest.mark.parametrize("broken", ["oversized", "malformed", "not an object"])
def test_a_bad_meta_does_not_hide_its_session_from_the_listing(sessions_dir: Path, broken: str) -> None:
    make(sessions_dir, "good").set_metadata_sync(owner="bob", title="Fine")
    bad = make(sessions_dir, "bad")
    bad.set_metadata_sync(owner="alice")
    if broken == "oversized":
        oversized(bad)
    else:
        meta_path(bad.path).write_bytes(b"{not json" if broken == "malformed" else b"[]")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        listed = {info.session_id: info for info in SessionDirectory(sessions_dir).list()}
    assert sorted(listed) == ["bad", "good"]
    assert (listed["bad"].owner, listed["bad"].title, listed["good"].owner) == (None, None, "bob")
    [warned] = [str(w.message) for w in caught]
    assert "bad.jsonl.meta" in warned and warned.endswith("listed without its metadata")

    result = run(sessions_dir, "ls")
    assert [line.split()[0] for line in result.out.splitlines()[1:]] == ["bad", "good"]
    assert result.err.startswith("jsonl-session: warning: ") and "bad.jsonl.meta" in result.err
    as_json = run(sessions_dir, "ls", "--json")
    assert sorted(json.loads(line)["id"] for line in as_json.out.splitlines()) == ["bad", "good"]
    # filtered on metadata, it cannot match: left out, still named
    owned = run(sessions_dir, "ls", "--user", "alice")
    assert "bad" not in owned.out and "bad.jsonl.meta" in owned.err

    checked = run(sessions_dir, "check")
    assert checked.code == 1 and checked.out.startswith(f"{meta_path(bad.path)}: ")
    assert meta_path(bad.path).exists()  # never rewritten or removed


def test_the_serve_index_lists_a_session_whose_meta_is_bad(sessions_dir: Path, server_for: object) -> None:
    make(sessions_dir, "good")
    oversized(make(sessions_dir, "huge"))
    meta_path(make(sessions_dir, "broken").path).write_bytes(b"{not json")
    server = server_for(sessions_dir)  # type: ignore[operator]
    status, body = server.get("/api/sessions")
    assert status == 200
    assert sorted(row["id"] for row in json.loads(body)) == ["broken", "good", "huge"]


def test_a_big_paused_run_is_summarised_without_reading_its_state(sessions_dir: Path) -> None:
    # A run's state grows with its conversation: listings and check read only the summary before it.
    import tracemalloc

    from jsonl_session.core import sidecar_files
    from jsonl_session.history import paused_runs

    make(sessions_dir)
    envelope = {
        "held": 2,
        "pending": [{"tool": "refund", "call_id": "call_1"}],
        "saved_at": "2026-12-05T10:00:00Z",
        "state": {"original_input": "x" * (8 * 1024 * 1024)},
    }
    sidecar_files.write_json(sessions_dir / "s.jsonl.run", envelope, durable=False)
    tracemalloc.start()
    try:
        paused = JSONLSession("s", sessions_dir).paused_run()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert paused is not None and paused.held == 2 and paused.tools == ["refund"]
    assert peak < 2 * paused_runs.SUMMARY_BYTES  # the 8 MB state was not read
    assert run(sessions_dir, "check", "s").code == 0  # the call it waits on is not a problem


@pytest.mark.parametrize(
    ("kind", "content", "named"),
    [
        (".run", b'{"state": "' + b"x" * (2 * 1024 * 1024), "paused run not read: not a saved run"),
        (".run", b'{"pending": []}', "paused run not read: not a saved run"),
        (".usage", b'{"input_tokens": ' + b"9" * 100_000, "usage log not read: line 1 is longer than"),
    ],
    ids=["run-without-a-summary", "run-without-state", "usage-endless-line"],
)
def test_check_names_a_paused_run_or_usage_log_it_cannot_read(
    sessions_dir: Path, kind: str, content: bytes, named: str
) -> None:
    make(sessions_dir)
    (sessions_dir / f"s.jsonl{kind}").write_bytes(content)
    result = run(sessions_dir, "check", "s")
    assert result.code == 1
    assert f"s.jsonl{kind}: {named}" in result.out
    assert (sessions_dir / f"s.jsonl{kind}").read_bytes() == content  # never touched
