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
    LockTimeout,
    MalformedLineError,
    SessionFileError,
    TornTailWarning,
    UnsafePathError,
)
from .session import Draft, JSONLSession
from .settings import SessionSettings
from .transfer import copy_session

__all__ = [
    "Draft",
    "InvalidSessionId",
    "ItemNotStorableError",
    "JSONLSession",
    "JSONLSessionError",
    "LockTimeout",
    "MalformedLineError",
    "SessionDirectory",
    "SessionFileError",
    "SessionInfo",
    "SessionSettings",
    "TornTailWarning",
    "UnsafePathError",
    "copy_session",
]
