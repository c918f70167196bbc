"""The two ``flock`` calls a session lock is made of, imported only when first needed.

Exclusive locks go through filelock's ``lock_descriptor`` (the locking dependency); filelock has
no shared lock on a descriptor, so readers call ``flock(LOCK_SH)`` themselves.
"""

from __future__ import annotations

import fcntl
import functools

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from collections.abc import Callable


@functools.cache
def lock_exclusive() -> Callable[..., bool]:
    """filelock's ``lock_descriptor``, imported on the first write lock, not at start-up
    (filelock loads logging, asyncio and more); cached, as an import statement per lock is not free."""
    from filelock import lock_descriptor

    return lock_descriptor


def lock_shared(fd: int) -> bool:
    """filelock has no shared lock on a descriptor; readers use flock's LOCK_SH directly."""
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
