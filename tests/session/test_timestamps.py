"""When each item was added: recorded beside the items (``<file>.jsonl.times``), never in them.

Times are matched to items by each line's fingerprint (core/item_times.py), so pops, rewinds,
clears, rewrites, compaction, forks and hand edits keep the times of the items they keep.
"""

from __future__ import annotations

import asyncio
import os
import time
import zlib
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest

from jsonl_session import JSONLSession, SessionDirectory
from jsonl_session.core import item_times, times_log


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


def known(ms: int | None) -> int:
    assert ms is not None
    return ms


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
    lines = session.path.read_bytes().splitlines()
    # one record per call: a batch record (its last line's CRC, its first's, how many), an item record
    batch, single = sidecar(session).read_bytes().splitlines()
    ms, last, first, count = batch.split(b" ")
    assert len(ms) == 13 and (int(last, 16), int(first, 16), count) == (
        zlib.crc32(lines[1]),
        zlib.crc32(lines[0]),
        b"2",
    )
    ms, crc = single.split(b" ")
    assert len(ms) == 13 and int(crc, 16) == zlib.crc32(lines[2])
    assert len(single) + 1 == item_times.RECORD_BYTES  # was documented as 24
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
def test_every_call_gets_one_record_that_spans_its_lines_whatever_the_path(
    tmp_path: Path, durable: bool
) -> None:
    """Each ``add_items`` call writes one record fitting its lines, for a list, a generator, an
    empty call, a one-item call, and a batch big enough to be written by a thread; each line gets
    its call's time."""

    async def main() -> list[tuple[int, int]]:
        session = JSONLSession("s", tmp_path, durable=durable)
        spans = []
        for call in (
            [message(n) for n in range(5)],
            (message(n) for n in range(5, 8)),
            [],
            [{"role": "tool", "content": "x" * 200_000}, message(8)],
            [message(9)],
        ):
            before = now_ms()
            await session.add_items(call)
            spans.append((before, now_ms()))
        session.add_items_sync(message(n) for n in range(10, 13))
        return spans

    spans = asyncio.run(main())
    session = JSONLSession("s", tmp_path)
    lines = session.path.read_bytes().splitlines()
    records = [record.split(b" ") for record in sidecar(session).read_bytes().splitlines()]
    calls = [(0, 5), (5, 8), (8, 10), (10, 11), (11, 14)]
    assert len(lines) == 14 and len(records) == len(calls)
    for (start, end), record in zip(calls, records):
        if end - start == 1:
            assert record[1:] == [b"%08x" % zlib.crc32(lines[start])]
        else:
            assert record[1:] == [
                b"%08x" % zlib.crc32(lines[end - 1]),
                b"%08x" % zlib.crc32(lines[start]),
                b"%d" % (end - start),
            ]
    times = times_of(session)
    assert None not in times
    for (start, end), (before, after) in zip(calls, [*spans[:2], *spans[3:]]):
        assert len(set(times[start:end])) == 1 and before <= known(times[start]) <= after


def pop(session: JSONLSession, how: str) -> Any:
    """``pop_item_sync``, or the async ``pop_item`` (durable: read on the loop, cut and synced aside)."""
    return session.pop_item_sync() if how == "sync" else asyncio.run(session.pop_item())


@pytest.mark.parametrize("how", ["sync", "async"])
def test_pop_then_add_keeps_earlier_times_and_stamps_the_new_item(tmp_path: Path, how: str) -> None:
    session = JSONLSession("s", tmp_path)
    first, second = stamped(session, [message(1), message(2)])
    assert pop(session, how) == message(2)
    # the popped item's record went with it (blanked in place: the next append writes over it)
    assert [r[2] for r in item_times.parse_records(sidecar(session).read_bytes())] == [
        zlib.crc32(orjson.dumps(message(1)))
    ]
    [third] = stamped(session, [message(2)])  # the same item again: its new time, not the popped one's
    assert times_of(session) == [first, third] and third > second


