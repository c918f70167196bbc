"""A session's title, tags, owner and a small free-form mapping: ``<file>.jsonl.meta``.

The SDK's sessions carry none of this (it declined to add session metadata), so "the sessions
of user 42" or "the ones tagged bug" meant opening files. The sidecar is one JSON object with
stable bytes, every key optional (an absent key is unset)::

    {
      "extra": {"ticket": "T-12"},
      "owner": "user-42",
      "tags": ["billing", "bug"],
      "title": "Refund for order A-1042",
      "updated_at": "2026-12-03T19:40:07Z"
    }

It is read, changed and replaced atomically (``core.sidecar_files.write_json``) while the session's
lock is held exclusively: two processes tagging one session at once both keep their tags
(``tests/history/test_metadata.py``), and a reader sees the old object or the new one, without
a lock. ``rm`` removes it with the other sidecars, ``prune`` archives it, a session created
where a deleted one was starts without it (``core.names.KINDS``).

A session without a title shows its first user message, whitespace collapsed and cut to 60
characters (:func:`default_title`); that default is worked out when shown, never stored.

Example:
    >>> changed(SessionMetadata(), title="Refund", add_tags=["bug", "bug"], extra={"k": 1}).tags
    ('bug',)
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ..core import sidecar_files
from ..core.errors import SessionFileError
from ..core.names import META
from ..core.transaction import Transaction
from .lineage import now
from .titles import default_title, first_user_message

MAX_TEXT = 200
"""Characters of a title, an owner or an ``extra`` key."""
MAX_TAG = 64
MAX_TAGS = 64
MAX_BYTES = sidecar_files.LIMITS[META]
"""The whole file (64 KiB), as written and as read: metadata is for finding sessions, not for
storing data. A bigger file is refused after reading one byte past the limit."""
_MAX_DEPTH = 16
_KEYS = frozenset({"title", "tags", "owner", "extra", "updated_at"})


class Keep(enum.Enum):
    """The type of :data:`KEEP`."""

    KEEP = "keep"


KEEP: Final = Keep.KEEP
"""The default of :func:`changed`'s arguments: leave that field as it is."""


