"""Copy one session to or from a backend URL, by the rules whole-folder copies follow.

``jsonl-session export ID --to URL`` and ``import URL --id ID`` are these two calls:

* **never overwrite**: a target that already holds items is left alone, and the outcome says
  whether they are the same items (``skipped``) or others (``differs``);
* **verify before writing**: an import reads every item first and checks that this format
  stores each exactly, then writes them all in one rename under the file's lock, so a bad item
  or a crash leaves no half conversation (``failed``, nothing written);
* an import of an id the backend has no items for writes nothing (``failed``).

The outcome is :class:`~jsonl_session.transfer.folders.Outcome`, as ``export_all`` and
``import_all`` report each session.

Example:
    >>> outcome = await export_session(JSONLSession("convo"), "sqlite:///chats.db")  # doctest: +SKIP
    >>> outcome.status, outcome.items                                                 # doctest: +SKIP
    ('copied', 42)
"""

from __future__ import annotations

from ..core import sidecar_files
from ..core.codec import encode_items
from ..session.store import JSONLSession
from .backends import Progress, copy_session, open_backend
from .folders import Outcome, compare_items, import_items

_METADATA = {
    sidecar_files.LINEAGE: "its lineage",
    sidecar_files.USAGE: "its usage log",
    sidecar_files.RUN: "its paused run",
}


async def export_session(
    source: JSONLSession, url: str, target_id: str | None = None, *, progress: Progress | None = None
) -> Outcome:
    """Copy ``source``'s items to the backend at ``url``, as ``target_id`` (its own id by default).

    The items go in batches of ``backends.BATCH`` (``progress(done, total)`` after each), after
    a check that the target holds nothing: one that holds items is not written to, and the
    outcome is ``skipped`` (the same items) or ``differs``. The session's metadata stays
    behind (:func:`metadata_left_behind`): a backend stores items only.
    """
    target_id = target_id or source.session_id
    items = await source.get_items()
    async with open_backend(url) as backend:
        target = backend.session(target_id)
        try:
            existing = await target.get_items()
            if existing:
                try:
                    payload = encode_items(items)
                except ValueError:
                    payload = b""  # cannot be the same items: differs
                there = "the backend has {} items"
                return compare_items(target_id, existing, payload, there + f" (the session has {len(items)})")
            count = await copy_session(_Items(items), target, progress=progress)
        finally:
            backend.done(target)
    return Outcome(target_id, "copied", count)


async def import_session(
    url: str, source_id: str, target: JSONLSession, *, progress: Progress | None = None
) -> Outcome:
    """Copy the session ``source_id`` stored at ``url`` into ``target``, all or nothing.

    Every item is read, then checked to be storable exactly, then written in one rename under
    ``target``'s lock if it holds nothing (``copied``); a target that holds items is left alone
    (``skipped``: the same items, ``differs``: others). ``failed`` (nothing written) when an
    item cannot be stored exactly or the backend has no items under ``source_id``.
    """
    async with open_backend(url) as backend:
        remote = backend.session(source_id)
        try:
            items = await remote.get_items()
        finally:
            backend.done(remote)
    if not items:
        return Outcome(target.session_id, "failed", 0, f"the backend has no items under {source_id!r}")
    if progress is not None:
        progress(0, len(items))
    outcome = await import_items(target, items)
    if progress is not None and outcome.status == "copied":
        progress(len(items), len(items))
    return outcome


def metadata_left_behind(session: JSONLSession) -> list[str]:
    """What of ``session``'s metadata an export to a backend cannot take along (it stores items only).

    Example:
        >>> metadata_left_behind(JSONLSession("forked"))                # doctest: +SKIP
        ['its lineage', 'its usage log']
    """
    return [label for kind, label in _METADATA.items() if sidecar_files.sidecar(session.path, kind).exists()]


class _Items:
    """Items already read, offered as a session to ``copy_session``."""

    def __init__(self, items: list[object]) -> None:
        self.items = items

    async def get_items(self, limit: int | None = None) -> list[object]:
        if limit is None:
            return self.items
        return self.items[-limit:] if limit else []
