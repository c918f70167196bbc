"""Where a fork came from: ``<file>.jsonl.lineage``, written by ``fork`` next to the new session.

The record names the source session, how many items were copied, a SHA-256 of those items
(as their lines are written, so the same items give the same hash) and when. ``check``
compares it with the source as it is now: a source that was edited, popped or rewound
inside the copied prefix has *diverged*, and the fork no longer shares its history.

Example of the file (stable bytes: sorted keys, two-space indent, one trailing newline)::

    {
      "forked_at": "2026-12-02T18:40:07Z",
      "items": 4,
      "prefix_sha256": "9f2c...",
      "source": "convo_123"
    }
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..core import codec, reads, sidecar_files
from ..core.errors import SessionFileError
from ..core.locking import DEFAULT_LOCK_TIMEOUT
from ..core.names import filename_for
from ..core.transaction import Transaction


@dataclass(frozen=True)
class Lineage:
    """A fork's origin.

    Example:
        >>> Lineage("convo_123", 4, prefix_hash([]), "2026-12-02T18:40:07Z").source
        'convo_123'
    """

    source: str
    items: int
    prefix_sha256: str
    forked_at: str

    def to_json(self) -> dict[str, Any]:
        return {
            "forked_at": self.forked_at,
            "items": self.items,
            "prefix_sha256": self.prefix_sha256,
            "source": self.source,
        }

    @classmethod
    def from_json(cls, path: Path, value: Any) -> Lineage:
        """Validate what was read from ``path``; a hand-broken file is named, not guessed at."""
        try:
            lineage = cls(value["source"], value["items"], value["prefix_sha256"], value["forked_at"])
        except (KeyError, TypeError):
            lineage = None
        if (
            lineage is None
            or not isinstance(lineage.source, str)
            or isinstance(lineage.items, bool)
            or not isinstance(lineage.items, int)
            or not isinstance(lineage.prefix_sha256, str)
            or not isinstance(lineage.forked_at, str)
        ):
            raise SessionFileError(
                path, "not a lineage record (needs source, items, prefix_sha256, forked_at); fix or delete it"
            )
        return lineage


def prefix_hash(items: list[Any]) -> str:
    """SHA-256 (hex) of the items as the session file stores them.

    Example:
        >>> prefix_hash([])[:12]
        'e3b0c44298fc'
    """
    return hashlib.sha256(codec.encode_items(items)).hexdigest()


def now() -> str:
    """The current UTC time as every sidecar writes it: ISO 8601 to the second, with ``Z``."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_lineage(source_id: str, copied: list[Any]) -> Lineage:
    """The record for a fork that copies ``copied`` from ``source_id`` now."""
    return Lineage(source_id, len(copied), prefix_hash(copied), now())


def read_lineage(session_path: Path) -> Lineage | None:
    """The lineage of the session stored at ``session_path``, or None if it is not a fork."""
    path = sidecar_files.sidecar(session_path, sidecar_files.LINEAGE)
    value = sidecar_files.read_json(path)
    return None if value is None else Lineage.from_json(path, value)


def divergence(session_path: Path, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> str | None:
    """Why a fork's source no longer starts with what was copied, or None if it still does.

    The source is read under its shared lock; its size is what matters, not its age.

    Example:
        >>> divergence(Path("sessions/convo_123-retry.jsonl"))     # doctest: +SKIP
        "forked from 'convo_123' at 4 items (2026-12-02T18:40:07Z); 'convo_123' now has 2 items"
    """
    lineage = read_lineage(session_path)
    if lineage is None:
        return None
    source_path = session_path.with_name(filename_for(lineage.source))
    origin = f"forked from {lineage.source!r} at {lineage.items} items ({lineage.forked_at})"
    with Transaction(source_path, write=False, timeout=lock_timeout) as file:
        if not file.exists:
            return f"{origin}; {lineage.source!r} no longer exists"
        copied = reads.read_items(file.fd, source_path, size=file.size)[: lineage.items]
    if len(copied) < lineage.items:
        return f"{origin}; {lineage.source!r} now has {len(copied)} items"
    if prefix_hash(copied) != lineage.prefix_sha256:
        return f"{origin}; {lineage.source!r} has changed within those items since"
    return None
