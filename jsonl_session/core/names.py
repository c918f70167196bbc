"""Session id <-> file name, so that no id can ever name a file outside its directory.

Ids made of ASCII letters, digits, ``.``, ``_`` and ``-`` are used as they are
(``convo_123`` -> ``convo_123.jsonl``): the common case stays readable in ``ls`` and git.
Any other id is percent-encoded (``a/b`` -> ``a%2Fb.jsonl``). Plain ids never contain ``%``,
so decoding is unambiguous, and since every name ends in ``.jsonl`` it can never be ``.``
or ``..`` or contain a separator.
"""

from __future__ import annotations

import re

from .errors import InvalidSessionId

SUFFIX = ".jsonl"
# Where sessions live unless told otherwise (here, not in session/store.py, so that listing a
# folder does not import the session class).
DEFAULT_DIRECTORY = "sessions"
TORN_SUFFIX = ".torn"

# Sidecars: ``<file>.jsonl<kind>`` (see ``sidecar_files``).
LINEAGE = ".lineage"
USAGE = ".usage"
RUN = ".run"
META = ".meta"  # title, tags, owner and a free-form mapping (history/metadata.py)
TIMES = ".times"  # when each item was added, one record per item (core/item_times.py)
DROPPED = ".dropped"  # what `check --fix` dropped, one JSON line each (tools/resend_fix.py)
KINDS = (LINEAGE, USAGE, RUN, META, TIMES, DROPPED)
"""Sidecar suffixes that describe a session and go (rm, import) with it. ``.torn`` is not one:
it holds bytes nobody has looked at, and ``rm`` keeps it."""
# Most file systems cap a name at 255 bytes; leave room for the suffix and sidecar suffixes.
MAX_NAME_BYTES = 200

_PLAIN_ID = re.compile(r"[A-Za-z0-9._-]+")


def filename_for(session_id: str) -> str:
    """Return the file name that stores ``session_id``.

    Example:
        >>> filename_for("convo_123"), filename_for("user/42")
        ('convo_123.jsonl', 'user%2F42.jsonl')
    """
    if not isinstance(session_id, str):
        raise InvalidSessionId(f"session id must be a str, not {type(session_id).__name__}")
    if not session_id:
        raise InvalidSessionId("session id must not be empty")
    if _PLAIN_ID.fullmatch(session_id):
        stem = session_id
    else:
        from urllib.parse import quote  # here: it imports ipaddress, ~2 ms of start-up for plain ids

        try:
            stem = quote(session_id, safe="", errors="strict")
        except UnicodeEncodeError:
            raise InvalidSessionId(
                f"session id {session_id!r} is not valid Unicode (lone surrogate)"
            ) from None
    if len(stem.encode()) > MAX_NAME_BYTES:
        raise InvalidSessionId(
            f"session id is too long: its file name would be {len(stem.encode())} bytes, "
            f"the limit is {MAX_NAME_BYTES}"
        )
    return stem + SUFFIX


def id_for(filename: str) -> str | None:
    """Return the session id stored in ``filename``, or None if it is not a session file.

    Example:
        >>> id_for("user%2F42.jsonl"), id_for("notes.txt")
        ('user/42', None)
    """
    if not filename.endswith(SUFFIX) or filename.startswith(".#"):
        return None
    stem = filename[: -len(SUFFIX)]
    if not stem:
        return None
    if _PLAIN_ID.fullmatch(stem) and len(stem) <= MAX_NAME_BYTES:
        return stem  # what filename_for(stem) gives back: a listing of 100,000 sessions skips that call
    # Only names we would have produced count: this skips editor swap files and the like.
    try:
        if "%" in stem:
            from urllib.parse import unquote

            session_id = unquote(stem, errors="strict")
        else:
            session_id = stem
        return session_id if filename_for(session_id) == filename else None
    except (UnicodeDecodeError, InvalidSessionId):
        return None
