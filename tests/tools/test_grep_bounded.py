"""``grep`` reads in bounded pieces and stops and goes on where it was: the answer never changes.

A search holds at most ``HELD_BYTES`` of candidate lines before it hands them on (then it goes
on from the byte where it stopped, the file locked again), and never holds a line that cannot
match: Python reads a piece at a time, and the system's grep, whose memory is limited, leaves a
line longer than its limit to Python. Each case here compares the answer with the plain one.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from jsonl_session.core.locking import DEFAULT_LOCK_TIMEOUT
from jsonl_session.tools import grep, system_grep

ENGINES = pytest.mark.parametrize(
    "engine_env", [{}, {system_grep.DISABLE_VARIABLE: "1"}], ids=["system grep", "python"], indirect=True
)


@pytest.fixture
def engine_env(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name, value in request.param.items():
        monkeypatch.setenv(name, value)
    yield
    assert not system_grep._unusable  # stopping early, or grep's memory running out, is no misbehaviour


def item(text: str) -> bytes:
    return json.dumps({"role": "user", "content": text}).encode()


def found(paths: list[Path], word: str, held_bytes: int = grep.HELD_BYTES) -> list[tuple[int, int, str]]:
    prefilter = grep.prefilter_for(word, ignore_case=False)
    items = grep.matching_items(paths, prefilter, DEFAULT_LOCK_TIMEOUT, held_bytes=held_bytes)
    return [(index, number, value["content"]) for index, number, value in items]


def long_text(size: int, word_at: int | None = None) -> str:
    """``size`` characters of ``x``, with ``needle`` at ``word_at`` if given."""
    if word_at is None:
        return "x" * size
    return "x" * word_at + "needle" + "x" * (size - word_at - 6)


@pytest.fixture
def folder(tmp_path: Path) -> list[Path]:
    """Three sessions: short lines, a BOM, lines longer than a piece with and without the word
    (one with the word across two pieces), a torn tail."""
    head = len(b'{"role": "user", "content": "')
    piece = 1 << 20
    first = [item("needle one"), item("nothing"), item(long_text(3 * piece)), item("needle two")]
    start = len(b"\n".join(first)) + 1 + head  # where the next line's text starts in the file
    across = (start // piece + 2) * piece - 3 - start  # "needle" from 3 bytes before a piece ends
    first += [item(long_text(2 * piece, word_at=across)), item("needle three")]
    second = [b"\xef\xbb\xbf" + item("needle at the start"), b"", item("needle after a blank")]
    third = [item(f"needle {n}") for n in range(50)] + [b'{"role": "user", "content": "needle torn']
    paths = []
    for name, lines in (("a", first), ("b", second), ("c", third)):
        path = tmp_path / f"{name}.jsonl"
        path.write_bytes(b"\n".join(lines) + (b"" if name == "c" else b"\n"))
        paths.append(path)
    return paths


@ENGINES
def test_stopping_after_every_line_gives_the_same_answer(folder: list[Path], engine_env: None) -> None:
    whole = found(folder, "needle")
    assert [(index, number) for index, number, _ in whole][:6] == [
        (0, 1),
        (0, 4),
        (0, 5),
        (0, 6),
        (1, 1),
        (1, 3),
    ]
    assert len(whole) == 6 + 50
    assert found(folder, "needle", held_bytes=1) == whole
    assert found(folder, "needle", held_bytes=3 << 20) == whole


@ENGINES
def test_a_session_replaced_while_its_hits_are_printed_is_read_again_past_them(
    tmp_path: Path, engine_env: None
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(item(f"needle {n}") for n in range(4)) + b"\n")
    items = grep.matching_items([path], grep.prefilter_for("needle", ignore_case=False), 5, held_bytes=1)
    assert next(items)[1:] == (1, {"role": "user", "content": "needle 0"})
    # between two batches the session is rewritten (as edit or a compaction does): a new file
    replaced = tmp_path / "new.jsonl"
    replaced.write_bytes(b"\n".join(item(f"needle {n} again") for n in range(5)) + b"\n")
    os.replace(replaced, path)
    assert [(number, value["content"]) for _, number, value in items] == [
        (2, "needle 1 again"),
        (3, "needle 2 again"),
        (4, "needle 3 again"),
        (5, "needle 4 again"),
    ]


def test_a_line_longer_than_greps_memory_is_left_to_python(tmp_path: Path) -> None:
    # grep holds the line it reads; past its memory limit it stops, and Python goes on from
    # the last line it found, a piece at a time
    size = system_grep.DATA_LIMIT + (4 << 20)
    before = tmp_path / "a.jsonl"
    before.write_bytes(item("needle before") + b"\n")
    hostile = tmp_path / "b.jsonl"
    lines = [
        item("needle 1"),
        item(long_text(size)),
        item("needle 3"),
        item(long_text(size, word_at=size - 9)),
    ]
    hostile.write_bytes(b"\n".join(lines) + b"\n")
    after = tmp_path / "c.jsonl"
    after.write_bytes(item("needle after") + b"\n")
    run = system_grep.start([before, hostile, after], [b"needle"], ignore_case=False)
    assert run is not None
    with run:
        records = [(group, [(at, number) for at, number, _, _ in group.records()]) for group in run.groups()]
    assert any(group.failed for group, _ in records)
    assert not system_grep._unusable
    answer = [
        (index, number, value["content"][:12])
        for index, number, value in grep.matching_items(
            [before, hostile, after], grep.prefilter_for("needle", ignore_case=False), 5
        )
    ]
    assert answer == [
        (0, 1, "needle befor"),
        (1, 1, "needle 1"),
        (1, 3, "needle 3"),
        (1, 4, "xxxxxxxxxxxx"),
        (2, 1, "needle after"),
    ]


CORPUS = Path(__file__).parent.parent / "corpus"
TRICKY = [
    b'{"a": 1e400}',
    b'{"a": -1e400}',
    b'{"a": 1e-400}',
    b'{"a": 18446744073709551615}',
    b'{"a": 18446744073709551616}',
    b'{"a": -9223372036854775808}',
    b'{"a": -9223372036854775809}',
    b'{"a": 1' + b"0" * 400 + b"}",
    b'{"a": 1' + b"0" * 5000 + b"}",
    b'{"a": NaN}',
    b'{"a": -Infinity}',
    b'{"a": "\\ud800"}',
    b'{"a": "\\u00e9t\\u00e9"}',
    b'{"a": "\xed\xa0\x80"}',
    b'{"a": "\x7f"}',
    b"[" * 999 + b"]" * 999,
    b"[" * 1024 + b"]" * 1024,
    b"[" * 1025 + b"]" * 1025,
    b'\t{"a": -0.0, "b": 0.1e1} ',
]


def _decoded(loads: Callable[[bytes], object], line: bytes) -> tuple[str, object]:
    try:
        value = loads(line)
    except ValueError:
        return "refused", None
    return type(value).__name__, value


@pytest.mark.parametrize(
    "source", [*sorted(CORPUS.glob("*.jsonl")), "tricky"], ids=lambda source: getattr(source, "name", source)
)
def test_a_few_lines_are_decoded_without_orjson_exactly_as_orjson_decodes_them(
    source: Path | str,
) -> None:
    import orjson

    lines = TRICKY if source == "tricky" else Path(source).read_bytes().split(b"\n")
    for line in lines:
        expected = _decoded(orjson.loads, line)
        got = _decoded(grep._loads_without_orjson, line)
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(20_000)  # comparing 1,000 levels of lists recurses
        try:
            assert got == expected, line[:80]
        finally:
            sys.setrecursionlimit(limit)
