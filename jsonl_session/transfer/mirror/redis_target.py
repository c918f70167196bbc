"""The mirror's Redis side: compare and apply in one ``MULTI``/``EXEC``, in the SDK's own keys.

The keys are those ``RedisSession`` reads and writes: the list ``agents:session:<id>:messages``
(one JSON text per item, in order) and the hash ``agents:session:<id>`` (``session_id``,
``created_at``, ``updated_at``). Each :meth:`RedisTarget.sync` ``WATCH``es both keys, reads the
list's length and its tail (all of it when the row before ``start`` does not match), then
queues ``LTRIM``/``DEL`` and ``RPUSH`` and the hash's fields in one ``MULTI``/``EXEC``: all of
it happens or none. If another client changed a watched key in between, ``EXEC`` does nothing
and the comparison starts again. Before queueing anything it checks, under the same ``WATCH``,
that both keys are of the SDK's types (or absent): a key of another type fails the session
with nothing written, where ``EXEC`` would have run the commands before the one refused.
An id whose keys are another session's (``a:messages``) is refused before any of this
(``transfer.sdk_schema.refusal``).

A Redis server that restarts may come back empty (no persistence) or older (a snapshot), and
the client reconnects by itself, so the mirror would not notice from errors alone. The server's
``run_id`` changes at every start: :meth:`RedisTarget.check` compares it, and the mirror catches
up on every session when it changed (:class:`~jsonl_session.transfer.mirror.plan.DatabaseReset`).

A Redis Cluster is refused: the SDK's ``RedisSession`` cannot write to one (its writes are
``MULTI``/``EXEC`` transactions on one server), and neither can a mirror.
"""

from __future__ import annotations

import time
from typing import Any

from ...core.errors import JSONLSessionError
from ..sdk_schema import NotStorable, check_storable, counter_key, messages_key, redis_ids, session_key
from .plan import Applied, DatabaseReset, Plan, plan, same

_CHUNK = 1000  # values per RPUSH


class RedisClusterRefused(JSONLSessionError, ValueError):
    """The URL names a Redis Cluster node: the SDK's ``RedisSession`` cannot write to a cluster."""


class RedisTarget:
    """A standalone Redis server holding the SDK's ``RedisSession`` keys."""

    def __init__(self, url: str, client: Any) -> None:
        self.url = url
        self.client = client
        self.run_id: str | None = None
        self.kind = "redis"

    async def connect(self) -> None:
        """Refuse a cluster; remember which server run this is (see :meth:`check`)."""
        from ..urls import shown_url

        cluster = await self.client.info("cluster")
        if str(cluster.get("cluster_enabled", "0")) == "1":
            raise RedisClusterRefused(
                f"{shown_url(self.url)} is a Redis Cluster node: the Agents SDK's RedisSession cannot write "
                "to a cluster (its writes are MULTI/EXEC transactions on one server); mirror to a "
                "standalone Redis server instead"
            )
        self.run_id = await self._run_id()

    async def check(self) -> None:
        """Raise :class:`DatabaseReset` if the server restarted since :meth:`connect`."""
        run_id = await self._run_id()
        if run_id != self.run_id:
            raise DatabaseReset(f"the Redis server restarted (run_id {self.run_id} -> {run_id})")

    async def _run_id(self) -> str:
        return str((await self.client.info("server")).get("run_id", ""))

    async def listing(self) -> list[object]:
        """Ids with a message list, and empty sessions (a session hash without one); raw bytes."""
        return list(await redis_ids(self.client))

    async def sync(
        self, session_id: str, texts: list[str], start: int = 0, *, dry_run: bool = False
    ) -> Applied:
        """Make the stored session equal to ``texts`` in one ``MULTI``/``EXEC`` (see the module)."""
        from redis.exceptions import WatchError

        check_storable(self.kind, session_id)
        key, messages = session_key(session_id), messages_key(session_id)
        async with self.client.pipeline(transaction=True) as pipe:
            while True:
                try:
                    await pipe.watch(key, messages)
                    await _check_types(pipe, key, messages)
                    hash_there = bool(await pipe.exists(key))
                    count = int(await pipe.llen(messages))
                    rows, first = await self._rows_from(pipe, messages, texts, start, count)
                    change = plan(rows, texts, first)
                    applied = Applied(hash_there or count > 0, count, change)
                    if dry_run or (hash_there and not change.changes):
                        await pipe.unwatch()
                        return applied
                    pipe.multi()
                    _queue(pipe, key, messages, session_id, change)
                    await pipe.execute()
                    return applied
                except WatchError:  # another client wrote the session meanwhile: compare again
                    continue

    async def remove(self, session_id: str, *, dry_run: bool = False) -> int | None:
        """Delete the session's keys (one ``DEL``: atomic); items it held, None if absent."""
        check_storable(self.kind, session_id)
        key, messages = session_key(session_id), messages_key(session_id)
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.exists(key)
            pipe.llen(messages)
            if not dry_run:
                pipe.delete(key, messages, counter_key(session_id))
            hash_there, count, *_ = await pipe.execute()
        return int(count) if hash_there or count else None

    async def _rows_from(
        self, pipe: Any, messages: str, texts: list[str], start: int, count: int
    ) -> tuple[list[bytes], int]:
        """``(rows, first)``: the stored items from index ``first`` on (see ``SqlTarget._rows_from``)."""
        first = min(start, count, len(texts))
        if first > 0:
            tail = await pipe.lrange(messages, first - 1, -1)
            if tail and same(tail[0], texts[first - 1]):
                return list(tail[1:]), first
        return (list(await pipe.lrange(messages, 0, -1)) if count else []), 0


async def _check_types(pipe: Any, key: str, messages: str) -> None:
    """Raise :class:`NotStorable` unless the session's keys are a hash and a list, or absent."""
    for name, wanted in ((key, "hash"), (messages, "list")):
        kind = await pipe.type(name)
        kind = kind.decode() if isinstance(kind, bytes) else str(kind)
        if kind not in ("none", wanted):
            raise NotStorable(f"the Redis key {name!r} is a {kind}, not the SDK's {wanted}; nothing written")


def _queue(pipe: Any, key: str, messages: str, session_id: str, change: Plan) -> None:
    """Queue the plan as the SDK writes a session: the list, then the hash's fields."""
    if change.remove:
        if change.keep:
            pipe.ltrim(messages, 0, change.keep - 1)
        else:
            pipe.delete(messages)
    for at in range(0, len(change.add), _CHUNK):
        pipe.rpush(messages, *change.add[at : at + _CHUNK])
    now = str(int(time.time()))
    pipe.hset(key, mapping={"session_id": session_id, "updated_at": now})
    pipe.hsetnx(key, "created_at", now)
