"""One session file as a document: an HTML page, Markdown, or diff text (``show --html``, ``textconv``).

The glue between a file on disk and the renderers: read the bytes under the session's shared
lock, turn every line into a view (:mod:`jsonl_session.render.views`), hand the views to a renderer.

Example:
    >>> page = session_html("sessions/convo_123.jsonl", "convo_123")     # doctest: +SKIP
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..core.locking import DEFAULT_LOCK_TIMEOUT
from .diff_text import diff_text
from .html import transcript_page
from .markdown import markdown
from .sizes import human_size
from .views import ItemView, encode_views, newest_views, read_file, safe, views_of_lines


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
        shown = len(self.views)
        count = f"{self.total} item{'' if self.total == 1 else 's'}"
        if shown < self.total:
            count = f"the newest {shown} of {count}"
        return f"{self.path} · {count} · {human_size(self.size)}"


def read_views(
    path: str | os.PathLike[str], *, newest: int | None = None, lock_timeout: float = DEFAULT_LOCK_TIMEOUT
) -> Views:
    """Every line of the session file at ``path`` as a view (only the ``newest`` N when given)."""
    if newest is not None:
        return Views(Path(path), *newest_views(path, newest, lock_timeout=lock_timeout))
    data = read_file(path, lock_timeout=lock_timeout)
    views = views_of_lines(data)
    return Views(Path(path), views, len(views), len(data))


def session_html(
    path: str | os.PathLike[str],
    title: str,
    *,
    newest: int | None = None,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
) -> tuple[bytes, Views]:
    """A self-contained HTML transcript of the file at ``path``, and the views it shows."""
    found = read_views(path, newest=newest, lock_timeout=lock_timeout)
    return transcript_page(title, encode_views(found.views), meta=found.meta), found


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
