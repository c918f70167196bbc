"""How long, and how often, a caller waits for a lock another process holds.

Waiting is never unbounded by default (a ``lock_timeout`` is a number of seconds, checked up
front), and polling backs off so that a long wait costs little CPU while a short one (an
append holds the lock for microseconds) ends quickly.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

__all__ = ["DEFAULT_LOCK_TIMEOUT", "backoff_delays", "check_lock_timeout"]

DEFAULT_LOCK_TIMEOUT = 10.0
"""Seconds to wait for another process's lock before :class:`LockTimeout` (never forever)."""


# Polling backoff while another process holds the lock: first retry after 0.2 ms (an
# append holds it for microseconds), then doubling up to 5 ms so waiting costs little CPU.
_FIRST_DELAY = 0.0002
_MAX_DELAY = 0.005


def check_lock_timeout(value: Any) -> float:
    """A lock wait must be bounded: refuse None, negatives, NaN and non-numbers up front.

    Example:
        >>> check_lock_timeout(2)
        2.0
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(
            f"lock_timeout must be a number of seconds >= 0, not {value!r} "
            "(waiting forever for another process is never the default)"
        )
    return float(value)


def backoff_delays() -> Iterator[float]:
    """Waits between attempts on a lock held elsewhere: 0.2 ms, doubling up to 5 ms."""
    delay = _FIRST_DELAY
    while True:
        yield delay
        delay = min(delay * 2, _MAX_DELAY)
