"""Agents SDK sessions stored as plain JSONL files: one conversation, one file, one item per line.

Example:
    >>> from jsonl_session import JSONLSession
    >>> session = JSONLSession("convo_123")          # ./sessions/convo_123.jsonl
    >>> # result = await Runner.run(agent, "Hello", session=session)
"""

from .directory import SessionDirectory, SessionInfo
from .errors import (
    InvalidSessionId,
    ItemNotStorableError,
    JSONLSessionError,
    LockReentryError,
    LockTimeout,
    MalformedLineError,
    ReadOnlySessionError,
    SessionFileError,
    TornTailWarning,
    UnsafePathError,
)
from .session import Draft, JSONLSession
from .settings import SessionSettings
from .transfer import copy_session
from .watch import Change, watch_directory, watch_directory_sync

__all__ = [
    "Change",
    "Draft",
    "InvalidSessionId",
    "ItemNotStorableError",
    "JSONLSession",
    "JSONLSessionError",
    "LockReentryError",
    "LockTimeout",
    "MalformedLineError",
    "ReadOnlySessionError",
    "SessionDirectory",
    "SessionFileError",
    "SessionInfo",
    "SessionSettings",
    "TornTailWarning",
    "UnsafePathError",
    "copy_session",
    "watch_directory",
    "watch_directory_sync",
]