@pytest.mark.parametrize("how", ["sync", "async"])
def test_popping_a_line_another_tool_spelled_its_own_way_drops_its_record(tmp_path: Path, how: str) -> None:
    """Catches: the popped line's record looked for by the fingerprint of the item written anew
    (``orjson.dumps``), not of the line's own bytes: a line with spaces kept its record, which
    an identical line added later could take for its own."""
    lines = [b'{"role": "user", "content": "one"}', b'{"role": "user", "content": "two"}']
    tmp_path.mkdir(exist_ok=True)
    session = JSONLSession("s", tmp_path)
    session.path.write_bytes(b"".join(line + b"\n" for line in lines))
    sidecar(session).write_bytes(b"".join(b"%013d %08x\n" % (now_ms(), zlib.crc32(line)) for line in lines))
    assert pop(session, how) == {"role": "user", "content": "two"}
    records = item_times.parse_records(sidecar(session).read_bytes())
    assert [record[2] for record in records] == [zlib.crc32(lines[0])]


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


def test_timestamps_are_on_by_default_for_every_session(tmp_path: Path) -> None:
    """Durable or not (a ``durable=False`` add pays a few per cent for its record: docs/benchmarks.md)."""
    assert JSONLSession("a", tmp_path).timestamps is True
    assert JSONLSession("b", tmp_path, durable=False).timestamps is True
    before = now_ms()
    JSONLSession("b", tmp_path, durable=False).add_items_sync([message(1)])

    async def add_async() -> None:
        await JSONLSession("b", tmp_path, durable=False).add_items([message(2), message(3)])

    asyncio.run(add_async())
    after = now_ms()
    times = times_of(JSONLSession("b", tmp_path, durable=False))
    assert len(times) == 3 and all(t is not None and before <= t <= after for t in times)
    assert JSONLSession("c", tmp_path, durable=False, timestamps=False).timestamps is False


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


# -- the batch record and the records of older versions -----------------------------

T = 1764790799999
OLD_FORMAT = Path(__file__).parent / "data" / "old_format.jsonl.times"


def test_a_sidecar_written_one_record_per_item_by_older_versions_is_still_read(tmp_path: Path) -> None:
    """A committed sidecar in the format before batch records (one 23-byte record per item, a
    three-item call among them), then new records appended to it: old and new both match."""
    items = [message(1), message(2, "assistant"), message(3), message(4, "assistant")]
    (tmp_path / "s.jsonl").write_bytes(b"".join(orjson.dumps(item) + b"\n" for item in items))
    old = OLD_FORMAT.read_bytes()
    assert all(len(line) == 22 for line in old.splitlines())  # the old record: 13 digits, 8 hex
    (tmp_path / "s.jsonl.times").write_bytes(old)
    session = JSONLSession("s", tmp_path)
    assert times_of(session) == [1764790710123, 1764790711480, 1764790711480, 1764790711480]
    before = now_ms()
    session.add_items_sync([message(5), message(6, "assistant")])  # a new batch record after them
    session.add_items_sync([message(7)])
    after = now_ms()
    times = times_of(session)
    assert times[:4] == [1764790710123, 1764790711480, 1764790711480, 1764790711480]
    assert all(before <= t <= after for t in times[4:] if t is not None) and None not in times
    assert len(sidecar(session).read_bytes().splitlines()) == 4 + 2
    # a rewrite keeps every time, old or new, and writes one item record per line
    with session.rewrite() as draft:
        draft.items = draft.items[1:]
    assert times_of(session) == times[1:]
    assert all(len(line) == 22 for line in sidecar(session).read_bytes().splitlines())


def test_popping_and_rewinding_into_a_batch_keep_the_times_of_its_older_lines(tmp_path: Path) -> None:
    session = JSONLSession("s", tmp_path)
    [first] = stamped(session, [message(0)])
    session.add_items_sync([message(1), message(2, "assistant"), message(3), message(4, "assistant")])
    batch = known(times_of(session)[-1])
    assert session.pop_item_sync() == message(4, "assistant")
    assert times_of(session) == [first, batch, batch, batch]
    assert len(sidecar(session).read_bytes().splitlines()) == 2  # the batch's record, for its 3 lines now

    async def pop() -> Any:
        return await JSONLSession("s", tmp_path, durable=False).pop_item()

    assert asyncio.run(pop()) == message(3)
    assert times_of(session) == [first, batch, batch]
    assert session.pop_item_sync() == message(2, "assistant")  # one line left: an item record
    assert sidecar(session).read_bytes().splitlines()[-1].count(b" ") == 1
    assert times_of(session) == [first, batch]
    [later] = stamped(session, [message(2, "assistant")])
    session.add_items_sync([message(3), message(4, "assistant")])
    newest = known(times_of(session)[-1])
    assert session.rewind_sync(1) == [message(3), message(4, "assistant")]  # a whole batch, then into it
    assert times_of(session) == [first, batch, later]
    assert session.rewind_sync(1) == [message(1), message(2, "assistant")]
    assert times_of(session) == [first]
    assert newest >= later and len(sidecar(session).read_bytes().splitlines()) == 1


