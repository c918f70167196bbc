"""Forked children close the session descriptors they inherit, so an idle child never holds a lock.

``flock`` locks belong to the open file description, which a forked child shares through its
inherited descriptor: a child that idles (a worker pool, a shell-out that forks first) would
keep a dead writer's lock alive (tests/core/test_lock_fork.py). Anything that holds session
descriptors registers here, and right after ``fork`` the child closes its copies.
"""

from __future__ import annotations

import os
import weakref

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from typing import Any, Protocol

    class ForkAware(Protocol):
        """What :func:`close_in_forked_child` needs: a method run in the child right after ``fork``."""

        def after_fork_in_child(self) -> None: ...


_fork_aware: weakref.WeakSet[Any] = weakref.WeakSet()


def close_in_forked_child(owner: ForkAware) -> None:
    """Call ``owner.after_fork_in_child()`` in every child forked while ``owner`` lives.

    The method should close (never unlock) the descriptors the child inherited, so that an
    idle child holds no lock. Only a weak reference is kept.

    Example:
        >>> class Tail:
        ...     def after_fork_in_child(self) -> None: ...  # os.close() inherited descriptors
        >>> close_in_forked_child(Tail())
    """
    _fork_aware.add(owner)


def _after_fork_in_child() -> None:
    for owner in list(_fork_aware):
        owner.after_fork_in_child()


os.register_at_fork(after_in_child=_after_fork_in_child)
