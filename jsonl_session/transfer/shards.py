"""Which of several databases holds a session: a stable hash of its id, the same in every tool.

``mirror --to URL --to URL ...`` spreads sessions over the databases given, and ``import`` reads
them back, by this rule, so any other program can find a session without asking the mirror:

    home = int.from_bytes(sha256(session_id.encode("utf-8")).digest()[:8], "big") % len(urls)

``urls`` in the order they were given. The same id always lands on the same URL as long as
the list is the same; a list of another length moves most sessions (re-copy them with
``export --all`` to each new home, then ``mirror --delete`` removes nothing that has a file).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TypeVar

__all__ = ["home_of", "shard_of"]

T = TypeVar("T")


def shard_of(session_id: str, count: int) -> int:
    """The index, among ``count`` databases, of the one that holds ``session_id``.

    Example:
        >>> shard_of("convo_122", 2), shard_of("convo_123", 2), shard_of("convo_122", 1)
        (1, 0, 0)
    """
    digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % count


def home_of(session_id: str, shards: Sequence[T]) -> T:
    """The one of ``shards`` (in the order given) that holds ``session_id``."""
    return shards[shard_of(session_id, len(shards))]
