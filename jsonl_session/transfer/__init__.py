"""Copy conversations between JSONL files and the Agents SDK's Redis and SQL sessions.

Two wings. **The copies**: ``backends`` opens the SDK's sessions by URL and copies one
conversation between any two sessions; ``single`` copies one session to or from a URL and
``all_sessions`` every session of a folder, or of a backend, by the same rules: only what the
destination lacks (``compare``; ``transfer.compare.compare`` is not exported here: its
submodule's name would shadow it), never overwrite without ``replace``, verify before writing,
all or nothing per session (``copy_outcome``: what to write, and what is said), and the
metadata the SDK's tables cannot hold in a companion table or hash (``companion``). Exports
write through ``sql_store`` (PostgreSQL, other SQL), ``sqlite_store`` (an ``SQLiteSession``
file) and ``redis_store``. **The mirror** (``mirror``) keeps a database, or several, equal to a
folder, live (``mirror_folder``) or once (``catch_up_mirror``).

Both wings take the SDK's storage layout from ``sdk_schema`` alone and never import each other;
they share only ``urls`` (URLs with their passwords masked), ``shards`` (which database holds a
session) and ``concurrently`` (many sessions at once, bounded).

Example:
    >>> from jsonl_session.transfer import copy_session, open_url
    >>> # await copy_session(JSONLSession("a"), open_url("redis://localhost:6379/0", "a"))
"""

from ..core.deferred_imports import exported_on_first_use

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from .all_sessions import export_all, import_all
    from .backends import Backend, copy_session, open_backend, open_url
    from .compare import Comparison
    from .copy_outcome import Outcome
    from .mirror import (
        MirrorOutcome,
        RedisClusterRefused,
        catch_up_mirror,
        catch_up_mirror_sync,
        mirror_folder,
        mirror_folder_sync,
    )
    from .single import export_session, import_session, metadata_left_behind

__all__ = [
    "Backend",
    "Comparison",
    "MirrorOutcome",
    "Outcome",
    "RedisClusterRefused",
    "catch_up_mirror",
    "catch_up_mirror_sync",
    "copy_session",
    "export_all",
    "export_session",
    "import_all",
    "import_session",
    "metadata_left_behind",
    "mirror_folder",
    "mirror_folder_sync",
    "open_backend",
    "open_url",
]

__getattr__, __dir__ = exported_on_first_use(
    __name__,
    {
        "Backend": "backends",
        "Comparison": "compare",
        "MirrorOutcome": "mirror",
        "RedisClusterRefused": "mirror",
        "catch_up_mirror": "mirror",
        "catch_up_mirror_sync": "mirror",
        "mirror_folder": "mirror",
        "mirror_folder_sync": "mirror",
        "Outcome": "copy_outcome",
        "copy_session": "backends",
        "export_all": "all_sessions",
        "export_session": "single",
        "import_all": "all_sessions",
        "import_session": "single",
        "metadata_left_behind": "single",
        "open_backend": "backends",
        "open_url": "backends",
    },
)
del TYPE_CHECKING, exported_on_first_use