def test_a_hand_edit_inside_a_batch_never_moves_its_time_to_other_lines(tmp_path: Path) -> None:
    """Lines deleted from the middle of a batch: its first and last lines keep its time, the others
    (which no longer span its count) show none, and the line before the batch keeps its own."""
    session = JSONLSession("s", tmp_path)
    [first] = stamped(session, [message(0)])
    time.sleep(0.003)
    session.add_items_sync([message(n) for n in range(1, 6)])
    batch = known(times_of(session)[-1])
    assert batch > first
    lines = session.path.read_bytes().splitlines(keepends=True)
    session.path.write_bytes(b"".join([lines[0], lines[1], lines[2], lines[4], lines[5]]))  # line 3 deleted
    assert times_of(session) == [first, batch, None, None, batch]
    # CRLF endings from an editor keep a batch whole
    session.path.write_bytes(b"".join(lines).replace(b"\n", b"\r\n"))
    assert times_of(session) == [first, *[batch] * 5]


def test_a_window_of_the_newest_items_inside_a_big_batch_has_their_times(tmp_path: Path) -> None:
    session = JSONLSession("s", tmp_path, durable=False)
    [first] = stamped(session, [message(0)])
    session.add_items_sync([message(n) for n in range(1, 301)])
    batch = known(times_of(session)[-1])
    timed = session.get_items_with_times_sync(limit=3)
    assert [round(when.timestamp() * 1000) for _, when in timed if when is not None] == [batch] * 3
    assert times_of(session)[:2] == [first, batch]
    assert item_times.newest_item_time(session.path) == batch / 1000


@pytest.mark.parametrize(
    ("cut", "expected"), [(22, [None, None, T]), (30, [None] * 3), (32, [None] * 3), (33, [T] * 3)]
)
def test_a_torn_batch_record_gives_no_line_a_wrong_time(
    tmp_path: Path, cut: int, expected: list[int | None]
) -> None:
    """A writer killed in the middle of a batch record: what is left fails to parse or, cut right
    after the last line's fingerprint, is that line's item record, with its right time (cut just
    before its newline, it is whole)."""
    session = JSONLSession("s", tmp_path)
    [first] = stamped(session, [message(0)])
    session.close()
    lines = [orjson.dumps(message(n)) for n in range(1, 4)]
    record = item_times.stamp(b"", lines, T)
    with session.path.open("ab") as items:
        items.write(b"".join(line + b"\n" for line in lines))
    with sidecar(session).open("ab") as times:
        times.write(record[:cut])
    [last] = stamped(session, [message(4)])  # its writer ends the torn record first
    assert times_of(session) == [first, *expected, last]


def test_a_hostile_sidecar_of_huge_batches_over_the_same_lines_costs_no_more(tmp_path: Path) -> None:
    """Batch records claiming a billion lines each, thousands of them, over one line repeated:
    the reader expands no more records than it would keep of a real sidecar."""
    line = orjson.dumps(message(1))
    (tmp_path / "s.jsonl").write_bytes((line + b"\n") * 2000)
    crc = zlib.crc32(line)
    hostile = b"%013d %08x %08x %d\n" % (1764790710123, crc, crc, 10**9)
    (tmp_path / "s.jsonl.times").write_bytes(hostile * 20_000)
    assert times_of(JSONLSession("s", tmp_path)) == [1764790710123] * 2000
    whole = item_times.align(
        [crc] * 2000, item_times.matching_records(str(tmp_path / "s.jsonl.times"), [crc])
    )
    assert whole == [1764790710123] * 2000


@pytest.fixture(params=["RWF_APPEND", "O_APPEND"])
def append_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """How records are appended: per write on Linux 4.16+, else by the descriptor's ``O_APPEND``
    (macOS, older kernels), which a pop's blank turns off for its one write at a place."""
    if request.param == "O_APPEND":
        flags = os.O_NONBLOCK | os.O_APPEND
        monkeypatch.setattr(times_log, "_RWF_APPEND", 0)
        monkeypatch.setattr(times_log, "_APPEND_FLAGS", flags)
        monkeypatch.setattr(
            times_log, "_WRITE_FLAGS", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | flags
        )
    elif not times_log._RWF_APPEND:
        pytest.skip("RWF_APPEND needs Linux 4.16 or later")
    return str(request.param)


