"""One session file as a document: an HTML page, Markdown, or diff text (``show --html``, ``textconv``).

The glue between a file on disk and the renderers: read the bytes under the session's shared
lock, turn every line into a view (:mod:`jsonl_session.render.views`), hand the views to a renderer.

``show --html`` streams (:func:`write_session_html`): the file is copied under its lock to a
temporary file (a pop truncates in place, so it cannot be read after the lock is let go),
then rendered from the copy a piece at a time, each piece written as it is made. Peak memory
stays that of one piece whatever the session's size: a 100,000-item session (46 MB of HTML)
peaked at 259 MB when the page was built whole (tests/render/test_html_streaming.py).

Example:
    >>> page = session_html("sessions/convo_123.jsonl", "convo_123")     # doctest: +SKIP
    >>> with open("convo.html", "wb") as out:                           # doctest: +SKIP
    ...     written = write_session_html("sessions/convo_123.jsonl", "convo_123", out)
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from ..core import codec, item_times, reads, scanner
from ..core.locking import DEFAULT_LOCK_TIMEOUT
from ..core.scanner import Scan
from ..core.transaction import Transaction
from .diff_text import diff_text
from .html import transcript_page, transcript_parts
from .markdown import markdown
from .sizes import human_size
from .views import (
    ItemView,
    encode_view,
    encode_views,
    newest_views,
    read_file,
    safe,
    scan_lines,
    views_of_lines,
    views_of_scans,
)
from .views import _reason as bad_reason

COPY_PIECE = 1024 * 1024
"""Bytes copied at a time from a session to the temporary copy ``show --html`` renders from."""


@dataclass(frozen=True)
class Views:
    """The views of a file, and which of its lines could not be read (shown as they are)."""

    path: Path
    views: list[ItemView]
    total: int
    size: int

    @property
    def unreadable(self) -> list[int]:
        """Line numbers of bad lines and torn tails, for a warning."""
        return [view.number for view in self.views if view.kind == "invalid"]

    @property
    def meta(self) -> str:
        """``sessions/x.jsonl · 12 items · 4.1 KB`` (or ``the newest 5 of 12 items``)."""
        return _meta(self.path, len(self.views), self.total, self.size)


def _meta(path: Path, shown: int, total: int, size: int) -> str:
    count = f"{total} item{'' if total == 1 else 's'}"
    if shown < total:
        count = f"the newest {shown} of {count}"
    return f"{path} · {count} · {human_size(size)}"


def read_views(
    path: str | os.PathLike[str], *, newest: int | None = None, lock_timeout: float = DEFAULT_LOCK_TIMEOUT
) -> Views:
    """Every line of the session file at ``path`` as a view (only the ``newest`` N when given)."""
    if newest is not None:
        return Views(Path(path), *newest_views(path, newest, lock_timeout=lock_timeout))
    data = read_file(path, lock_timeout=lock_timeout)
    views = views_of_lines(data)
    return Views(Path(path), views, len(views), len(data))


@dataclass(frozen=True)
class Line:
    """One non-blank line of a session file: its item, or why it is not one (``reason``)."""

    number: int
    item: dict[str, Any] | None
    raw: bytes
    reason: str | None


def lines_leniently(
    path: str | os.PathLike[str], *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT
) -> list[Line]:
    """Every non-blank line of the file, a bad one with its reason instead of an error.

    For ``show`` and ``tail`` once the strict read refused the file: they show what can be read
    and flag the rest, as the HTML page does.
    """
    data = read_file(path, lock_timeout=lock_timeout)
    last = scanner.scan_lines(data).newlines + 1  # after the last newline: a torn tail if not an item
    return [
        Line(number, item, raw, None)
        if item is not None
        else Line(
            number, None, raw, "incomplete last line (torn tail)" if number == last else bad_reason(raw)
        )
        for number, item, raw in scan_lines(data)
    ]


def session_html(
    path: str | os.PathLike[str],
    title: str,
    *,
    newest: int | None = None,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
) -> tuple[bytes, Views]:
    """A self-contained HTML transcript of the file at ``path``, and the views it shows."""
    found = read_views(path, newest=newest, lock_timeout=lock_timeout)
    times = line_times(path, lock_timeout, newest=newest)
    return transcript_page(title, encode_views(found.views), meta=found.meta, times=times), found


@dataclass
class Written:
    """What :func:`write_session_html` wrote: how many items, and which lines could not be read."""

    path: Path
    count: int = 0
    unreadable: int = 0
    first_unreadable: list[int] = field(default_factory=list)
    """The line numbers of the first five unreadable lines (bad lines and torn tails)."""


def write_session_html(
    path: str | os.PathLike[str],
    title: str,
    out: BinaryIO,
    *,
    newest: int | None = None,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    about: Mapping[str, Any] | None = None,
) -> Written:
    """Write the HTML transcript of the file at ``path`` to ``out``, a piece at a time.

    The same page as :func:`session_html`, without ever holding it whole: the session is
    copied under its shared lock (writers wait only for the copy), counted, then rendered
    from the copy, each piece written to ``out`` as it is made. ``about`` is the header and
    turns panel's data (``history.page_data.page_about``; see ``html.transcript_page``).
    """
    if newest is not None:  # at most ``newest`` views: small by request
        found = read_views(path, newest=newest, lock_timeout=lock_timeout)
        written = Written(Path(path))
        times = line_times(path, lock_timeout, newest=newest)
        encoded = map(encode_view, _noted(found.views, written))
        out.writelines(transcript_parts(title, encoded, meta=found.meta, about=about, times=times))
        return written
    with tempfile.TemporaryFile(prefix="jsonl-session-show-") as copy:
        size = _copy_locked(path, copy, lock_timeout)
        fd = copy.fileno()
        total = sum(len(scan.lines) + _tail(scan) for scan in reads.scan_file(fd, size))
        meta = _meta(Path(path), total, total, size)
        written = Written(Path(path))
        times = item_times.numbered_times(path, reads.scan_file(fd, size))  # when each item was added
        views = _noted(views_of_scans(reads.scan_file(fd, size)), written)
        out.writelines(transcript_parts(title, map(encode_view, views), meta=meta, about=about, times=times))
    return written


def line_times(
    path: str | os.PathLike[str], lock_timeout: float, *, newest: int | None = None
) -> list[list[int]]:
    """``[line number, ms]`` of the (newest) items of the session at ``path`` whose time is known.

    Read under the session's shared lock; what a page needs to show when each item was added."""
    with Transaction(Path(path), write=False, timeout=lock_timeout) as file:
        if not file.exists:
            return []
        return item_times.numbered_times(path, reads.scan_file(file.fd, file.size), newest=newest)


