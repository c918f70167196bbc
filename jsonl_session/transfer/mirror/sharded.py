"""Several databases as one mirror target: each session in the one ``transfer.shards.shard_of`` names.

A :class:`ShardedTarget` routes each ``sync`` to the session's home database, lists what all of
them hold, and deletes a session wherever it is stored (a copy left in another database by an
earlier list of URLs included). Each database keeps its own rules (which ids it can hold, its
transactions); a session is still one transaction in one database.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..shards import home_of
from .plan import Applied

if TYPE_CHECKING:  # targets opens this module: a runtime import back would be a cycle
    from .targets import Target

__all__ = ["ShardedTarget"]


class ShardedTarget:
    """The databases ``targets`` (in the order of their URLs) as one ``targets.Target``."""

    def __init__(self, targets: Sequence[Target]) -> None:
        self.targets = list(targets)
        self.url = ", ".join(target.url for target in self.targets)
        self.kind = "sharded"

    async def check(self) -> None:
        for target in self.targets:
            await target.check()

    async def listing(self) -> list[object]:
        found: list[object] = []
        for target in self.targets:
            found += await target.listing()
        return found

    async def sync(
        self, session_id: str, texts: list[str], start: int = 0, *, dry_run: bool = False
    ) -> Applied:
        return await home_of(session_id, self.targets).sync(session_id, texts, start, dry_run=dry_run)

    async def remove(self, session_id: str, *, dry_run: bool = False) -> int | None:
        removed = [await target.remove(session_id, dry_run=dry_run) for target in self.targets]
        found = [count for count in removed if count is not None]
        return sum(found) if found else None
