"""Work on many sessions at once, a bounded number at a time, results in order.

Both the copies and the mirror compare and write sessions independently, so round trips to a
remote database overlap; a bound keeps a small connection pool from queueing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

__all__ = ["each"]

T = TypeVar("T")
R = TypeVar("R")


async def each(
    ids: Sequence[T],
    work: Callable[[T], Awaitable[R]],
    progress: Callable[[int, int], None] | None,
    concurrency: int,
) -> list[R]:
    """``work`` on every id, ``concurrency`` at a time; results in the order of ``ids``.

    If one raises (an error not about its session: the connection dropped), the others are
    cancelled: each is all or nothing, so a re-run finishes the job.
    """
    slots = asyncio.Semaphore(max(1, concurrency))
    done = 0
    if progress is not None:
        progress(0, len(ids))

    async def one(key: T) -> R:
        nonlocal done
        async with slots:
            result = await work(key)
        done += 1
        if progress is not None:
            progress(done, len(ids))
        return result

    tasks = [asyncio.ensure_future(one(key)) for key in ids]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
