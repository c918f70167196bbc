"""Agents SDK sessions stored as plain JSONL files: one conversation, one file, one item per line.

Example:
    >>> from jsonl_session import JSONLSession
    >>> session = JSONLSession("convo_123")          # ./sessions/convo_123.jsonl
    >>> # result = await Runner.run(agent, "Hello", session=session)

**The public API** is what this package exports (``__all__``: sessions and folders, history,
watching, copying, record and replay, secrets, retention, recall, checking, the errors) and
three documented faces: ``jsonl_session.watch`` (following sessions live),
``jsonl_session.transfer`` (copying to and mirroring into other backends) and
``jsonl_session.pytest_plugin`` (the fixtures, loaded by pytest as a plugin). Every other
module (``core``, ``render``, ``history``, ``session``, ``tools``, ``serve``, ``cli``) is
internal: it may change in any release. The old top-level modules ``bulk``, ``replay``,
``secrets`` and ``workers`` warn and are removed in 0.3.

Names are imported on first use (module ``__getattr__``, PEP 562): ``import jsonl_session``
costs almost nothing, so the CLI starts fast, and ``jsonl-session ls`` never loads asyncio,
the file watcher or the lock library it does not need.
"""

from .core.deferred_imports import exported_on_first_use
from .core.errors import (
    BackendUnavailable,
    InvalidBackendURL,
    InvalidSessionId,
    ItemNotStorableError,
    JSONLSessionError,
    LockReentryError,
    LockTimeout,
    MalformedLineError,
    OwnerMismatchError,
    OwnershipError,
    ReadOnlySessionError,
    SessionExistsError,
    SessionFileError,
    SessionNotFoundError,
    SkippedSessionWarning,
    TornTailWarning,
    UnsafePathError,
)

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:  # what the lazy names below are, for type checkers and editors
    from .core.worker_threads import wait_for_all
    from .history.lineage import Lineage
    from .history.metadata import SessionMetadata
    from .history.paused_runs import PausedRun
    from .history.turn_growth import read_growth
    from .history.turns import Turn
    from .session.folder import SessionDirectory
    from .session.listing import SessionInfo
    from .session.routing import Route
    from .session.settings import SessionSettings
    from .session.store import Draft, JSONLSession
    from .tools.check import check_file
    from .tools.recall import search_sessions, session_search_tool
    from .tools.replay import Recording, ReplayMismatch
    from .tools.retention import (
        ArchivedSession,
        PruneOutcome,
        RestoreOutcome,
        archived_usage,
        list_archives,
        parse_duration,
        prune,
        restore,
    )
    from .tools.secrets import SecretFinding, redact_session, scan_file
    from .transfer.backends import copy_session
    from .watch import Change, watch_directory, watch_directory_sync

_LAZY = {
    "ArchivedSession": "tools.retention",
    "Change": "watch",
    "Draft": "session.store",
    "JSONLSession": "session.store",
    "Lineage": "history.lineage",
    "PausedRun": "history.paused_runs",
    "PruneOutcome": "tools.retention",
    "Recording": "tools.replay",
    "ReplayMismatch": "tools.replay",
    "RestoreOutcome": "tools.retention",
    "Route": "session.routing",
    "SecretFinding": "tools.secrets",
    "SessionDirectory": "session.folder",
    "SessionInfo": "session.listing",
    "SessionMetadata": "history.metadata",
    "SessionSettings": "session.settings",
    "Turn": "history.turns",
    "archived_usage": "tools.retention",
    "check_file": "tools.check",
    "copy_session": "transfer.backends",
    "list_archives": "tools.retention",
    "parse_duration": "tools.retention",
    "prune": "tools.retention",
    "read_growth": "history.turn_growth",
    "redact_session": "tools.secrets",
    "restore": "tools.retention",
    "scan_file": "tools.secrets",
    "search_sessions": "tools.recall",
    "session_search_tool": "tools.recall",
    "wait_for_all": "core.worker_threads",
    "watch_directory": "watch",
    "watch_directory_sync": "watch",
}

__all__ = [
    "ArchivedSession",
    "BackendUnavailable",
    "Change",
    "Draft",
    "InvalidBackendURL",
    "InvalidSessionId",
    "ItemNotStorableError",
    "JSONLSession",
    "JSONLSessionError",
    "Lineage",
    "LockReentryError",
    "LockTimeout",
    "MalformedLineError",
    "OwnerMismatchError",
    "OwnershipError",
    "PausedRun",
    "PruneOutcome",
    "ReadOnlySessionError",
    "Recording",
    "ReplayMismatch",
    "RestoreOutcome",
    "Route",
    "SecretFinding",
    "SessionDirectory",
    "SessionExistsError",
    "SessionFileError",
    "SessionInfo",
    "SessionMetadata",
    "SessionNotFoundError",
    "SessionSettings",
    "SkippedSessionWarning",
    "TornTailWarning",
    "Turn",
    "UnsafePathError",
    "archived_usage",
    "check_file",
    "copy_session",
    "list_archives",
    "parse_duration",
    "prune",
    "read_growth",
    "redact_session",
    "restore",
    "scan_file",
    "search_sessions",
    "session_search_tool",
    "wait_for_all",
    "watch_directory",
    "watch_directory_sync",
]


del TYPE_CHECKING


__getattr__, __dir__ = exported_on_first_use(__name__, _LAZY)
del exported_on_first_use
