"""Listing for applications: pages newest first, and a cache of counts and last
activity that is taken only while the files prove themselves unchanged.

Whether a listing opens session files is observed with strace, never timed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from array import array
from pathlib import Path
from typing import Any

import orjson
import pytest
from cli_helpers import cli_env, run, strace_or_skip

from jsonl_session import JSONLSession, SessionDirectory, SessionNotFoundError
from jsonl_session.session import listing_cache
from jsonl_session.session.listing_cache import ListingCache

DAY = 86_400


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache


def make_folder(folder: Path, count: int, *, timestamps: bool = False) -> list[str]:
    """``count`` sessions, ``s00`` the newest, each a day older than the one before (file times)."""
    ids = [f"s{n:02d}" for n in range(count)]
    now = 1_790_000_000
    for n, session_id in enumerate(ids):
        session = JSONLSession(session_id, folder, timestamps=timestamps)
        session.add_items_sync([{"role": "user", "content": f"hello {n}"}] * (n % 3 + 1))
        if n % 2 == 0:
            session.set_metadata_sync(owner="ann" if n % 4 == 0 else "bob", tags=["even"])
        for path in folder.glob(f"{session_id}.jsonl*"):
            os.utime(path, (now - n * DAY, now - n * DAY))
    return ids


def test_pages_follow_each_other_newest_first_and_cover_the_listing_once(tmp_path: Path) -> None:
    ids = make_folder(tmp_path, 25)
    store = SessionDirectory(tmp_path)
    everything = store.list()
    assert [info.session_id for info in everything] == ids
    pages = [store.list(limit=10)]
    while pages[-1]:
        pages.append(store.list(limit=10, after=pages[-1][-1]))
    assert [len(page) for page in pages] == [10, 10, 5, 0]
    assert [info for page in pages for info in page] == everything
    assert store.list(limit=3, after="s04") == everything[5:8]  # after an id, as an app keeps it
    assert store.list(limit=0) == []
    with pytest.raises(SessionNotFoundError):
        store.list(after="no-such-id")
    with pytest.raises(ValueError):
        store.list(limit=-1)


def test_a_page_counts_only_matching_sessions(tmp_path: Path) -> None:
    make_folder(tmp_path, 25)
    store = SessionDirectory(tmp_path)
    first = store.list(owner="ann", limit=3)
    assert [info.session_id for info in first] == ["s00", "s04", "s08"]
    assert [info.owner for info in first] == ["ann"] * 3
    assert [info.session_id for info in store.list(owner="ann", limit=3, after=first[-1])] == [
        "s12",
        "s16",
        "s20",
    ]
    assert [info.items for info in first] == [1, 2, 3]


def test_a_file_changed_just_now_is_not_cached(tmp_path: Path) -> None:
    JSONLSession("fresh", tmp_path).add_items_sync([{"role": "user", "content": "hi"}])
    SessionDirectory(tmp_path).list()
    cache = ListingCache.load(str(tmp_path))
    assert cache.counts("fresh.jsonl", os.lstat(tmp_path / "fresh.jsonl")) is None
    assert cache.default_title("fresh.jsonl", os.lstat(tmp_path / "fresh.jsonl")) is False


def warm(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """List once with no racy window, so every file (however new) is cached."""
    monkeypatch.setattr(listing_cache, "RACY_NS", -(10**18))
    SessionDirectory(folder).list()


def test_a_cached_count_is_dropped_when_the_file_changes_in_any_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = JSONLSession("s", tmp_path, timestamps=False)
    session.add_items_sync([{"role": "user", "content": "aaaa"}, {"role": "user", "content": "bbbb"}])
    warm(tmp_path, monkeypatch)
    path = tmp_path / "s.jsonl"
    before = os.stat(path)

    # Same size, same modification time: only the change time (and the bytes) say it differs.
    three = b'{"a":1}\n{"a":2}\n{"b":""}\n'
    path.write_bytes(three.replace(b'""', b'"' + b"c" * (before.st_size - len(three)) + b'"'))
    assert path.stat().st_size == before.st_size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    (listed,) = SessionDirectory(tmp_path).list()
    assert listed.items == 3

    # Replaced by an editor: a new inode.
    replacement = tmp_path / "s.jsonl.new"
    replacement.write_bytes(b'{"role":"user","content":"x"}\n')
    os.replace(replacement, path)
    (listed,) = SessionDirectory(tmp_path).list()
    assert listed.items == 1


def cache_file(folder: Path) -> Path:
    path = ListingCache.load(str(folder)).path
    assert path is not None
    return Path(path)


def cache_bytes(
    folder: Path, entries: dict[str, list[int]], titles: bytes = b"", *, header: bytes | None = None
) -> bytes:
    """A cache file as the module docstring lays it out."""
    names = b"\0".join(name.encode() for name in entries)
    numbers = array("q", [number for entry in entries.values() for number in entry])
    return b"".join(
        [
            header or f"jsonl-session listing cache 2 {sys.byteorder}\n".encode(),
            os.path.realpath(folder).encode() + b"\n",
            len(entries).to_bytes(8, "little"),
            len(names).to_bytes(8, "little"),
            len(titles).to_bytes(8, "little"),
            names,
            numbers.tobytes(),
            titles,
        ]
    )


def test_the_cache_is_laid_out_as_documented(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "sessions"
    JSONLSession("s", folder, timestamps=False).add_items_sync([{"role": "user", "content": "hi"}] * 3)
    warm(folder, monkeypatch)
    stat = os.stat(folder / "s.jsonl")
    entry = [stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, 3, -1, -1, -1, -1, -1, 0, 0, 2]
    assert cache_file(folder).read_bytes() == cache_bytes(folder, {"s.jsonl": entry}, b"hi")


def test_a_cache_of_the_previous_layout_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # version 1 held 10 numbers per session and no titles: a listing reads the files again
    folder = tmp_path / "sessions"
    JSONLSession("s", folder, timestamps=False).add_items_sync([{"role": "user", "content": "hi"}] * 3)
    warm(folder, monkeypatch)
    good = cache_file(folder).read_bytes()
    stat = os.stat(folder / "s.jsonl")
    lying = [stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, 99, -1, -1, -1, -1, -1]
    names = b"s.jsonl"
    cache_file(folder).write_bytes(
        b"".join(
            [
                f"jsonl-session listing cache 1 {sys.byteorder}\n".encode(),
                os.path.realpath(folder).encode() + b"\n",
                (1).to_bytes(8, "little"),
                len(names).to_bytes(8, "little"),
                names,
                array("q", lying).tobytes(),
            ]
        )
    )
    (listed,) = SessionDirectory(folder).list()
    assert (listed.items, listed.default_title) == (3, "hi")
    assert cache_file(folder).read_bytes() == good


@pytest.mark.parametrize(
    "title",
    [(0, 3), (1, 2), (0, 241), (-1, 3), (0, -3), (2, 2)],
    ids=["past-the-end", "straddles", "too-long", "negative-offset", "unknown-code", "out-of-range"],
)
def test_a_cached_title_outside_the_titles_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, title: tuple[int, int]
) -> None:
    JSONLSession("s", tmp_path, timestamps=False).add_items_sync([{"role": "user", "content": "hi"}])
    warm(tmp_path, monkeypatch)
    stat = os.stat(tmp_path / "s.jsonl")
    entry = [stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, 1, -1, -1, -1, -1, -1, 0, *title]
    cache_file(tmp_path).write_bytes(cache_bytes(tmp_path, {"s.jsonl": entry}, b"hi"))
    (listed,) = SessionDirectory(tmp_path).list()
    assert listed.default_title == "hi"


def test_default_titles_are_cached_and_a_set_title_is_not_shadowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = JSONLSession("s", tmp_path, timestamps=False)
    session.add_items_sync(
        [
            {"role": "system", "content": "You are terse."},
            {"role": "assistant", "content": "the user said nothing yet"},
            {"role": "user", "content": "  Résumé\n of   the \U0001f600 " + "long " * 30},
        ]
    )
    JSONLSession("none", tmp_path, timestamps=False).add_items_sync([{"role": "assistant", "content": "x"}])
    warm(tmp_path, monkeypatch)
    expected = session.get_metadata_sync().default_title  # the one definition, as the viewer shows it
    assert expected is not None and expected.startswith("Résumé of the \U0001f600 long")
    for _ in range(2):  # read, then from the cache
        listed = {info.session_id: info for info in SessionDirectory(tmp_path).list()}
        assert (listed["s"].title, listed["s"].default_title, listed["s"].shown_title) == (
            None,
            expected,
            expected,
        )
        assert (listed["none"].default_title, listed["none"].shown_title) == (None, None)
    session.set_metadata_sync(title="Set")
    listed = {info.session_id: info for info in SessionDirectory(tmp_path).list()}
    assert (listed["s"].title, listed["s"].default_title, listed["s"].shown_title) == ("Set", None, "Set")


@pytest.mark.parametrize(
    "damage",
    [
        lambda good: b"not a cache at all",
        lambda good: good.replace(b"cache 2", b"cache 9"),
        lambda good: good[:-8],
        lambda good: good + b"\0" * 8,
        lambda good: good.replace(b"/sessions\n", b"/elsewhere\n"),
        lambda good: b"",
    ],
    ids=["garbage", "another-version", "truncated", "too-long", "another-folder", "empty"],
)
def test_a_cache_that_cannot_be_trusted_is_ignored_and_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: Any
) -> None:
    folder = tmp_path / "sessions"
    JSONLSession("s", folder, timestamps=False).add_items_sync([{"role": "user", "content": "hi"}])
    warm(folder, monkeypatch)
    good = cache_file(folder).read_bytes()
    cache_file(folder).write_bytes(damage(good))
    (listed,) = SessionDirectory(folder).list()
    assert listed.items == 1
    assert cache_file(folder).read_bytes() == good  # rebuilt


def test_a_lying_cache_entry_for_the_right_file_is_still_checked_against_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    JSONLSession("s", tmp_path, timestamps=False).add_items_sync([{"role": "user", "content": "hi"}])
    warm(tmp_path, monkeypatch)
    stat = os.stat(tmp_path / "s.jsonl")
    claims_another_size = [stat.st_ino, stat.st_size + 1, stat.st_mtime_ns, stat.st_ctime_ns, 999]
    cache_file(tmp_path).write_bytes(cache_bytes(tmp_path, {"s.jsonl": claims_another_size + [-1] * 8}))
    (listed,) = SessionDirectory(tmp_path).list()
    assert listed.items == 1
    matching_but_negative = [stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, -7]
    cache_file(tmp_path).write_bytes(cache_bytes(tmp_path, {"s.jsonl": matching_but_negative + [-1] * 8}))
    (listed,) = SessionDirectory(tmp_path).list()
    assert listed.items == 1


def test_no_cache_is_written_when_it_is_off_or_cannot_be(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    JSONLSession("s", tmp_path / "f").add_items_sync([{"role": "user", "content": "hi"}])
    monkeypatch.setattr(listing_cache, "RACY_NS", -(10**18))
    monkeypatch.setenv("JSONL_SESSION_CACHE", "off")
    assert SessionDirectory(tmp_path / "f").list()[0].items == 1
    assert not (tmp_path / "cache").exists()
    monkeypatch.delenv("JSONL_SESSION_CACHE")
    (tmp_path / "cache").write_text("a file where the cache folder would go")
    assert SessionDirectory(tmp_path / "f").list()[0].items == 1


OPENS = """
import sys
from jsonl_session import SessionDirectory
from jsonl_session.session import listing_cache
if sys.argv[4:] == ["warm"]:
    listing_cache.RACY_NS = -(10**18)  # the files were made just now: cache them anyway
