"""One session into the SDK's ``RedisSession`` keys and its companion hash, in one ``MULTI``/``EXEC``.

The layout is the SDK's: the session hash ``agents:session:<id>`` (``session_id``,
``created_at``, ``updated_at``, seconds as decimal text), the message list
``agents:session:<id>:messages`` (each item ``json.dumps(item, separators=(",", ":"))``), and
ours beside it, ``jsonl-session:meta:<id>`` (see ``companion``).

The destination's messages are read under ``WATCH`` and compared with the source
(``copy_outcome.decide``); the missing tail, the session hash fields and the companion hash then go in
one transaction, which Redis refuses if any watched key changed meanwhile (another writer, the
SDK's ``add_items`` included): then it is read and compared again. So the copy is all or
nothing per session, and never appends after items it has not compared.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

import orjson

from ..core.codec import has_long_digit_run
from .companion import REDIS_PREFIX, Metadata, from_redis, to_redis
from .copy_outcome import Outcome, decide
from .sdk_schema import NotStorable, check_storable, messages_key, session_key, stored_text

__all__ = ["export_one", "read_companion", "read_session", "read_sessions"]


async def export_one(
    client: Any,
    session_id: str,
    items: list[Any],
    metadata: Metadata,
    *,
    replace: bool = False,
    maybe_there: bool = True,
) -> Outcome:
    """Bring one session in Redis up to ``items`` (and its companion to ``metadata``); see above.

    ``maybe_there=False`` (the session was not there when the run listed the keys) skips the
    first look, which would only find nothing: a first copy costs three round trips, not four.
    """
    from redis.exceptions import WatchError

    check_storable("redis", session_id)
    hash_key, list_key = session_key(session_id), messages_key(session_id)
    meta_key = REDIS_PREFIX + session_id
    fields = to_redis(metadata)
    keys = (hash_key, list_key, meta_key)
    # A first look without WATCH, one round trip: an up-to-date session (the common case of a
    # re-run) needs nothing else. Anything to write is looked at again under WATCH.
    if maybe_there:
        done = _nothing_to_write(session_id, items, fields, await _look(client, keys), replace)
        if done is not None:
            return done
    while True:
        async with client.pipeline(transaction=True) as pipe:
            try:
                # WATCH first, then read on another connection in one round trip: a change by
                # anyone after the WATCH makes the EXEC below fail, so nothing read is stale.
                await pipe.watch(*keys)
                seen = await _look(client, keys)
                done = _nothing_to_write(session_id, items, fields, seen, replace)
                if done is not None:
                    return done
                held, existed, _ = seen
                decided = decide(session_id, items, held, replace=replace)
                outcome = decided.outcome
                tail = items[decided.start :]
                same_metadata = _as_bytes(seen[2]) == fields
                now = str(int(time.time()))
                pipe.multi()
                if decided.clear:
                    pipe.delete(list_key)
                if tail or not existed:
                    pipe.hset(hash_key, "session_id", session_id)
                    pipe.hsetnx(hash_key, "created_at", now)
                if tail:
                    pipe.rpush(list_key, *[stored_text(item) for item in tail])
                    pipe.hset(hash_key, "updated_at", now)
                if not same_metadata:
                    pipe.delete(meta_key)
                    if fields:
                        pipe.hset(meta_key, mapping=fields)
                await pipe.execute()
            except WatchError:
                continue  # written meanwhile: read and compare again
        if outcome.status == "skipped" and not items and not existed:
            return Outcome(session_id, "copied", 0)  # an empty session, stored now
        return outcome


async def _look(client: Any, keys: tuple[str, str, str]) -> tuple[list[Any], bool, dict[Any, Any]]:
    """The session's items (decoded; corrupted ones skipped, as the SDK does), whether it is
    stored at all, and its companion hash: one round trip. A key of another type than the
    SDK's raises :class:`NotStorable`."""
    hash_key, list_key, meta_key = keys
    reads = client.pipeline(transaction=False)
    for key in keys:
        reads.type(key)
    reads.lrange(list_key, 0, -1)
    reads.exists(hash_key, list_key)
    reads.hgetall(meta_key)
    *types, raw, existed, stored_fields = await reads.execute(raise_on_error=False)
    for key, wanted, found in zip(keys, ("hash", "list", "hash"), types):
        found = found.decode() if isinstance(found, bytes) else str(found)
        if found not in ("none", wanted):
            # EXEC would run the commands before the one refused: refuse before queueing any.
            raise NotStorable(f"the Redis key {key!r} is a {found}, not a {wanted}; nothing written")
    held = [item for item in map(_standard_decoded, raw) if item is not _CORRUPTED]  # skipped, as by the SDK
    return held, bool(existed), stored_fields


