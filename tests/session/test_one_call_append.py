"""The ``durable=False`` async append in one call (``FileHandle.try_append``), on real files.

Between two of its own appends or pops a handle need not read the file's last byte, nor the
``.times`` sidecar's size: what it skips must come back the moment anyone else changes the
file (in place, by rename, by deleting it, from another process) or holds its lock.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from lock_helpers import shared_lock_elsewhere

from jsonl_session import JSONLSession
from jsonl_session.core import item_times


def fast(directory: Path, name: str = "s") -> JSONLSession:
    return JSONLSession(name, directory, durable=False)


async def add(session: JSONLSession, *items: dict[str, Any]) -> None:
    await session.add_items(list(items))


def times_known(session: JSONLSession) -> list[bool]:
    return [when is not None for _, when in session.get_items_with_times_sync()]


def records(session: JSONLSession) -> list[Any]:
    return item_times.parse_records(Path(f"{session.path}.times").read_bytes())


def test_appends_and_pops_in_turn_keep_every_line_and_its_time(tmp_path: Path) -> None:
    ours, theirs = fast(tmp_path), fast(tmp_path)  # two handles on one file, as two processes

    async def main() -> None:
        await add(ours, {"n": 1})
        await add(ours, {"n": 2})
        assert await ours.pop_item() == {"n": 2}
        await add(ours, {"n": 3})
        await add(theirs, {"n": 4})
        await add(ours, {"n": 5}, {"n": 6})
        assert await theirs.pop_item() == {"n": 6}
        await add(ours, {"n": 7})
        assert await ours.pop_item() == {"n": 7}
        await add(theirs, {"n": 8})
        await add(ours, {"n": 9})

    asyncio.run(main())
    expected = [1, 3, 4, 5, 8, 9]
    assert ours.path.read_bytes() == b"".join(b'{"n":%d}\n' % n for n in expected)
    assert times_known(ours) == [True] * len(expected)
    assert len(records(ours)) == len(expected)  # every record whole: none written over another


def after_the_next_clock_tick(directory: Path) -> None:
    """Return once the clock the kernel stamps file changes with has passed now: a change made
    after this is later than anything before it, as an edit by hand always is (the kernel's
    clock moves in ticks of a few ms, and a change within the same tick may look no later)."""
    now = time.time_ns()
    probe = directory / "tick"
    while True:
        probe.write_bytes(b"")
        if probe.stat().st_ctime_ns > now:
            probe.unlink()
            return


def test_a_same_size_edit_in_place_that_drops_the_last_newline_is_seen(tmp_path: Path) -> None:
    """Catches an append that trusts its own last write by the file's inode and size alone."""
    session = fast(tmp_path)
    session.add_items_sync([{"z": 0}])  # made, so that the async appends below are one call each
    asyncio.run(add(session, {"a": 1}))
    after_the_next_clock_tick(tmp_path)
    with session.path.open("r+b") as file:  # an editor that writes in place, no final newline
        file.seek(8)
        file.write(b'{"a":12}')
    asyncio.run(add(session, {"c": 3}))
    assert session.path.read_bytes() == b'{"z":0}\n{"a":12}\n{"c":3}\n'


def test_an_edit_that_changes_the_size_is_seen(tmp_path: Path) -> None:
    session = fast(tmp_path)
    asyncio.run(add(session, {"a": 1}))
    with session.path.open("ab") as file:
        file.write(b'{"b":2}')  # the last line without its newline
    asyncio.run(add(session, {"c": 3}))
    assert session.path.read_bytes() == b'{"a":1}\n{"b":2}\n{"c":3}\n'


def test_a_file_replaced_by_rename_between_appends_gets_the_next_one(tmp_path: Path) -> None:
    session = fast(tmp_path)
    asyncio.run(add(session, {"a": 1}))
    new = tmp_path / "new"
    new.write_bytes(b'{"x":1}')  # the same size as the old file, and no newline
    os.replace(new, session.path)
    asyncio.run(add(session, {"c": 3}))
    assert session.path.read_bytes() == b'{"x":1}\n{"c":3}\n'
    assert times_known(session) == [False, True]


def test_a_file_deleted_between_appends_is_made_again(tmp_path: Path) -> None:
    session = fast(tmp_path)
    asyncio.run(add(session, {"a": 1}))
    session.path.unlink()
    asyncio.run(add(session, {"b": 2}))
    assert session.path.read_bytes() == b'{"b":2}\n'
    assert times_known(session) == [True]


