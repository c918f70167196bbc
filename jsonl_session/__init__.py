"""Agents SDK sessions stored as plain JSONL files: one conversation, one file, one item per line.

Example:
    >>> from jsonl_session import JSONLSession
    >>> session = JSONLSession("convo_123")          # ./sessions/convo_123.jsonl
    >>> # result = await Runner.run(agent, "Hello", session=session)

Names are imported on first use (module ``__getattr__``, PEP 562): ``import jsonl_session``
costs almost nothing, so the CLI starts fast, and ``jsonl-session ls`` never loads asyncio,
the file watcher or the lock library it does not need.
"""

import importlib as _importlib

from .errors import (
    BackendUnavailable,
    InvalidBackendURL,
    InvalidSessionId,
    ItemNotStorableError,
    JSONLSessionError,
    LockReentryError,
    LockTimeout,
    MalformedLineError,
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
    from typing import Any

    from .directory import SessionDirectory, SessionInfo
    from .lineage import Lineage
    from .runs import PausedRun
    from .session import Draft, JSONLSession
    from .settings import SessionSettings
    from .transfer import copy_session
    from .turns import Turn
    from .watch import Change, watch_directory, watch_directory_sync

_LAZY = {
    "Change": "watch",
    "Draft": "session",
    "JSONLSession": "session",
    "Lineage": "lineage",
    "PausedRun": "runs",
    "SessionDirectory": "directory",
    "SessionInfo": "directory",
    "SessionSettings": "settings",
    "Turn": "turns",
    "copy_session": "transfer",
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
    "OwnershipError",
    "PausedRun",
    "ReadOnlySessionError",
    "SessionDirectory",
    "SessionExistsError",
    "SessionFileError",
    "SessionInfo",
    "SessionNotFoundError",
    "SessionSettings",
    "SkippedSessionWarning",
    "TornTailWarning",
    "Turn",
    "UnsafePathError",
    "copy_session",
    "watch_directory",
    "watch_directory_sync",
]


del TYPE_CHECKING


def __getattr__(name: str) -> "Any":
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups are ordinary attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
