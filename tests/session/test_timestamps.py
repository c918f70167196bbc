"""When each item was added: recorded beside the items (``<file>.jsonl.times``), never in them.

Times are matched to items by each line's fingerprint (core/item_times.py), so pops, rewinds,
clears, rewrites, compaction, forks and hand edits keep the times of the items they keep.
"""

from __future__ import annotations

import asyncio
import time
import zlib
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest

from jsonl_session import JSONLSession, SessionDirectory
from jsonl_session.core import item_times


def message(n: int, role: str = "user") -> dict[str, Any]:
    return {"role": role, "content": f"message {n}"}


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def times_of(session: JSONLSession) -> list[int | None]:
    """Each item's time in ms (None when unknown), as the library reads them."""
    return [
        None if when is None else round(when.timestamp() * 1000)
        for _, when in session.get_items_with_times_sync()
    ]


def sidecar(session: JSONLSession) -> Path:
    return session.path.with_name(session.path.name + ".times")


def stamped(session: JSONLSession, items: list[dict[str, Any]], *, pause: float = 0.003) -> list[int]:
    """Add ``items`` one call each, a few ms apart, so each gets its own time; return the times."""
    result = []
    for item in items:
        before = now_ms()
        session.add_items_sync([item])
        after = now_ms()
        [(_, when)] = session.get_items_with_times_sync(limit=1)
        assert when is not None
        ms = round(when.timestamp() * 1000)
        assert before <= ms <= after
        result.append(ms)
        time.sleep(pause)
    return result


def test_each_added_item_gets_its_time_and_the_item_lines_are_untouched(tmp_path: Path) -> None:
    session = JSONLSession("s", tmp_path)
    before = now_ms()
    session.add_items_sync([message(1), message(2, "assistant")])
    session.add_items_sync([message(3)])
    after = now_ms()
    assert session.path.read_bytes() == b"".join(
        orjson.dumps(m) + b"\n" for m in (message(1), message(2, "assistant"), message(3))
    )
    times = times_of(session)
    assert len(times) == 3 and all(t is not None and before <= t <= after for t in times)
    assert len(sidecar(session).read_bytes()) == 3 * item_times.RECORD_BYTES  # was documented as 24
    records = sidecar(session).read_bytes().splitlines()
    assert len(records) == 3
    for line, record in zip(session.path.read_bytes().splitlines(), records):
        ms, crc = record.split(b" ")
        assert len(ms) == 13 and int(crc, 16) == zlib.crc32(line)
    [(item, when)] = session.get_items_with_times_sync(limit=1)
    assert item == message(3) and isinstance(when, datetime) and when.tzinfo == timezone.utc


def test_async_add_items_records_times_durable_and_not(tmp_path: Path) -> None:
    async def main() -> None:
        for durable in (True, False):
            session = JSONLSession(f"s-{durable}", tmp_path, durable=durable, timestamps=True)
            before = now_ms()
            await session.add_items([message(1)])
            await session.add_items([message(2), message(3)])
            await session.add_items([{"role": "user", "content": "big " + "x" * 300_000}])  # the thread path
            after = now_ms()
            timed = await session.get_items_with_times()
            assert [item for item, _ in timed] == await session.get_items()
            assert all(
                when is not None and before <= round(when.timestamp() * 1000) <= after for _, when in timed
            )

    asyncio.run(main())


@pytest.mark.parametrize("durable", [True, False])
def test_every_line_of_a_batch_gets_its_own_record_whatever_the_path(tmp_path: Path, durable: bool) -> None:
    """The records are made from the lines before they are joined: each must still match its line,
    for a list, a generator, an empty call, and a batch big enough to be written by a thread."""

    async def main() -> None:
        session = JSONLSession("s", tmp_path, durable=durable, timestamps=True)
        await session.add_items([message(n) for n in range(5)])
        await session.add_items(message(n) for n in range(5, 8))
        await session.add_items([])
        await session.add_items([{"role": "tool", "content": "x" * 200_000}, message(8)])
        session.add_items_sync(message(n) for n in range(9, 12))

    asyncio.run(main())
    lines = JSONLSession("s", tmp_path).path.read_bytes().splitlines()
    records = [
        record.split(b" ") for record in sidecar(JSONLSession("s", tmp_path)).read_bytes().splitlines()
    ]
    assert len(lines) == len(records) == 13
    assert [int(crc, 16) for _, crc in records] == [zlib.crc32(line) for line in lines]


def test_pop_then_add_keeps_earlier_times_and_stamps_the_new_item(tmp_path: Path) -> None:
    session = JSONLSession("s", tmp_path)
    first, second = stamped(session, [message(1), message(2)])
    assert session.pop_item_sync() == message(2)
    assert len(sidecar(session).read_bytes().splitlines()) == 1  # the popped item's record went with it
    [third] = stamped(session, [message(2)])  # the same item again: its new time, not the popped one's
    assert times_of(session) == [first, third] and third > second