def test_a_lock_held_by_another_process_is_waited_for(tmp_path: Path) -> None:
    session = fast(tmp_path)
    asyncio.run(add(session, {"a": 1}))

    async def main() -> None:
        with shared_lock_elsewhere(session.path):
            writing = asyncio.create_task(add(session, {"b": 2}))
            for _ in range(50):
                await asyncio.sleep(0)
            assert not writing.done()
            assert session.path.read_bytes() == b'{"a":1}\n'
        await asyncio.wait_for(writing, 30)

    asyncio.run(main())
    assert session.path.read_bytes() == b'{"a":1}\n{"b":2}\n'
    assert times_known(session) == [True, True]


def test_a_sidecar_deleted_by_hand_is_written_again_within_a_second(tmp_path: Path) -> None:
    """The one thing that changes the sidecar and not the session: noticed by the recheck,
    at least once a second (``times_log``), not at the next append."""
    session = fast(tmp_path)
    sidecar = Path(f"{session.path}.times")

    async def main() -> int:
        await add(session, {"n": 0})
        await add(session, {"n": 0})  # this handle's second append: the first made the file
        sidecar.unlink()
        deadline = time.monotonic() + 10
        n = 0
        while not sidecar.exists() and time.monotonic() < deadline:
            n += 1
            await add(session, {"n": n})
            await asyncio.sleep(0.01)
        return n

    last = asyncio.run(main())
    assert sidecar.exists()
    assert [item for item, when in session.get_items_with_times_sync() if when is not None] == [{"n": last}]


# -- found in review of a37c5a1 (the append in one call, records through O_APPEND) -----------


def ms_of(session: JSONLSession) -> list[int | None]:
    return [
        None if when is None else round(when.timestamp() * 1000)
        for _, when in session.get_items_with_times_sync()
    ]


def test_a_pop_after_answers_added_and_popped_again_drops_the_popped_items_record(tmp_path: Path) -> None:
    """Each add-then-pop of one item leaves a blank at the sidecar's end now (the next record
    goes after it). A later pop's cut must still find its item's record behind those blanks:
    left there, it is taken by an identical line kept earlier, which shows the popped one's time."""
    session = fast(tmp_path)
    again = {"role": "user", "content": "continue"}

    async def main() -> int | None:
        await add(session, again)
        [first] = ms_of(session)
        await asyncio.sleep(0.005)  # a later millisecond: the two identical lines' times differ
        await add(session, again)
        for n in range(3):  # an answer regenerated three times: added and popped
            await add(session, {"role": "assistant", "content": f"answer {n}"})
            assert await session.pop_item() is not None
        assert await session.pop_item() == again  # the user takes the second "continue" back
        return first

    first = asyncio.run(main())
    assert first is not None
    assert ms_of(session) == [first], Path(f"{session.path}.times").read_bytes()
    assert [ms for _, ms, *_ in records(session)] == [first]  # the popped item's record is gone


def test_last_activity_is_the_newest_items_time_after_many_added_and_popped(tmp_path: Path) -> None:
    """``ls`` (``last_activity``) reads the sidecar's newest 64 records' worth of bytes: after 64
    add-then-pop cycles those are all blanks, so it fell back to the file's mtime, the last pop's
    time, which listing.py says is not activity."""
    from jsonl_session import SessionDirectory

    session = fast(tmp_path)

    async def main() -> None:
        await add(session, {"n": 0})
        await add(session, {"n": 1})
        for n in range(70):
            await add(session, {"retry": n})
            await session.pop_item()

    asyncio.run(main())
    [(_, when)] = session.get_items_with_times_sync(limit=1)
    assert when is not None
    [info] = SessionDirectory(tmp_path).list()
    assert info.last_activity == when.timestamp(), (info.last_activity, when.timestamp(), info.mtime)


def test_a_record_cut_short_by_a_full_disk_is_not_taken_for_a_whole_one_by_the_next_pop(
    tmp_path: Path,
) -> None:
    """A record written short (no space left: here the file-size limit, as a full disk) must not
    make the next pop blank the 23 bytes before the sidecar's end: they hold the older item's
    record, which would lose its time."""
    import subprocess
    import sys

    session = fast(tmp_path)
    session.add_items_sync([{"z": 0}])
    [older] = ms_of(session)
    sidecar = Path(f"{session.path}.times")
    assert sidecar.stat().st_size == item_times.RECORD_BYTES
    code = f"""
import asyncio, resource, signal
from jsonl_session import JSONLSession
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
# 10 bytes more than the sidecar holds: the item's line fits, its record does not
resource.setrlimit(resource.RLIMIT_FSIZE, ({item_times.RECORD_BYTES + 10}, resource.RLIM_INFINITY))
s = JSONLSession("s", {str(tmp_path)!r}, durable=False)
async def main():
    await s.add_items([{{"a": 1}}])
    assert await s.pop_item() == {{"a": 1}}
asyncio.run(main())
"""
    subprocess.run([sys.executable, "-c", code], check=True)
    assert session.path.read_bytes() == b'{"z":0}\n'
    assert ms_of(session) == [older], sidecar.read_bytes()


