"""Copy one session to or from a backend URL, by the rules whole-folder copies follow.

``jsonl-session export ID --to URL`` and ``import URL --id ID`` are these two calls:

* **incremental, never overwriting**: the destination's items are compared with the source's
  (``compare``); the same items are ``skipped`` (up to date), a destination holding the first
  items of the source gets the missing tail (``appended``; ``copied`` when it held nothing),
  one holding anything else ``differs`` at item K and is left alone unless ``replace=True``;
* **metadata travels**: the session's sidecars and times go into the backend's companion
  table or hash (``companion``) with the items, and come back with them;
* **verify before writing**: an import reads every item first and checks that this format
  stores each exactly, then writes them all in one write under the file's lock, so a bad item
  leaves no half conversation (``failed``, nothing written). Over a file that holds items the
  write is an atomic rename; into a new file it is an append, as ``add_items``'s, which a
  ``kill -9`` mid-write can cut short: the next run finds the file behind and appends the rest;
* an import of an id the backend has no items for writes nothing (``failed``).

The outcome is :class:`~jsonl_session.transfer.copy_outcome.Outcome`, as ``export_all`` and
``import_all`` report each session.

Example:
    >>> outcome = await export_session(JSONLSession("convo"), "sqlite:///chats.db")  # doctest: +SKIP
    >>> outcome.status, outcome.items                                                 # doctest: +SKIP
    ('appended', 2)
"""

from __future__ import annotations

from dataclasses import replace as with_changes

from ..session.store import JSONLSession
from .all_sessions import export_one, import_items, prepare, read_companions, read_locked_job
from .backends import Progress, open_backend
from .copy_outcome import Outcome
from .redis_store import read_companion


async def export_session(
    source: JSONLSession,
    url: str,
    target_id: str | None = None,
    *,
    progress: Progress | None = None,
    replace: bool = False,
) -> Outcome:
    """Bring the session ``target_id`` (``source``'s own id by default) at ``url`` up to ``source``.

    One transaction (or ``MULTI``/``EXEC``) writes the missing tail and the companion
    metadata; ``progress(done, total)`` is called before and after it.

    Raises:
        JSONLSessionError: ``source``'s file cannot be read, or holds an item this format
            cannot write exactly (nothing is written).
    """
    target_id = target_id or source.session_id
    job = await source.locked_in_thread(read_locked_job, source, write=False)
    job = with_changes(job, session_id=target_id)
    if progress is not None:
        progress(0, len(job.items))
    async with open_backend(url) as backend:
        await prepare(backend)
        outcome = await export_one(backend, job, replace=replace)
    if progress is not None and outcome.status != "differs":
        progress(len(job.items), len(job.items))
    return outcome


async def import_session(
    url: str,
    source_id: str,
    target: JSONLSession,
    *,
    progress: Progress | None = None,
    replace: bool = False,
) -> Outcome:
    """Bring ``target`` up to the session ``source_id`` stored at ``url``, all or nothing.

    Every item is read, then checked to be storable exactly, then written under ``target``'s
    lock in one write (a rename over a file that holds items) with the sidecars the companion
    holds (see ``export_session`` for the outcomes). ``failed`` (nothing written) when an item
    cannot be stored exactly or the backend has no items under ``source_id``.
    """
    async with open_backend(url) as backend:
        remote = backend.session(source_id)
        try:
            items = await remote.get_items()
        finally:
            backend.done(remote)
        if backend.flavour == "redis":
            metadata = await read_companion(backend.handle, source_id)
        else:
            metadata = ((await read_companions(backend, [source_id])) or {}).get(source_id, {})
    if not items:
        return Outcome(target.session_id, "failed", 0, f"the backend has no items under {source_id!r}")
    if progress is not None:
        progress(0, len(items))
    outcome = await import_items(target, items, metadata, replace=replace)
    if progress is not None and outcome.status != "differs":
        progress(len(items), len(items))
    return outcome


def metadata_left_behind(session: JSONLSession) -> list[str]:
    """What of ``session``'s metadata an export cannot take along: nothing any more.

    Kept for callers of earlier releases: the sidecars now travel in the backend's companion
    table or hash (``transfer.companion``), so this is always empty.

    Example:
        >>> metadata_left_behind(JSONLSession("forked"))                # doctest: +SKIP
        []
    """
    del session
    return []
