"""A served transcript page, streamed from its snapshot of the session file in one pass.

The page's bytes are read once, a piece at a time as the client takes them: each piece makes
the items' views, adds up the turns (``history.page_data.AboutLines``) and fingerprints the
lines for their times (``core.item_times``, matched against ``.times`` at the end) and indexes
them for the session's follower (``watch.engine.LineIndex``: it reads only what follows). What is
known only once the items are written (the turns, the times, the version: ``Hub.settle``)
comes after them in the page's data, and the pass hands the shown session what rendering its
next changes needs (``shown.PageRead``). tests/serve/test_page_reads.py counts the reads.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from urllib.parse import quote

from ..core import reads, scanner
from ..core.errors import JSONLSessionError
from ..core.item_times import align, fingerprint, matching_records, times_path
from ..core.scanner import Line, Scan
from ..history.page_data import AboutLines, about_of
from ..render.html import Live, json_array_parts, live_head, live_rest
from ..render.views import ViewBuilder, encode_view, views_of_scans
from ..watch.engine import LineIndex
from .shown import PageRead, PageSnapshot

__all__ = ["PAGE_PIECE_BYTES", "page_parts"]

PAGE_PIECE_BYTES = 64 * 1024
"""How much of a session file a page's stream reads, renders and writes at a time (held per client)."""


def page_parts(
    page: PageSnapshot, settle: Callable[[PageSnapshot, PageRead], tuple[int, str]], *, lock_timeout: float
) -> Iterator[bytes]:
    """The page, in pieces; ``settle`` (``Hub.settle``) says, once the items are written, its version.

    Memory holds one piece (:data:`PAGE_PIECE_BYTES` of the file and its views) plus two
    numbers per line, whatever the session's size and however slowly the client reads.
    """
    path = page.path
    about = AboutLines()
    numbers: array[int] = array("q")
    crcs: array[int] = array("Q")

    def take(line: Line, item: dict[str, Any] | None) -> None:
        about.add_line(line, item)
        numbers.append(line.number)
        crcs.append(fingerprint(line.data))

    scans = reads.scan_file(page.fd, page.size, piece_bytes=PAGE_PIECE_BYTES)
    first = _first(scans)  # held for the header: its first user message titles the page
    opening = AboutLines()
    for line in (line for scan in first for line in scan.lines if b'"user"' in line.data):
        opening.add_line(line, scanner.parse_item(line.data))
        if opening.first_question() is not None:
            break
    if opening.first_question() is None and page.size > PAGE_PIECE_BYTES:  # further on: read up to it
        head = _about(lambda: about_of(path, page.fd, page.size, turns=False, lock_timeout=lock_timeout))
    else:
        head = _about(lambda: opening.about(path, turns=False, lock_timeout=lock_timeout))
    yield live_head(page.session_id, meta=str(path), about=head)

    builder = ViewBuilder()
    counted = [0, 0]  # views, bad lines

    def encoded(views: Iterable[Any]) -> Iterator[bytes]:
        for view in views:
            counted[0] += 1
            counted[1] += view.tone == "invalid"
            yield encode_view(view)

    index = LineIndex()
    views = views_of_scans(_indexed(_chain(first, scans), index), builder, torn_tail=False, each=take)
    yield from json_array_parts(encoded(views), piece_bytes=PAGE_PIECE_BYTES)
    whole = _about(lambda: about.about(path, turns=True, lock_timeout=lock_timeout))
    try:  # when each item was added: a page without times beats no page
        times = align(crcs, matching_records(times_path(path), crcs)) if crcs else []
    except OSError:
        times = []
    dated = [[number, ms] for number, ms in zip(numbers, times) if ms is not None]
    version, problem = settle(page, PageRead(counted[0], builder, counted[1] > 0, index))
    events = f"events?id={quote(page.session_id, safe='')}&v={version}"
    yield from live_rest(Live(events=events, version=version, problem=problem), about=whole, times=dated)


def _first(scans: Iterator[Scan]) -> list[Scan]:
    scan = next(scans, None)
    return [] if scan is None else [scan]


def _chain(first: list[Scan], rest: Iterator[Scan]) -> Iterator[Scan]:
    yield from first
    yield from rest


def _indexed(scans: Iterator[Scan], index: LineIndex) -> Iterator[Scan]:
    for scan in scans:
        index.add(scan)
        yield scan


def _about(read: Callable[[], dict[str, Any]]) -> dict[str, Any] | None:
    """The page's header and turns; a broken .meta or usage log hides nothing else."""
    try:
        return read()
    except (OSError, JSONLSessionError):
        return None
