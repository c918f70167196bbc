"""What the hub keeps of a session a page has open: its follower, its version, and its views while needed.

A *mirror* holds the version a page is at, how many items the session has and what its
``ViewBuilder`` remembers (handoff calls), so that changes can be sent as views. The items
themselves, rendered (escaped JSON bytes, each in an allocation of its own size), are kept
only while an event stream may need them whole (a ``reset``): pages are streamed from the
file. ``hub`` makes a mirror when a page asks for a session and drops it when no page has
shown it for a while.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from ..render.html import script_json
from ..render.views import ItemView, ViewBuilder, encode_view
from ..watch import SessionWatchSync

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["Mirror", "PageSnapshot", "WatchedFile", "kept_view"]


@dataclass
class Mirror:
    """An open session: its follower, the version it is at, and its views (escaped JSON) if rendered.

    ``cuts`` counts the changes that were more than appends: a page streamed from the file
    while it stayed the same shows exactly the bytes of its version.
    """

    watch: SessionWatchSync
    version: int = 0
    count: int = 0  # items (views), numbered by position
    views: list[bytes] | None = None  # None: not rendered (no event stream needs them whole)
    cuts: int = 0
    builder: ViewBuilder = field(default_factory=ViewBuilder)
    seen: tuple[int, ...] | None = None  # the file's stat when the follower last looked under a page's lock
    problem: str = ""  # why the session cannot be read now, until it can again
    fresh: bool = True  # the follower's next look is its first: it delivers every item
    used: float = field(default_factory=time.monotonic)


@dataclass
class PageSnapshot:
    """A session as one page shows it: the first ``size`` bytes of the file open on ``fd``, at ``version``.

    The descriptor was taken under the session's shared lock (``Hub.open_page``): the page is
    read from it as the client takes it, and closing the snapshot closes it.
    """

    session_id: str
    path: Path
    fd: int
    size: int
    version: int
    cuts: int  # the mirror's count of cuts then (``Hub.settle``)
    problem: str

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        os.close(self.fd)


def kept_view(view: ItemView) -> bytes:
    """A view as escaped JSON, in a bytes object of its own size.

    orjson's result sits in a 4 KB allocation however short it is: kept as they come, the
    views of a 10 MB session took 96 MB instead of 11 (tracemalloc).
    """
    return memoryview(script_json(encode_view(view))).tobytes()


@dataclass(frozen=True)
class WatchedFile:
    """What a session watch needs of a session (``watch.WatchedSession``), without opening one."""

    directory: Path
    session_id: str
    lock_timeout: float
