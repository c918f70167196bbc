"""What the archives of a folder hold, read from their manifests alone: ``restore --list`` and ``stats``.

``retention.prune`` writes one ``.tar.gz`` per session into ``<dir>/.archive/`` with a
manifest as its first member (``archive_files``); listing reads only that member, so a folder
of large archives lists quickly, and ``stats`` keeps counting what archived sessions cost.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import JSONLSessionError
from ..history.usage import COUNTERS
from ..session.folder import SessionDirectory
from . import archive_files

__all__ = ["ArchivedSession", "archived_usage", "list_archives"]


@dataclass(frozen=True)
class ArchivedSession:
    """One archive ``retention.restore`` can bring back (``jsonl-session restore --list``)."""

    session_id: str
    archive: Path
    archived_at: str
    """When it was archived (UTC, ISO 8601)."""
    last_written: str
    """When the session was last written before that."""
    items: int
    files: tuple[str, ...]
    size: int
    """Bytes of the session's files (not of the compressed archive)."""
    usage: dict[str, int] | None
    """Its usage totals (``get_session_usage_sync``'s), or None without a usage log."""


def list_archives(
    directory: SessionDirectory | str | os.PathLike[str],
    *,
    on_error: Callable[[Path, Exception], None] | None = None,
) -> list[ArchivedSession]:
    """Every archive in the folder, newest archived first, read from the manifests alone.

    An archive that cannot be read (damaged, not ours, a manifest past its limit) goes to
    ``on_error(path, error)`` and the others are listed; so does a symlinked ``.archive``
    (nothing is listed then). Without ``on_error`` the error is raised. Each manifest is read
    bounded (``archive_files.MANIFEST_LIMIT``), never the rest of its archive.

    Example:
        >>> [(a.session_id, a.archived_at) for a in list_archives("sessions")]   # doctest: +SKIP
        [('convo_12', '2026-01-02T03:04:05Z')]
    """
    archive_folder = _folder(directory).directory / archive_files.FOLDER
    try:
        paths = archive_files.archives(archive_folder)
    except (OSError, JSONLSessionError) as exc:  # a symlinked .archive: nothing read through it
        if on_error is None:
            raise
        on_error(archive_folder, exc)
        return []
    found = []
    for path in paths:
        try:
            found.append(_archived(path))
        except (OSError, JSONLSessionError) as exc:
            if on_error is None:
                raise
            on_error(path, exc)
    return sorted(found, key=lambda archived: (archived.archived_at, archived.session_id), reverse=True)


def archived_usage(
    directory: SessionDirectory | str | os.PathLike[str],
    *,
    on_error: Callable[[Path, Exception], None] | None = None,
) -> dict[str, dict[str, int]]:
    """Usage totals of the archived sessions that had a usage log, by session id.

    Several archives of one id (pruned, written again, pruned again) are added up. An archive
    that cannot be read goes to ``on_error(path, error)``, or its error is raised.

    Example:
        >>> archived_usage("sessions")["convo_12"]["total_tokens"]      # doctest: +SKIP
        8120
    """
    totals: dict[str, dict[str, int]] = {}
    for archived in list_archives(directory, on_error=on_error):
        if archived.usage is None:
            continue
        into = totals.setdefault(archived.session_id, dict.fromkeys((*COUNTERS, "runs", "total_turns"), 0))
        for name in into:
            value = archived.usage.get(name, 0)
            into[name] += value if isinstance(value, int) else 0
    return totals


def _archived(path: Path) -> ArchivedSession:
    manifest = archive_files.read_manifest(path)
    files = [entry for entry in manifest.get("files", []) if isinstance(entry, dict)]
    usage = manifest.get("usage")
    return ArchivedSession(
        session_id=str(manifest.get("session_id")),
        archive=path,
        archived_at=str(manifest.get("archived_at")),
        last_written=str(manifest.get("last_written")),
        items=int(manifest.get("items") or 0),
        files=tuple(str(entry.get("name")) for entry in files),
        size=sum(int(entry.get("size") or 0) for entry in files),
        usage=usage if isinstance(usage, dict) else None,
    )


def _folder(directory: SessionDirectory | str | os.PathLike[str]) -> SessionDirectory:
    return directory if isinstance(directory, SessionDirectory) else SessionDirectory(directory)
