"""The CLI's ``export`` and ``import``: copy sessions to and from the SDK's Redis and SQL backends.

The copy rules (incremental by content, never overwrite without ``--replace``, verify before
writing, all or nothing per session, metadata in the companion) are the library's
(``transfer.single``, ``transfer.all_sessions``); this prints what they answer, draws a
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
from ..transfer.urls import error_line, quotes_password, shown_urls
from .lookup import directory, existing, open_session
from .output import Failure, error, note, plural

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from typing import Any


def cmd_export(args: argparse.Namespace) -> int:
    """``export``: one session, or ``--all``, to a Redis or SQL URL; only what the backend lacks."""
    import asyncio

    from ..transfer.single import export_session

    if args.all:
        if args.id or args.as_id:
            return _usage("export --all copies every session under its own id: give no ID and no --as")
        return _copy_all("export", args.to, args)
    if not args.id:
        return _usage("export: give a session ID, or --all")
    source = existing(args, args.id)
    url, target_id = args.to, args.as_id or args.id
    replace = getattr(args, "replace", False)
    outcome = asyncio.run(
        _in_backend_errors(
            url, export_session(source, url, target_id, progress=_progress_bar("export"), replace=replace)
        )
    )
    where = f"{shown_urls(url)} as {target_id}"
    _say_or_fail(source.session_id, outcome, "exported", f"to {where}", f"in {where}")
    return 0


def _refuse_missing_sqlite_file(url: str) -> None:
    """Reading from a ``sqlite:///`` file that does not exist: an error, not a new empty database.

    The SDK's ``SQLiteSession`` creates the file (and its WAL) when it opens it.
    """
    import os

    from ..transfer.sdk_schema import kind_of

    if kind_of(url) == "sqlite":
        path = url.split(":///", 1)[1]
        if path and path != ":memory:" and not os.path.exists(path):
            raise Failure(f"{shown_urls(url)}: no such database file")


def cmd_import(args: argparse.Namespace) -> int:
    """``import``: one session, or ``--all``, from a Redis or SQL URL; only what the file lacks."""
    import asyncio

    from ..transfer.single import import_session

    if args.all:
        if args.id or args.as_id:
            return _usage("import --all copies every session under its own id: give no --id and no --as")
        for url in args.url:
            _refuse_missing_sqlite_file(url)
        return _copy_all("import", args.url[0] if len(args.url) == 1 else args.url, args)
    if not args.id:
        return _usage("import: give --id SOURCE_ID, or --all")
    from ..transfer.shards import home_of

    url, target = home_of(args.id, args.url), open_session(args, args.as_id or args.id)
    _refuse_missing_sqlite_file(url)
    target.get_items_sync(limit=1)  # a symlink or an unreadable file here fails before the backend is read
    replace = getattr(args, "replace", False)
    outcome = asyncio.run(
        _in_backend_errors(
            url, import_session(url, args.id, target, progress=_progress_bar("import"), replace=replace)
        )
    )
    if outcome.status == "failed" and not outcome.items:
        raise Failure(f"{shown_urls(url)}: session {args.id!r} has no items (wrong --id?)")
    _say_or_fail(target.session_id, outcome, "imported", f"from {shown_urls(url)}", f"in {target.directory}")
    return 0


def _say_or_fail(name: str, outcome: Any, verb: str, where: str, there: str) -> None:
    """One line on stderr for a single copy's outcome; ``differs`` and ``failed`` exit 1."""
    items = f"{outcome.items} item{plural(outcome.items)}"
    if outcome.status == "differs":
        raise Failure(f"{name}: {outcome.describe()} {there}; not overwritten (--replace overwrites it)")
    if outcome.status == "failed":
        raise Failure(f"{name}: {outcome.detail}")
    said = {
        "copied": f"{verb} {items} {where}",
        "appended": f"appended {items} {where}",
        "replaced": f"replaced with {items} {where}",
        "skipped": f"up to date {there}",
    }[outcome.status]
    note(f"{name}: {said}")


def _copy_all(verb: str, url: str | list[str], args: argparse.Namespace) -> int:
    """``export --all`` / ``import --all``: a line per session appended, differing or failed; a summary."""
    import asyncio

    from ..transfer.all_sessions import export_all, import_all

    progress = _progress_bar(verb, unit="sessions")
    replace = getattr(args, "replace", False)
    with _terminal_line_ended(progress):
        if verb == "export":
            assert isinstance(url, str)  # export takes one --to
            work = export_all(directory(args), url, progress=progress, replace=replace)
        else:
            work = import_all(url, directory(args), progress=progress, replace=replace)
        outcomes = asyncio.run(_in_backend_errors(url, work))
    for outcome in outcomes:
        if outcome.status in ("appended", "replaced"):
            note(f"{outcome.session_id}: {outcome.describe()}")
        elif outcome.status == "differs":
            note(f"{outcome.session_id}: {outcome.describe()}; not overwritten")
        elif outcome.status == "failed":
            note(f"{outcome.session_id}: failed: {outcome.detail}")
    counts = Counter(outcome.status for outcome in outcomes)
    copied = sum(outcome.items for outcome in outcomes if outcome.status == "copied")
    appended = sum(outcome.items for outcome in outcomes if outcome.status == "appended")
    where = f"to {shown_urls(url)}" if verb == "export" else f"from {shown_urls(url)}"
    sessions = f"{counts['copied']} session{plural(counts['copied'])} ({copied} item{plural(copied)})"
    grown = f"{counts['appended']} appended ({appended} item{plural(appended)})"
    replaced = f"{counts['replaced']} replaced, " if counts["replaced"] else ""
    print(
        f"{verb}ed {sessions} {where}; {grown}, {replaced}"
        f"{counts['skipped']} up to date, {counts['differs']} differ, {counts['failed']} failed",
        file=sys.stderr,
    )
    return 1 if counts["differs"] or counts["failed"] else 0


async def _in_backend_errors(url: str | list[str], work: Any) -> Any:
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
async def _backend_errors(url: str | list[str]) -> AsyncIterator[None]:
    """Turn a backend's own exceptions (connection refused, bad credentials...) into one line."""
    try:
        yield
    except (Failure, JSONLSessionError):
        raise
    except Exception as exc:  # redis.ConnectionError, sqlalchemy OperationalError, a driver ValueError...
        if isinstance(exc, ValueError) and not quotes_password(str(exc), url):
            raise
        raise Failure(f"{shown_urls(url)}: {error_line(exc, url)}") from None


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
