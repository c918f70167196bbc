"""``import --all`` makes each session's sidecars those the companion recorded, also where the
destination folder already had some.

The run lists the destination folder once and looks only for the sidecars that listing found
(a look at every kind of every session cost six system calls per session); these tests keep
what the looks were for: a sidecar the exported session did not have is removed, one it had
is restored, whether it sat beside a session file or alone (left by an earlier session of
that id), and a symlink where a sidecar goes is removed, never followed.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from cli_helpers import flush_redis

from jsonl_session import JSONLSession, SessionDirectory
from jsonl_session.transfer.all_sessions import export_all, import_all

pytestmark = pytest.mark.sdk
pytest.importorskip("agents", reason="the Agents SDK (extra 'agents') is not installed")


def exported(tmp_path: Path, redis_url: str) -> Path:
    """Sessions ``kept`` (with a ``.lineage``) and ``plain`` (without), exported to Redis."""
    flush_redis(redis_url)
    folder = tmp_path / "sessions"
    JSONLSession("kept", folder, durable=False).add_items_sync([{"role": "user", "content": "hi"}])
    JSONLSession("plain", folder, durable=False).add_items_sync([{"role": "user", "content": "yo"}])
    (folder / "kept.jsonl.lineage").write_bytes(b'{"parent":"x"}\n')
    outcomes = asyncio.run(export_all(SessionDirectory(folder), redis_url))
    assert {o.status for o in outcomes} == {"copied"}
    return folder


def test_sidecars_the_session_did_not_have_are_removed_and_its_own_restored(
    tmp_path: Path, redis_url: str
) -> None:
    folder = exported(tmp_path, redis_url)
    back = tmp_path / "back"
    back.mkdir()
    (back / "plain.jsonl.usage").write_bytes(b"left by an earlier session plain\n")  # alone
    JSONLSession("kept", back, durable=False).add_items_sync([{"role": "user", "content": "hi"}])
    (back / "kept.jsonl.usage").write_bytes(b"not the exported session's\n")  # beside the file
    outcomes = asyncio.run(import_all(redis_url, SessionDirectory(back), replace=True))
    assert {o.session_id: o.status for o in outcomes} == {"kept": "skipped", "plain": "copied"}
    assert not (back / "plain.jsonl.usage").exists()
    assert (back / "kept.jsonl.lineage").read_bytes() == (folder / "kept.jsonl.lineage").read_bytes()
    assert (back / "plain.jsonl").read_bytes() == (folder / "plain.jsonl").read_bytes()


def test_a_symlink_where_a_sidecar_goes_is_removed_never_followed(tmp_path: Path, redis_url: str) -> None:
    exported(tmp_path, redis_url)
    back = tmp_path / "back"
    back.mkdir()
    target = tmp_path / "elsewhere"
    target.write_bytes(b"not to be touched\n")
    (back / "plain.jsonl.usage").symlink_to(target)
    outcomes = asyncio.run(import_all(redis_url, SessionDirectory(back)))
    assert {o.session_id: o.status for o in outcomes} == {"kept": "copied", "plain": "copied"}
    assert target.read_bytes() == b"not to be touched\n"
    assert not (back / "plain.jsonl.usage").is_symlink()


def test_a_session_exported_without_times_comes_back_without_times(tmp_path: Path, redis_url: str) -> None:
    # the import's write of the items stamps a new .times; the exported session had none, so the
    # items must not come back dated to the import
    flush_redis(redis_url)
    folder = tmp_path / "sessions"
    JSONLSession("untimed", folder, timestamps=False).add_items_sync([{"role": "user", "content": "hi"}])
    assert not (folder / "untimed.jsonl.times").exists()
    asyncio.run(export_all(SessionDirectory(folder), redis_url))
    back = tmp_path / "back"
    back.mkdir()
    outcomes = asyncio.run(import_all(redis_url, SessionDirectory(back)))
    assert [o.status for o in outcomes] == ["copied"]
    assert (back / "untimed.jsonl").read_bytes() == (folder / "untimed.jsonl").read_bytes()
    assert not (back / "untimed.jsonl.times").exists()


@pytest.mark.parametrize("mode", [0o640, 0o600, 0o400])
def test_a_times_sidecar_made_anew_gets_its_recorded_mode_whatever_the_umask(
    tmp_path: Path, mode: int
) -> None:
    """The companion's ``.times`` is created with its recorded mode (no ``fchmod`` after, a
    journaled change that cost the import 8 % against the SDK's copy); where the umask takes
    bits away, they are put back."""
    import os
    import stat

    from jsonl_session.core.names import TIMES
    from jsonl_session.transfer.all_sessions import import_items
    from jsonl_session.transfer.companion import FILE, Entry

    record = b"0000000000001 00000000\n"
    metadata = {FILE + TIMES: Entry(record, mode, 1_000_000_000)}
    before = os.umask(0o077)
    try:
        outcome = asyncio.run(import_items(JSONLSession("s", tmp_path), [{"n": 1}], metadata, existed=False))
    finally:
        os.umask(before)
    assert outcome.status == "copied"
    times = tmp_path / ("s.jsonl" + TIMES)
    assert stat.S_IMODE(times.stat().st_mode) == mode
    assert times.read_bytes() == record and times.stat().st_mtime_ns == 1_000_000_000
