"""The optional hooks the Agents SDK's compaction wrapper looks for, done as one rename each.

``OpenAIResponsesCompactionSession`` (and ``EncryptedSession`` stacked on it) replaces a
history after ``client.responses.compact()``. On a store without hooks it does ``clear_session()`` then
``add_items()``: in between, a reader or a follower sees an empty conversation, and a crash
there leaves it empty. A file can instead be replaced by one ``rename`` under the lock, so we
offer the two hooks the SDK probes for (openai-agents >= 0.2x; older releases never call them):

* ``_atomic_replace_items(items) -> bool``: the whole history becomes ``items`` (manual
  ``run_compaction()`` and stores without a snapshot);
* ``_get_compaction_snapshot(limit, *, prune_prefix=None)``: the newest ``limit`` items and a
  ``replace_suffix(start, output) -> bool`` that swaps the snapshot's items from ``start`` on
  for ``output``, keeping older history, and declines (False) when the stored suffix changed
  meanwhile. ``prune_prefix`` (from ``EncryptedSession``) drops expired items at the start.

Both wait for the lock on the loop, then run the file work in a worker thread (a rewrite is
proportional to the file), which unlocks: a cancelled caller either changed nothing (it was
still waiting; a session that had no file may now have an empty one) or its rename completes.
Subclasses of ``JSONLSession`` get neither hook (they may transform items, e.g. the read-only session of the
pytest plugin); like the SDK's own stores, they must opt in by overriding.

Hooks we leave alone, on purpose: ``_read_compaction_items`` (for wrappers that present a
different logical view, such as decryption; our items are the stored items),
``_ignore_ids_for_matching`` (we store ids exactly as given, so the default False is right)
and the ``wrapper=`` parameter on session methods (we need no run context).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..core.codec import encode_items

if TYPE_CHECKING:
    from .locked_operations import LockedOperations

PrunePrefix = Callable[[Any], bool]


async def atomic_replace(session: LockedOperations, items: list[Any]) -> bool:
    """The ``_atomic_replace_items`` hook: the whole history becomes ``items`` in one rename.


    Example:
        >>> await session._atomic_replace_items([{"type": "compaction", "summary": "..."}])  # doctest: +SKIP
        True
    """
    await session.replace_items(list(items))
    return True


# Snapshots of up to this many items are read on the loop (a few dozen lines: well under 1 ms).
_INLINE_LIMIT = 100


async def snapshot(session: LockedOperations, limit: int, prune_prefix: PrunePrefix | None = None) -> Any:
    """The ``_get_compaction_snapshot`` hook: the newest ``limit`` items and how to replace them.

    Returns the SDK's ``_CompactionSnapshot``, or None (the SDK then needs a complete history
    and uses :func:`atomic_replace`) for subclasses or an SDK without snapshots.

    Example:
        >>> snap = await session._get_compaction_snapshot(3)                # doctest: +SKIP
        >>> await snap.replace_suffix(1, [{"type": "compaction", "summary": "..."}])  # doctest: +SKIP
        True
    """
    try:
        from agents.memory.session import _CompactionSnapshot
    except ImportError:  # an SDK from before suffix replacement: it does not call us anyway
        return None
    if limit < 1:
        return None
    # Not the public get_items: wrappers and the SDK's tests count those reads, and the settings'
    # limit or turn_limit must not cut the snapshot. One more item says whether there is older history.
    # A few items are read on the loop, as get_items reads them: every snapshot taken while
    # another process held the lock sees the history as it was, before any replacement.
    lock = session.locked_async(write=False, create=False)
    async with lock as fd:
        if limit < _INLINE_LIMIT:
            newest = session.read_locked(fd, limit + 1)
        else:
            newest = await lock.finish_in_thread(session.read_locked, fd, limit + 1)
    complete = len(newest) <= limit  # nothing stored before the items we hand out
    items = newest[-limit:]

    async def replace_suffix(start: int, output: list[Any]) -> bool:
        expected = items[start:]
        if not expected:
            return False
        return await session.locked_in_thread(
            _replace_suffix_locked, session, expected, list(output), prune_prefix, write=True, create=True
        )

    return _CompactionSnapshot(items, complete, replace_suffix)


def _replace_suffix_locked(
    fd: int,
    session: LockedOperations,
    expected: list[Any],
    output: list[Any],
    prune_prefix: PrunePrefix | None,
) -> bool:
    """Under the write lock: if the file still ends with ``expected``, swap it for ``output``."""
    with session.rewriting(fd) as draft:
        stored = draft.items
        if len(stored) < len(expected) or not _same(stored[len(stored) - len(expected) :], expected):
            return False  # something was added, popped or rewritten since the snapshot: decline
        kept = stored[: len(stored) - len(expected)]
        if prune_prefix is not None:
            start = 0
            while start < len(kept) and prune_prefix(kept[start]):
                start += 1
            kept = kept[start:]
        draft.items = kept + output
    return True


def _same(stored: list[Any], expected: list[Any]) -> bool:
    """Byte-equal when written: 1 and 1.0, or reordered keys, are a change, as in ``rewrite``."""
    try:
        return encode_items(stored) == encode_items(expected)
    except ValueError:  # hand-edited items we cannot write back exactly: do not touch them
        return False