def open_private(output: str | os.PathLike[str], session: str | os.PathLike[str]) -> BinaryIO:
    """Open ``output`` for writing with ``session``'s permission bits (a 0600 session: a 0600 page).

    A file that is there already is truncated and given those bits too (before anything is
    written to it); something that is not a regular file (``/dev/stdout``) is left as it is.

    Example:
        >>> with open_private("convo.html", "sessions/convo_123.jsonl") as out:   # doctest: +SKIP
        ...     out.write(b"...")
    """
    mode = stat.S_IMODE(os.stat(session).st_mode) & 0o666
    fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), mode)
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.fchmod(fd, mode)
        return open(fd, "wb")
    except BaseException:
        os.close(fd)
        raise


def _copy_locked(path: str | os.PathLike[str], copy: BinaryIO, lock_timeout: float) -> int:
    """Copy the session at ``path`` into ``copy`` under its shared lock; its size."""
    with Transaction(Path(path), write=False, timeout=lock_timeout) as file:
        if not file.exists:
            raise FileNotFoundError(2, "No such file or directory", str(path))
        size = os.fstat(file.fd).st_size
        copy.writelines(
            reads.read_range(file.fd, start, min(size, start + COPY_PIECE))
            for start in range(0, size, COPY_PIECE)
        )
    copy.flush()
    return size


def _tail(scan: Scan) -> int:
    """1 if ``scan`` ends with a torn tail (a view of its own), else 0."""
    return 1 if scan.pending and not codec.is_blank(scan.pending) else 0


def _noted(views: Iterator[ItemView] | list[ItemView], written: Written) -> Iterator[ItemView]:
    for view in views:
        written.count += 1
        if view.kind == "invalid":
            written.unreadable += 1
            if len(written.first_unreadable) < 5:
                written.first_unreadable.append(view.number)
        yield view


def session_markdown(
    path: str | os.PathLike[str],
    title: str,
    *,
    newest: int | None = None,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
) -> tuple[str, Views]:
    """The file at ``path`` as GitHub-flavoured Markdown, and the views it shows."""
    found = read_views(path, newest=newest, lock_timeout=lock_timeout)
    return safe(markdown(title, found.views, meta=found.meta)), found


def file_diff_text(path: str | os.PathLike[str], *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> str:
    """The stable transcript text ``git diff`` compares (see :mod:`jsonl_session.render.diff_text`)."""
    return safe(diff_text(read_views(path, lock_timeout=lock_timeout).views))