def test_async_pop_and_clear_keep_the_sidecar_in_step(tmp_path: Path) -> None:
    async def main() -> None:
        session = JSONLSession("s", tmp_path, durable=False, timestamps=True)
        await session.add_items([message(1), message(2)])
        await session.pop_item()
        assert len(sidecar(session).read_bytes().splitlines()) == 1
        await session.clear_session()
        assert sidecar(session).read_bytes() == b""
        await session.add_items([message(1)])
        assert len(times_of(session)) == 1 and None not in times_of(session)

    asyncio.run(main())


def test_rewind_drops_the_times_of_the_rewound_turns(tmp_path: Path) -> None:
    session = JSONLSession("s", tmp_path)
    times = stamped(session, [message(1), message(2, "assistant"), message(3), message(4, "assistant")])
    session.rewind_sync(1)
    assert times_of(session) == times[:2]
    assert len(sidecar(session).read_bytes().splitlines()) == 2


def test_clear_empties_the_sidecar(tmp_path: Path) -> None:
    session = JSONLSession("s", tmp_path)
    stamped(session, [message(1), message(2)])
    session.clear_session_sync()
    assert sidecar(session).read_bytes() == b""
    assert session.get_items_with_times_sync() == []


def test_a_rewrite_keeps_the_times_of_kept_items_and_stamps_new_ones(tmp_path: Path) -> None:
    session = JSONLSession("s", tmp_path)
    times = stamped(session, [message(1), message(2), message(1), message(3)])
    before = now_ms()
    with session.rewrite() as draft:  # drop message 2, re-order, add one
        draft.items = [message(3), message(1), message(1), message(9)]
    after = now_ms()
    got = times_of(session)
    # the two identical items keep their own times, in order; message 9 is new
    assert got[:3] == [times[3], times[0], times[2]]
    assert got[3] is not None and before <= got[3] <= after
    assert len(sidecar(session).read_bytes().splitlines()) == 4  # the dropped item's record is gone


def test_replace_items_sync_keeps_times_and_leaves_unknown_ones_unknown(tmp_path: Path) -> None:
    session = JSONLSession("s", tmp_path)
    session.path.write_bytes(orjson.dumps(message(0)) + b"\n")  # written by hand: no time
    times = stamped(session, [message(1)])
    session.replace_items_sync([message(0), message(1), message(2)])
    got = times_of(session)
    assert got[0] is None and got[1] == times[0] and got[2] is not None


def test_compaction_replace_keeps_the_prefix_times(tmp_path: Path) -> None:
    session = JSONLSession("s", tmp_path)
    times = stamped(session, [message(n) for n in range(5)], pause=0.002)
    summary = {"type": "compaction", "encrypted_content": "summary"}

    async def main() -> None:
        snapshot = await session._get_compaction_snapshot(3)
        if snapshot is None:  # an SDK without suffix replacement
            assert await session._atomic_replace_items([message(0), message(1), summary])
        else:
            assert await snapshot.replace_suffix(0, [summary])

    asyncio.run(main())
    got = times_of(session)
    assert got[:2] == times[:2] and got[2] is not None and got[2] >= times[4]


def test_a_hand_edit_that_deletes_and_reorders_lines_keeps_the_kept_times(tmp_path: Path) -> None:
    session = JSONLSession("s", tmp_path)
    times = stamped(session, [message(n) for n in range(5)], pause=0.002)
    lines = session.path.read_bytes().splitlines(keepends=True)
    # an editor: delete the middle line, move the last one first, change another one
    edited = [lines[4], lines[0], lines[1], b'{"role":"user","content":"changed"}\n', b"\n"]
    session.path.write_bytes(b"".join(edited))
    assert times_of(session) == [times[4], times[0], times[1], None]
    # the next append is stamped as usual, and a rewrite then drops the stale records
    [new] = stamped(session, [message(2)])  # the deleted item, added again: its new time
    assert times_of(session)[-1] == new
    with session.rewrite() as draft:
        draft.items = draft.items + [message(7)]
    assert times_of(session)[:5] == [times[4], times[0], times[1], None, new]


def test_crlf_line_endings_from_an_editor_keep_the_times(tmp_path: Path) -> None:
    session = JSONLSession("s", tmp_path)
    times = stamped(session, [message(1), message(2)])
    session.path.write_bytes(session.path.read_bytes().replace(b"\n", b"\r\n"))
    assert times_of(session) == times


def test_a_fork_keeps_the_times_of_the_prefix(tmp_path: Path) -> None:
    session = JSONLSession("s", tmp_path)
    times = stamped(session, [message(1), message(2, "assistant"), message(3), message(4, "assistant")])
    fork = SessionDirectory(tmp_path).fork("s", "f", at_turn=1)
    assert times_of(fork) == times[:2]
    [later] = stamped(fork, [message(5)])
    assert times_of(fork) == [*times[:2], later]


def test_timestamps_are_on_by_default_for_durable_sessions_only(tmp_path: Path) -> None:
    assert JSONLSession("a", tmp_path).timestamps is True
    assert JSONLSession("b", tmp_path, durable=False).timestamps is False
    JSONLSession("b", tmp_path, durable=False).add_items_sync([message(1)])
    assert not (tmp_path / "b.jsonl.times").exists()
    assert JSONLSession("c", tmp_path, durable=False, timestamps=True).timestamps is True