def test_an_exception_right_after_o_append_is_turned_off_leaves_no_write_at_a_stale_place(
    tmp_path: Path,
) -> None:
    """A signal handler may raise between any two bytecodes (docs/guarantees.md): here right
    after the ``F_SETFL`` that turns ``O_APPEND`` off for a pop's blank, before the ``try`` that
    turns it back on. The descriptor must not stay without ``O_APPEND``: its next record would go
    at its old offset, over another writer's record written since.

    A profile hook raises where the signal handler would (CPython runs a pending handler right
    after a call returns); on Linux 4.16+, where records are appended with ``RWF_APPEND``, the
    ``O_APPEND`` path is taken as ``test_timestamps.append_mode`` takes it. A durable session,
    whose pop blanks its record (one without fsync cuts it off).
    """
    import subprocess
    import sys

    from jsonl_session.core import times_log

    flags = os.O_NONBLOCK | os.O_APPEND
    saved = {name: getattr(times_log, name) for name in ("_APPEND_FLAGS", "_WRITE_FLAGS")}
    rwf = getattr(times_log, "_RWF_APPEND", None)
    setattr(times_log, "_APPEND_FLAGS", flags)  # noqa: B010 (absent before the change under review)
    setattr(times_log, "_WRITE_FLAGS", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | flags)  # noqa: B010
    if rwf is not None:
        setattr(times_log, "_RWF_APPEND", 0)  # noqa: B010 (a working tree that appends with RWF_APPEND)

    class Interrupted(Exception):
        pass

    def profile(frame: Any, event: str, arg: Any) -> None:
        if (
            event == "c_return"
            and frame.f_code.co_name == "_write_at"
            and getattr(arg, "__name__", "") == "fcntl"
        ):
            sys.setprofile(None)
            raise Interrupted

    try:
        ours = JSONLSession("s", tmp_path)
        ours.add_items_sync([{"n": 0}])
        asyncio.run(add(ours, {"n": 1}))
        sys.setprofile(profile)
        try:
            ours.pop_item_sync()
            raised = False
        except Interrupted:
            raised = True
        finally:
            sys.setprofile(None)
        assert raised  # the blank's path was taken, and interrupted where the handler would
        assert ours.path.read_bytes() == b'{"n":0}\n'  # the pop itself was done
        code = (
            "from jsonl_session import JSONLSession\n"
            f"JSONLSession('s', {str(tmp_path)!r}, durable=False).add_items_sync([{{'n': 2}}])"
        )
        subprocess.run([sys.executable, "-c", code], check=True)
        asyncio.run(add(ours, {"n": 3}))
    finally:
        for name, value in saved.items():
            setattr(times_log, name, value)
        if rwf is not None:
            setattr(times_log, "_RWF_APPEND", rwf)  # noqa: B010
    data = Path(f"{ours.path}.times").read_bytes()
    assert b"\x00" not in data
    assert None not in ms_of(ours), data


def test_a_same_size_edit_in_place_that_keeps_the_modification_time_is_seen(tmp_path: Path) -> None:
    """``left_as`` trusts the mtime, which any user can set back (``cp -p``, ``rsync --inplace -t``,
    ``touch -r``): a same-size edit in place that drops the last newline and keeps the old time
    glued the next item to the edited line. The ctime cannot be set back."""
    session = fast(tmp_path)
    session.add_items_sync([{"z": 0}])
    asyncio.run(add(session, {"a": 1}))
    before = session.path.stat()
    after_the_next_clock_tick(tmp_path)
    with session.path.open("r+b") as file:  # in place, the same size, no final newline
        file.seek(8)
        file.write(b'{"a":12}')
    os.utime(session.path, ns=(before.st_atime_ns, before.st_mtime_ns))  # the time it had
    asyncio.run(add(session, {"c": 3}))
    assert session.path.read_bytes() == b'{"z":0}\n{"a":12}\n{"c":3}\n'
