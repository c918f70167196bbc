"""The options of a watch, in one object (the four entry points share it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..core.locking import DEFAULT_LOCK_TIMEOUT, check_lock_timeout
from .engine import Known, Start

DEFAULT_STEP_MS = 1
DEFAULT_IDLE_STEP_MS = 20
DEFAULT_POLL_DELAY_MS = 300
HOT_SECONDS = 1.0
"""How long after a change the watcher keeps checking every ``step_ms`` before slowing down."""
TICK_SECONDS = 1.0
"""How often the files are checked even without an event (a safety net for lost events)."""


class StopFlag(Protocol):
    """Anything with ``is_set()``: ``threading.Event``, ``asyncio.Event``, ``anyio.Event``..."""

    def is_set(self) -> bool: ...


@dataclass(frozen=True)
class WatchOptions:
    """How a watch starts, wakes up and stops (see :func:`~jsonl_session.watch.watch_session`).

    Attributes:
        start: ``"all"`` (replay the items there, then follow), ``"now"``, or the newest ``n``
            (or, for a session watch, a :class:`~jsonl_session.watch.engine.Known`: where a
            caller that read the file under its shared lock left off).
        stop_event: Anything with ``is_set()``; once set, the watch delivers what is in the
            files and ends.
        force_polling: Poll instead of using inotify (network file systems). None: as
            ``watchfiles`` decides (``WATCHFILES_FORCE_POLLING``, WSL).
        poll_delay_ms: How often to poll when polling.
        step_ms: How often to check for events while sessions are active (latency).
        idle_step_ms: How often once they have been quiet for ``HOT_SECONDS`` (idle CPU).
        lock_timeout: Seconds to wait for another process's lock (None, NaN, negatives refused).
        raise_interrupt: Blocking form only: Ctrl-C re-raises ``KeyboardInterrupt`` (True)
            or just ends the iteration.

    Example:
        >>> WatchOptions(start=5, step_ms=2).idle_step_ms
        20
    """

    start: Start = "all"
    stop_event: StopFlag | None = None
    force_polling: bool | None = None
    poll_delay_ms: int = DEFAULT_POLL_DELAY_MS
    step_ms: int = DEFAULT_STEP_MS
    idle_step_ms: int = DEFAULT_IDLE_STEP_MS
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    raise_interrupt: bool = True

    def __post_init__(self) -> None:
        start = self.start
        if isinstance(start, bool) or not (
            start in ("all", "now") or (isinstance(start, int) and start >= 0) or isinstance(start, Known)
        ):
            raise ValueError(f'start must be "all", "now" or a non-negative int, not {start!r}')
        for name in ("poll_delay_ms", "step_ms", "idle_step_ms"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int (milliseconds), not {value!r}")
        object.__setattr__(self, "lock_timeout", check_lock_timeout(self.lock_timeout))