@dataclass(frozen=True)
class SessionMetadata:
    """What is stored about a session besides its items: title, tags, owner, a free-form mapping.

    ``default_title`` is not stored: it is the session's first user message, shortened, filled in
    by ``JSONLSession.get_metadata_sync()``; :attr:`shown_title` is the title or that default.

    Example:
        >>> meta = SessionMetadata(tags=("bug",), owner="user-42", default_title="Hi there")
        >>> meta.shown_title, meta.is_empty
        ('Hi there', False)
    """

    title: str | None = None
    tags: tuple[str, ...] = ()
    owner: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Free-form JSON values under string keys (a ticket number, a channel, a customer id...)."""
    updated_at: str | None = None
    """When it was last changed: UTC, ISO 8601 to the second (None if never)."""
    default_title: str | None = field(default=None, compare=False)

    @property
    def shown_title(self) -> str | None:
        """The title, or else the first user message (shortened); None if neither."""
        return self.title if self.title is not None else self.default_title

    @property
    def is_empty(self) -> bool:
        """True when nothing is set (no title, tags, owner or extra)."""
        return self.title is None and not self.tags and self.owner is None and not self.extra

    def to_json(self) -> dict[str, Any]:
        """The object the sidecar stores (unset keys left out; ``default_title`` never stored)."""
        stored: dict[str, Any] = {"extra": dict(self.extra), "owner": self.owner, "tags": list(self.tags)}
        stored.update(title=self.title, updated_at=self.updated_at)
        return {key: value for key, value in stored.items() if value not in (None, [], {})}

    @classmethod
    def from_json(cls, path: Path, value: Any) -> SessionMetadata:
        """Validate what was read from ``path``; a hand-broken file is named, not guessed at."""
        try:
            if not isinstance(value, dict):
                raise TypeError(f"not a JSON object (a {type(value).__name__})")
            unknown = sorted(set(value) - _KEYS)
            if unknown:
                raise ValueError(f"unknown key {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})")
            updated = value.get("updated_at")
            if updated is not None and not isinstance(updated, str):
                raise ValueError("updated_at must be a string")
            return changed(
                cls(updated_at=updated),
                title=value.get("title"),
                tags=value.get("tags", []),
                owner=value.get("owner"),
                extra=value.get("extra", {}),
                stamp=False,
            )
        except (TypeError, ValueError) as exc:
            raise SessionFileError(path, f"not a metadata record: {exc}; fix or delete it") from None


def changed(
    current: SessionMetadata,
    *,
    title: str | None | Keep = KEEP,
    tags: Iterable[str] | Keep = KEEP,
    add_tags: Iterable[str] = (),
    remove_tags: Iterable[str] = (),
    owner: str | None | Keep = KEEP,
    extra: Mapping[str, Any] | Keep = KEEP,
    stamp: bool = True,
) -> SessionMetadata:
    """``current`` with the changes asked for, checked (a pure function).

    ``title`` and ``owner``: a string sets, None clears. ``tags`` replaces the tags, then
    ``add_tags`` and ``remove_tags`` apply (tags are kept sorted, without repeats). ``extra``
    is merged key by key into the mapping, a None value removing its key (as a JSON merge patch
    does at the top level). ``stamp`` sets ``updated_at`` to now.

    Raises:
        ValueError: a title, owner or tag that is empty, not one line, has control characters
            or is too long; an ``extra`` value that is not JSON (NaN, sets, integers beyond 64
            bits, deeper than 16); or a record over :data:`MAX_BYTES`.
    """
    new_title = current.title if title is KEEP else _text("title", title, MAX_TEXT)
    new_owner = current.owner if owner is KEEP else _text("owner", owner, MAX_TEXT)
    tag_set = (
        set(current.tags) if isinstance(tags, Keep) else {_tag(tag) for tag in string_list("tags", tags)}
    )
    tag_set |= {_tag(tag) for tag in string_list("add_tags", add_tags)}
    tag_set -= set(string_list("remove_tags", remove_tags))
    if len(tag_set) > MAX_TAGS:
        raise ValueError(f"at most {MAX_TAGS} tags, not {len(tag_set)}")
    merged = dict(current.extra)
    if not isinstance(extra, Keep):
        if not isinstance(extra, Mapping):
            raise TypeError(f"extra must be a mapping, not {type(extra).__name__}")
        for key, value in extra.items():
            _text("an extra key", key, MAX_TEXT)
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = _json_value(key, value, 0)
    result = SessionMetadata(
        new_title,
        tuple(sorted(tag_set)),
        new_owner,
        merged,
        now() if stamp else current.updated_at,
        current.default_title,
    )
    size = len(sidecar_files.stable_json(result.to_json()))
    if size > MAX_BYTES:
        raise ValueError(f"metadata would take {size} bytes; the limit is {MAX_BYTES}")
    return result


def meta_path(session_path: Path) -> Path:
    """``<file>.jsonl.meta``."""
    return sidecar_files.sidecar(session_path, META)


def read_metadata(session_path: Path) -> SessionMetadata:
    """What ``<file>.jsonl.meta`` holds (empty if there is none); no lock needed (atomic replace).

    Raises:
        SessionFileError: the file is not valid JSON or not a metadata record.
        UnsafePathError: a symlink or another non-regular file sits there.
    """
    path = meta_path(session_path)
    value = sidecar_files.read_json(path)
    return SessionMetadata() if value is None else SessionMetadata.from_json(path, value)


def listed_metadata(session_path: Path) -> SessionMetadata:
    """What a listing shows of ``<file>.jsonl.meta``: :func:`read_metadata`, or, when that file
    cannot be read (too big, malformed, not a regular file, no permission), no metadata and an
    :class:`~jsonl_session.core.sidecar_files.UnreadableSidecarWarning` naming it.

    A bad sidecar must not hide its session: ``ls`` and the ``serve`` index list it without
    what the file says, and ``check`` names the problem.
    """
    import warnings

    try:
        return read_metadata(session_path)
    except (SessionFileError, OSError) as exc:
        reason = exc.message if isinstance(exc, SessionFileError) else (exc.strerror or str(exc))
        where = exc.path if isinstance(exc, SessionFileError) else meta_path(session_path)
        warnings.warn(
            sidecar_files.UnreadableSidecarWarning(f"{where}: {reason}; listed without its metadata"),
            stacklevel=2,
        )
        return SessionMetadata()


def write_metadata(session_path: Path, metadata: SessionMetadata, *, durable: bool) -> None:
    """Replace the sidecar atomically, or remove it when nothing is set. Call under the session's lock."""
    if metadata.is_empty:
        sidecar_files.remove(meta_path(session_path), durable=durable)
    else:
        sidecar_files.write_json(meta_path(session_path), metadata.to_json(), durable=durable)


def read_default_title(session_path: Path, *, lock_timeout: float) -> str | None:
    """The default title of the session at ``session_path``, read under its shared lock (None if none)."""
    with Transaction(session_path, write=False, timeout=lock_timeout) as file:
        if not file.exists:
            return None
        return default_title(first_user_message(file.fd, file.size))


def string_list(name: str, values: Iterable[str]) -> list[str]:
    """``values`` as a list; one string (not a list of them) is a TypeError."""
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name} must be a list of strings, not one string")
    return list(values)


def _text(name: str, value: Any, limit: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str or None, not {type(value).__name__}")
    text = value.strip()
    if not text:
        raise ValueError(f"{name} must not be empty (None clears it)")
    if len(text) > limit:
        raise ValueError(f"{name} is {len(text)} characters; the limit is {limit}")
    if any(ord(char) < 32 or 127 <= ord(char) < 160 or char in "\u2028\u2029" for char in text):
        raise ValueError(f"{name} must be one line without control characters: {text[:40]!r}")
    return text


def _tag(tag: Any) -> str:
    text = _text("a tag", tag, MAX_TAG)
    assert text is not None
    return text


def _json_value(key: str, value: Any, depth: int) -> Any:
    """``value`` if JSON stores it exactly (as the session's items must be), else ValueError."""
    if depth > _MAX_DEPTH:
        raise ValueError(f"extra[{key!r}] is nested deeper than {_MAX_DEPTH}")
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, int):
        if not -(2**63) <= value < 2**64:
            raise ValueError(f"extra[{key!r}] holds an integer beyond 64 bits")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"extra[{key!r}] holds {value}, which JSON cannot store")
        return value
    if isinstance(value, (list, tuple)):
        return [_json_value(key, part, depth + 1) for part in value]
    if isinstance(value, Mapping):
        if not all(isinstance(name, str) for name in value):
            raise ValueError(f"extra[{key!r}] has a key that is not a string")
        return {name: _json_value(key, part, depth + 1) for name, part in value.items()}
    raise ValueError(f"extra[{key!r}] is a {type(value).__name__}, which JSON cannot store")
