"""Agents SDK sessions stored as plain JSONL files: one conversation, one file, one item per line.

Example:
    >>> from jsonl_session import JSONLSession
    >>> session = JSONLSession("convo_123")          # ./sessions/convo_123.jsonl
    >>> # result = await Runner.run(agent, "Hello", session=session)

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
    from .history.lineage import Lineage
    from .history.metadata import SessionMetadata
    from .history.paused_runs import PausedRun
    from .history.turns import Turn
    from .session.folder import SessionDirectory, SessionInfo
    from .session.routing import Route
    from .session.settings import SessionSettings
    from .session.store import Draft, JSONLSession
    from .tools.recall import session_search_tool
    from .transfer.backends import copy_session
    from .watch import Change, watch_directory, watch_directory_sync

_LAZY = {
    "Change": "watch",
    "Draft": "session.store",
    "JSONLSession": "session.store",
    "Lineage": "history.lineage",
    "PausedRun": "history.paused_runs",
    "Route": "session.routing",
    "SessionDirectory": "session.folder",
    "SessionInfo": "session.folder",
    "SessionMetadata": "history.metadata",
    "SessionSettings": "session.settings",
    "Turn": "history.turns",
    "copy_session": "transfer.backends",
    "session_search_tool": "tools.recall",
    "watch_directory": "watch",
    "watch_directory_sync": "watch",
}

__all__ = [
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
    "ReadOnlySessionError",
    "Route",
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
    "copy_session",
    "session_search_tool",
    "watch_directory",
    "watch_directory_sync",
]


del TYPE_CHECKING


__getattr__, __dir__ = exported_on_first_use(__name__, _LAZY)
del exported_on_first_use