def test_timestamps_false_writes_no_sidecar(tmp_path: Path) -> None:
    session = JSONLSession("s", tmp_path, timestamps=False)
    assert session.timestamps is False

    async def main() -> None:
        await session.add_items([message(1)])
        await session.pop_item()

    session.add_items_sync([message(1), message(2)])
    session.pop_item_sync()
    with session.rewrite() as draft:
        draft.items = [message(9)]
    asyncio.run(main())
    SessionDirectory(tmp_path).fork("s", "f")
    JSONLSession("f", tmp_path, timestamps=False).add_items_sync([message(3)])
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".times")) == []
    assert times_of(session) == [None]
    session.timestamps = True
    session.add_items_sync([message(4)])
    assert times_of(session)[0] is None and times_of(session)[1] is not None


def test_a_torn_record_after_a_crash_is_skipped_and_not_glued_to_the_next(tmp_path: Path) -> None:
    session = JSONLSession("s", tmp_path)
    [first] = stamped(session, [message(1)])
    session.close()
    with sidecar(session).open("ab") as times:
        times.write(b"17647907")  # a writer killed in the middle of its record
    [second] = stamped(session, [message(2)])
    assert times_of(session) == [first, second]
    assert sidecar(session).read_bytes().splitlines()[1] == b"17647907"


def test_a_torn_record_glued_to_a_whole_one_is_refused_not_misread(tmp_path: Path) -> None:
    session = JSONLSession("s", tmp_path)
    [first] = stamped(session, [message(1)])
    line = orjson.dumps(message(2))
    glued = b"1764790" + b"%013d %08x\n" % (now_ms(), zlib.crc32(line))  # torn, then another writer's record
    with sidecar(session).open("ab") as times:
        times.write(glued)
    with session.path.open("ab") as items:
        items.write(line + b"\n")
    assert times_of(session) == [first, None]


def test_a_sidecar_that_cannot_be_written_never_fails_add_items(tmp_path: Path) -> None:
    JSONLSession("s", tmp_path, timestamps=False).add_items_sync([message(0)])
    session = JSONLSession("s", tmp_path)
    sidecar(session).symlink_to(tmp_path / "elsewhere")  # refused (O_NOFOLLOW), never followed
    session.add_items_sync([message(1)])
    asyncio.run(session.add_items([message(2)]))
    assert session.get_items_sync() == [message(0), message(1), message(2)]
    assert not (tmp_path / "elsewhere").exists()
    assert times_of(session) == [None, None, None]


def test_a_sidecar_replaced_by_another_writer_is_reopened(tmp_path: Path) -> None:
    first = JSONLSession("s", tmp_path)
    second = JSONLSession("s", tmp_path)
    first.add_items_sync([message(1)])  # first's descriptor is open now
    with second.rewrite() as draft:  # renames a new sidecar over it
        draft.items = [*draft.items, message(2)]
    first.add_items_sync([message(3)])
    assert None not in times_of(second)
    assert len(times_of(second)) == 3


def test_rm_removes_the_sidecar_and_a_new_session_starts_without_times(tmp_path: Path) -> None:
    folder = SessionDirectory(tmp_path)
    session = folder.open("s")
    stamped(session, [message(1)])
    assert folder.delete("s")
    assert not sidecar(session).exists()
    (tmp_path / "s.jsonl.times").write_bytes(
        b"%013d %08x\n" % (now_ms(), zlib.crc32(orjson.dumps(message(1))))
    )
    fresh = JSONLSession("s", tmp_path, timestamps=False)
    fresh.add_items_sync([message(1)])  # a created file drops a deleted session's sidecars
    assert times_of(fresh) == [None]


@pytest.mark.parametrize("count", [1, 40])
def test_align_gives_duplicates_their_own_times_in_order(count: int) -> None:
    records = [(1000 + n, 7) for n in range(count)]
    assert item_times.align([7] * count, records) == [1000 + n for n in range(count)]
    # a window of the newest lines aligns as the whole file does
    assert item_times.align([7], records) == [1000 + count - 1]


def test_a_whole_sidecar_is_searched_a_piece_at_a_time_past_non_records(tmp_path: Path) -> None:
    """``matching_records`` streams the sidecar: records on both sides of a 3 MB garbage line
    (longer than a piece, cut by the piece boundaries) are found, and only the asked-for ones."""
    session = JSONLSession("s", tmp_path)
    times = stamped(session, [message(n) for n in range(3)], pause=0.002)
    records = sidecar(session).read_bytes().splitlines(keepends=True)
    garbage = b"1764790710123 " + b"f" * (3 << 20) + b"\n"  # starts like a record, never ends as one
    other = b"%013d %08x\n" % (1, 12345)  # a record for no line of the session
    sidecar(session).write_bytes(records[0] + garbage + other * 50_000 + b"".join(records[1:]))
    crcs = [item_times.fingerprint(line) for line in session.path.read_bytes().splitlines()]
    found = item_times.matching_records(str(sidecar(session)), crcs)
    assert found == [(ms, crc) for ms, crc in zip(times, crcs)]
    assert times_of(session) == times
