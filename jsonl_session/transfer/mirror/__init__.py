"""The mirror wing: keep a database equal to a folder, live or once (see ``run``).

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
