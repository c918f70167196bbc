"""The mirror wing: keep a database equal to a folder, live or once.

``run`` is the mirror (``mirror_folder``, ``catch_up_mirror``: compare everything, then follow),
``follow`` its live half (a folder watch's changes in, one transaction per session out),
``plan`` the smallest difference between a file and its database copy (pure), ``outcomes``
what it reports per session. ``targets`` opens the database by URL: ``sql_target`` (any
SQLAlchemy URL), ``pg_target`` (PostgreSQL through asyncpg's own calls), ``redis_target``, and
``sharded`` (several databases, each session in the one its id hashes to).

It stands on ``sdk_schema`` (the SDK's tables, keys and item text) and never imports the copy
wing (``backends``, ``all_sessions``, ``single`` and their stores), nor they it; import-linter checks.
"""

from .outcomes import MirrorOutcome
from .redis_target import RedisClusterRefused
from .run import (
    FEW_DELETIONS,
    FolderUnavailable,
    MassDeletionRefused,
    catch_up_mirror,
    catch_up_mirror_sync,
    mirror_folder,
    mirror_folder_sync,
    stored_ids,
)

__all__ = [
    "FEW_DELETIONS",
    "FolderUnavailable",
    "MassDeletionRefused",
    "MirrorOutcome",
    "RedisClusterRefused",
    "catch_up_mirror",
    "catch_up_mirror_sync",
    "mirror_folder",
    "mirror_folder_sync",
    "stored_ids",
]
