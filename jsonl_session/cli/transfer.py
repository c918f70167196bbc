"""The CLI's ``export`` and ``import``: copy sessions to and from the SDK's Redis and SQL backends.

The copy rules (never overwrite, verify before writing, all or nothing per session) are the
library's (``transfer.single``, ``transfer.folders``); this prints what they answer, draws a
progress bar on a terminal, and turns a backend's own exceptions into one line without the
password. ``ls`` does not load this module.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

from .. import JSONLSessionError
from ..transfer.urls import quotes_password, shown_url
from .lookup import directory, existing, open_session
from .output import Failure, error, note, plural

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from typing import Any


def cmd_export(args: argparse.Namespace) -> int:
    """``export``: one session, or ``--all``, to a Redis or SQL URL."""
    import asyncio

    from ..transfer.single import export_session, metadata_left_behind

    if args.all:
        if args.id or args.as_id:
            return _usage("export --all copies every session under its own id: give no ID and no --as")
        return _copy_all("export", args.to, args)
    if not args.id:
        return _usage("export: give a session ID, or --all")
    source = existing(args, args.id)
    url, target_id = args.to, args.as_id or args.id
    outcome = asyncio.run(
        _in_backend_errors(url, export_session(source, url, target_id, progress=_progress_bar("export")))
    )
    if outcome.status != "copied":  # skipped (the same items) or differs: never overwritten
        raise Failure(f"{shown_url(url)}: session {target_id!r} already has items; not overwriting it")
    print(
        f"{source.session_id}: exported {outcome.items} item{plural(outcome.items)} "
        f"to {shown_url(url)} as {target_id}",
        file=sys.stderr,
    )
    labels = metadata_left_behind(source)
    if labels:  # "its usage log stays", "its lineage, its usage log stay"
        stay = "stays" if len(labels) == 1 else "stay"
        where = f"{stay} in {source.directory} (the backend stores items only)"
        note(f"{source.session_id}: {', '.join(labels)} {where}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    """``import``: one session, or ``--all``, from a Redis or SQL URL."""
    import asyncio

    from ..transfer.single import import_session

    if args.all:
        if args.id or args.as_id:
            return _usage("import --all copies every session under its own id: give no --id and no --as")
        return _copy_all("import", args.url, args)
    if not args.id:
        return _usage("import: give --id SOURCE_ID, or --all")
    url, target = args.url, open_session(args, args.as_id or args.id)
    if target.get_items_sync(limit=1):  # refused before reading the backend
        raise Failure(
            f"{target.session_id}: session already has items in {target.directory}; not overwriting it"
        )
    outcome = asyncio.run(
        _in_backend_errors(url, import_session(url, args.id, target, progress=_progress_bar("import")))
    )
    if outcome.status == "failed":
        if not outcome.items:
            raise Failure(f"{shown_url(url)}: session {args.id!r} has no items (wrong --id?)")
        raise Failure(f"{shown_url(url)}: session {args.id!r}: {outcome.detail}")
    if outcome.status != "copied":  # filled meanwhile: never overwritten
        raise Failure(
            f"{target.session_id}: session already has items in {target.directory}; not overwriting it"
        )
    note(f"{target.session_id}: imported {outcome.items} item{plural(outcome.items)} from {shown_url(url)}")
    return 0


def _copy_all(verb: str, url: str, args: argparse.Namespace) -> int:
    """``export --all`` / ``import --all``: one line per session that was not copied, then a summary."""
    import asyncio

    from ..transfer.folders import export_all, import_all

    progress = _progress_bar(verb, unit="sessions")
    with _terminal_line_ended(progress):
        if verb == "export":
            outcomes = asyncio.run(
                _in_backend_errors(url, export_all(directory(args), url, progress=progress))
            )
        else:
            outcomes = asyncio.run(
                _in_backend_errors(url, import_all(url, directory(args), progress=progress))
            )
    folder = directory(args).directory
    for outcome in outcomes:
        if outcome.status in ("differs", "failed"):
            print(f"{outcome.session_id}: {outcome.status}: {outcome.detail}", file=sys.stderr)
        elif outcome.left_behind and outcome.status == "copied":
            left = ", ".join(outcome.left_behind)
            note(f"{outcome.session_id}: {left} stay in {folder} (the backend stores items only)")
    counts = Counter(outcome.status for outcome in outcomes)
    copied = sum(outcome.items for outcome in outcomes if outcome.status == "copied")
    where = f"to {shown_url(url)}" if verb == "export" else f"from {shown_url(url)}"
    sessions = f"{counts['copied']} session{plural(counts['copied'])} ({copied} item{plural(copied)})"
    print(
        f"{verb}ed {sessions} {where}; "
        f"{counts['skipped']} already there, {counts['differs']} differ, {counts['failed']} failed",
        file=sys.stderr,
    )
    return 1 if counts["differs"] or counts["failed"] else 0


async def _in_backend_errors(url: str, work: Any) -> Any:
    async with _backend_errors(url):
        return await work


@contextmanager
def _terminal_line_ended(progress: Any) -> Iterator[None]:
    """If a progress bar is drawn and the copy stops early, end its line before the error."""
    try:
        yield
    except BaseException:
        if progress is not None:
            sys.stderr.write("\n")
        raise


def _usage(message: str) -> int:
    error(message)
    return 2


@asynccontextmanager
async def _backend_errors(url: str) -> AsyncIterator[None]:
    """Turn a backend's own exceptions (connection refused, bad credentials...) into one line."""
    try:
        yield
    except (Failure, JSONLSessionError):
        raise
    except Exception as exc:  # redis.ConnectionError, sqlalchemy OperationalError, a driver ValueError...
        first_line = (str(exc).strip().splitlines() or [""])[0]  # SQLAlchemy appends "(Background on ...)"
        if quotes_password(first_line, url):
            # e.g. redis-py on an unencoded "/" in it: "Port could not be cast to integer value as 'hun'"
            first_line = (
                "(message not shown: it quotes the password; percent-encode any '/', '@' or ':' in it)"
            )
        elif isinstance(exc, ValueError):
            raise
        raise Failure(f"{shown_url(url)}: {type(exc).__name__}: {first_line}") from None


def _progress_bar(verb: str, unit: str = "items") -> Any:
    """A ``progress(done, total)`` callback drawing on stderr when it is a terminal, else None."""
    if not sys.stderr.isatty():
        return None

    def progress(done: int, total: int) -> None:
        width = 30
        filled = width * done // total if total else width
        end = "\n" if done >= total else ""
        sys.stderr.write(f"\r{verb} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} {unit}{end}")
        sys.stderr.flush()

    return progress
