"""What the hub keeps of a session a page has open: its follower and its items as views.

A *mirror* holds each item already rendered as its view (escaped JSON bytes, each in an
allocation of its own size) and the version a page is at; ``hub`` makes one when a page asks
for a session and drops it when no page has shown it for a while.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from ..render.html import script_json
from ..render.views import ItemView, ViewBuilder, encode_view
from ..watch import SessionWatchSync

__all__ = ["Mirror", "WatchedFile", "kept_view"]


@dataclass
class Mirror:
    """An open session: its follower, its views (escaped JSON), and the version they are at."""

    watch: SessionWatchSync
    version: int = 0
    views: list[bytes] = field(default_factory=list)
    builder: ViewBuilder = field(default_factory=ViewBuilder)
    problem: str = ""  # why the session cannot be read now, until it can again
    fresh: bool = True  # the follower's next look is its first: it delivers every item
    used: float = field(default_factory=time.monotonic)


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