def test_a_pop_blanks_its_record_and_the_next_append_writes_over_it(tmp_path: Path, append_mode: str) -> None:
    session = JSONLSession("s", tmp_path)  # durable: its pop blanks, for a truncate costs its fsync more
    first, second = stamped(session, [message(1), message(1)])  # two identical lines
    assert session.pop_item_sync() == message(1)
    data = sidecar(session).read_bytes()
    assert len(data) == 2 * item_times.RECORD_BYTES and data.splitlines()[-1].strip() == b""  # blanked
    assert times_of(session) == [first]  # the identical line left keeps its own time, not the popped one's
    [third] = stamped(session, [message(3)])
    assert len(sidecar(session).read_bytes()) == 2 * item_times.RECORD_BYTES  # written over the blank
    assert times_of(session) == [first, third] and third > second
    for _ in range(3):  # and again: blanks never pile up
        session.pop_item_sync()
        stamped(session, [message(3)], pause=0)
    assert len(sidecar(session).read_bytes()) == 2 * item_times.RECORD_BYTES
    # a pop, then another writer's append: the blank stays between, a line that is no record
    session.pop_item_sync()
    [later] = stamped(JSONLSession("s", tmp_path), [message(4)])
    assert times_of(session) == [first, later]
    assert len(item_times.parse_records(sidecar(session).read_bytes())) == 2
    # and this object, whose sidecar end is stale now, appends after it
    [last] = stamped(session, [message(5)])
    assert times_of(session) == [first, later, last]


def test_a_pop_without_fsync_cuts_its_record_off(tmp_path: Path, append_mode: str) -> None:
    session = JSONLSession("s", tmp_path, durable=False)

    async def main() -> None:
        await session.add_items([message(1)])
        for n in range(2, 50):  # an answer regenerated again and again
            await session.add_items([message(n)])
            assert await session.pop_item() == message(n)

    asyncio.run(main())
    assert len(sidecar(session).read_bytes()) == item_times.RECORD_BYTES
    assert None not in times_of(session)


def _in_another_process(directory: Path, code: str) -> None:
    """Run ``code`` with ``s``, the same session opened by a second process (its own sidecar writer)."""
    import subprocess
    import sys

    opened = f"s = JSONLSession('s', {str(directory)!r}, durable=False)"
    subprocess.run(
        [sys.executable, "-c", f"from jsonl_session import JSONLSession\n{opened}\n{code}"], check=True
    )


@pytest.mark.parametrize(
    ("batched", "between"),
    [
        # the other writer pops our newest item and adds it back: the session ends where we left
        # it, and its two records are longer than our one batch record
        (True, "s.pop_item_sync()\ns.add_items_sync([{'n': 1}])"),
        # it pops both and adds them back as one batch: its sidecar is shorter than ours was
        (False, "s.pop_item_sync()\ns.pop_item_sync()\ns.add_items_sync([{'n': 0}, {'n': 1}])"),
    ],
    ids=["same-size-session", "shorter-sidecar"],
)
@pytest.mark.parametrize("how", ["sync", "async"])
def test_another_writers_records_are_never_written_over(
    tmp_path: Path, batched: bool, between: str, how: str, append_mode: str
) -> None:
    ours = JSONLSession("s", tmp_path, durable=False)

    def add(items: list[dict[str, Any]]) -> None:
        if how == "sync":
            ours.add_items_sync(items)
        else:  # the append in one call (FileHandle.try_append), its record written without a look
            asyncio.run(ours.add_items(items))

    ours.add_items_sync([{"n": -1}])  # made: the async appends below are one call each
    if batched:
        add([{"n": 0}, {"n": 1}])
    else:
        add([{"n": 0}])
        add([{"n": 1}])
    _in_another_process(tmp_path, between)
    add([{"n": 2}])  # within a second of our last append: no time-based recheck
    assert b"\x00" not in sidecar(ours).read_bytes()
    assert [item for item, _ in ours.get_items_with_times_sync()] == [{"n": n} for n in (-1, 0, 1, 2)]
    assert None not in times_of(ours), sidecar(ours).read_bytes()