page = SessionDirectory(sys.argv[1]).list(limit=int(sys.argv[2]), owner=sys.argv[3] or None)
print(",".join(f"{info.session_id}:{info.items}:{info.default_title}" for info in page))
"""


def session_files_opened(
    strace: str, folder: Path, tmp_path: Path, limit: int, owner: str = "", *, warm: bool = False
) -> tuple[list[str], list[str]]:
    """The page the child listed (``id:items:default title``), and the session files it opened
    (names, once per open)."""
    log = tmp_path / "strace.log"
    listed = subprocess.run(
        [strace, "-f", "-qq", "-e", "trace=open,openat", "-o", str(log), sys.executable, "-c", OPENS]
        + [str(folder), str(limit), owner]
        + (["warm"] if warm else []),
        check=True,
        capture_output=True,
        text=True,
        env=cli_env(XDG_CACHE_HOME=os.environ["XDG_CACHE_HOME"]),
    )
    page = [entry for entry in listed.stdout.strip().split(",") if entry]
    opened = sorted(
        line.split('"')[1].rsplit("/", 1)[1]
        for line in log.read_text().splitlines()
        if f'"{folder}/' in line and '.jsonl"' in line and "ENOENT" not in line
    )
    return page, opened


def test_a_page_of_an_unchanged_folder_opens_no_session_file(tmp_path: Path) -> None:
    strace = strace_or_skip()
    folder = tmp_path / "sessions"
    ids = make_folder(folder, 40, timestamps=True)

    # Cold: ranking reads each session's last line (for its .times), and only the page is counted.
    page, cold = session_files_opened(strace, folder, tmp_path, 5)
    assert len(page) == 5
    for entry in page:  # each with its count and default title
        n = int(entry.split(":")[0][1:])
        assert entry == f"s{n:02d}:{n % 3 + 1}:hello {n}"
    paged = [f"{entry.split(':')[0]}.jsonl" for entry in page]
    assert cold == sorted([f"{session_id}.jsonl" for session_id in ids] + paged)
    session_files_opened(strace, folder, tmp_path, 40, warm=True)  # whole listing, racy window off

    # Warm: nothing is opened, neither for the ranking nor for the counts and default titles.
    assert session_files_opened(strace, folder, tmp_path, 5) == (page, [])
    owned, opened = session_files_opened(strace, folder, tmp_path, 5, owner="ann")
    assert len(owned) == 5 and opened == []


def test_ls_limit_lists_the_most_recently_active_first(tmp_path: Path) -> None:
    make_folder(tmp_path, 6)
    shown = run(tmp_path, "ls", "--limit", "2", env=cli_env(XDG_CACHE_HOME=os.environ["XDG_CACHE_HOME"]))
    assert shown.code == 0, shown.err
    assert [line.split()[0] for line in shown.out.splitlines()[1:]] == ["s00", "s01"]
    listed = run(tmp_path, "ls", "--limit", "2", "--json", "--user", "ann")
    assert [orjson.loads(line)["id"] for line in listed.out.splitlines()] == ["s00", "s04"]
