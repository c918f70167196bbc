"""The CLI's ``meta`` command: show or change a session's title, tags, owner and free-form keys.

It only turns options into one ``JSONLSession.set_metadata_sync`` call (read, changed and
written under the session's lock by the library) and prints what the session then has.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..render.terminal_text import printable
from .lookup import existing
from .output import UsageError, note, print_json
from .parser import PROG

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..history.metadata import SessionMetadata
    from ..session.store import JSONLSession


def cmd_meta(args: argparse.Namespace) -> int:
    """Apply the options given (none: only show), then print the metadata."""
    session = existing(args, args.id)
    changes: dict[str, Any] = {}
    if args.title is not None or args.no_title:
        changes["title"] = None if args.no_title else args.title
    if args.owner is not None or args.no_owner:
        changes["owner"] = None if args.no_owner else args.owner
    if args.tag:
        changes["add_tags"] = args.tag
    if args.untag:
        changes["remove_tags"] = args.untag
    extra: dict[str, Any] = {key: None for key in args.unset}
    extra.update(dict(args.set))
    if extra:
        changes["extra"] = extra
    try:
        about = session.set_metadata_sync(**changes) if changes else session.get_metadata_sync()
    except (TypeError, ValueError) as exc:  # a bad title, tag or key: typed wrong, nothing written
        raise UsageError(f"{args.id}: {exc}") from None
    if args.json:
        print_json({"id": args.id, **metadata_record(about)})
    else:
        print_metadata(about)
    return 0


def metadata_record(about: SessionMetadata) -> dict[str, Any]:
    """The fields ``meta --json`` prints (``default_title`` included, ``None`` when unset)."""
    return {
        "title": about.title,
        "default_title": about.default_title,
        "tags": list(about.tags),
        "owner": about.owner,
        "extra": dict(about.extra),
        "updated_at": about.updated_at,
    }


def print_metadata(about: SessionMetadata) -> None:
    """``title:``, ``tags:``, ``owner:``, one ``KEY = VALUE`` line per free-form key, ``updated:``."""
    if about.title is not None:
        title = about.title
    elif about.default_title is not None:
        title = f"{about.default_title}  (none set: the first user message)"
    else:
        title = "-"
    print(printable(f"title:   {title}"))
    print(printable(f"tags:    {', '.join(about.tags) or '-'}"))
    print(printable(f"owner:   {about.owner or '-'}"))
    for key, value in sorted(about.extra.items()):
        print(printable(f"extra:   {key} = {value if isinstance(value, str) else _json(value)}"))
    print(f"updated: {about.updated_at or '-'}")


def header_for(session: JSONLSession) -> str | None:
    """``show``'s header line for ``session`` (None without metadata); a hand-broken ``.meta`` is
    named in a warning, and the transcript still shown."""
    from .. import SessionFileError, UnsafePathError

    try:
        return header_line(session.get_metadata_sync())
    except (SessionFileError, UnsafePathError) as exc:
        note(f"{PROG}: warning: {exc}; its title, tags and owner are not shown")
        return None


def header_line(about: SessionMetadata) -> str | None:
    """``show``'s first line for a session with metadata (None without): title, tags, owner."""
    if about.is_empty:
        return None
    parts = [f"title: {about.shown_title}"] if about.shown_title else []
    if about.tags:
        parts.append(f"tags: {', '.join(about.tags)}")
    if about.owner is not None:
        parts.append(f"owner: {about.owner}")
    if about.extra:
        parts.append(f"extra: {', '.join(sorted(about.extra))}")
    return printable(" · ".join(parts))


def _json(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, sort_keys=True)