def _nothing_to_write(
    session_id: str,
    items: list[Any],
    fields: dict[str, bytes],
    seen: tuple[list[Any], bool, dict[Any, Any]],
    replace: bool,
) -> Outcome | None:
    """The outcome if nothing is to be written (it differs, or is up to date metadata included)."""
    held, existed, stored_fields = seen
    decided = decide(session_id, items, held, replace=replace)
    if not decided.write:
        return decided.outcome
    if decided.outcome.status == "skipped" and existed and _as_bytes(stored_fields) == fields:
        return decided.outcome
    return None


def _as_bytes(fields: dict[Any, Any]) -> dict[str, bytes]:
    return {
        (key.decode() if isinstance(key, bytes) else key): (
            value if isinstance(value, bytes) else value.encode()
        )
        for key, value in fields.items()
    }


async def read_companion(client: Any, session_id: str) -> Metadata:
    """The companion entries of one session (none if it was never exported by jsonl-session)."""
    return from_redis(await client.hgetall(REDIS_PREFIX + session_id))


async def read_session(client: Any, session_id: str) -> tuple[list[Any], Metadata, int]:
    """One session's items, decoded as ``RedisSession.get_items`` decodes them (a corrupted one
    skipped), its companion entries, and the bytes the items were stored as: one round trip,
    where the SDK's call and the companion read took two."""
    (read,) = await read_sessions(client, [session_id])
    if isinstance(read, Exception):
        raise read
    return read


async def read_sessions(
    client: Any, session_ids: Sequence[str]
) -> list[tuple[list[Any], Metadata, int] | Exception]:
    """:func:`read_session` of several sessions in one round trip (a pipeline's fixed cost, in
    this client's Python, is about a sixth of reading a session of 100 items); a session's own
    error (a key of another type: ``WRONGTYPE``) is returned in its place, not raised. An error
    of the connection raises."""
    reads = client.pipeline(transaction=False)
    for session_id in session_ids:
        reads.lrange(messages_key(session_id), 0, -1)
        reads.hgetall(REDIS_PREFIX + session_id)
    replies = await reads.execute(raise_on_error=False)
    found: list[tuple[list[Any], Metadata, int] | Exception] = []
    for raw, fields in zip(replies[::2], replies[1::2], strict=True):
        failed = raw if isinstance(raw, Exception) else fields if isinstance(fields, Exception) else None
        if failed is None:
            try:
                found.append(_session(raw, fields))
            except Exception as exc:  # noqa: BLE001  (what one session holds is its failure alone)
                found.append(exc)
        else:
            found.append(failed)
    return found


def _session(raw: list[bytes], fields: dict[Any, Any]) -> tuple[list[Any], Metadata, int]:
    # The rows joined by a newline, which no digit run crosses: the session's numbers are
    # checked in one call, where a call per row cost a tenth of the import's loop.
    joined = b"\n".join(raw)
    decode = _decoded if has_long_digit_run(joined) else _short_numbers_decoded
    items = [item for item in map(decode, raw) if item is not _CORRUPTED]
    return items, from_redis(fields), len(joined) - max(len(raw) - 1, 0)


_CORRUPTED = object()


def _decoded(message: bytes) -> Any:
    """``json.loads(message)`` as the SDK reads it, or :data:`_CORRUPTED` (which the SDK skips).

    orjson first, in a fraction of the time: it reads every JSON text it accepts to the same
    values, except integers of 19+ digits (floats there, silently), which go to ``json.loads``
    with what orjson refuses and the standard library takes (``NaN``, ``1e400``, lone surrogates).
    """
    if has_long_digit_run(message):
        return _standard_decoded(message)
    return _short_numbers_decoded(message)


def _short_numbers_decoded(message: bytes) -> Any:
    """:func:`_decoded` of a row known to hold no run of 19+ digits."""
    try:
        return orjson.loads(message)
    except orjson.JSONDecodeError:
        return _standard_decoded(message)


def _standard_decoded(message: bytes) -> Any:
    """The SDK's own reading: UTF-8 first, then ``json.loads``; a row it cannot read is skipped.
    (``json.loads`` of the bytes would guess the encoding, and read a row with a byte order mark
    or in UTF-16 that the SDK skips.)"""
    try:
        return json.loads(message.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return _CORRUPTED
