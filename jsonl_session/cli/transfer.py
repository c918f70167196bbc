"""The CLI's ``export`` and ``import``: copy sessions to and from the SDK's Redis and SQL backends.

Kept out of ``cli`` so that module stays a parser (and ``ls`` does not load what only these
use); like it, this only formats what the library answers (``transfer``, ``bulk``).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

from ..core import codec
from ..core.errors import JSONLSessionError
from . import commands as cli

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from typing import Any

    from ..session.store import JSONLSession


def cmd_export(args: argparse.Namespace) -> int:
    """``export``: one session, or ``--all``, to a Redis or SQL URL."""
    import asyncio

    if args.all:
        if args.id or args.as_id:
            return _usage("export --all copies every session under its own id: give no ID and no --as")
        return _copy_all("export", args.to, args)
    if not args.id:
        return _usage("export: give a session ID, or --all")
    source = cli._existing(args, args.id)
    return asyncio.run(_copy_to_url(source, args.to, args.as_id or args.id))


def cmd_import(args: argparse.Namespace) -> int:
    """``import``: one session, or ``--all``, from a Redis or SQL URL."""
    import asyncio

    if args.all:
        if args.id or args.as_id:
            return _usage("import --all copies every session under its own id: give no --id and no --as")
        return _copy_all("import", args.url, args)
    if not args.id:
        return _usage("import: give --id SOURCE_ID, or --all")
    target = cli._open(args, args.as_id or args.id)
    return asyncio.run(_copy_from_url(args.url, args.id, target))


def _copy_all(verb: str, url: str, args: argparse.Namespace) -> int:
    """``export --all`` / ``import --all``: one line per session that was not copied, then a summary."""
    import asyncio

    from ..transfer.folders import export_all, import_all

    progress = _progress_bar(verb, unit="sessions")
    with _terminal_line_ended(progress):
        if verb == "export":
            outcomes = asyncio.run(
                _in_backend_errors(url, export_all(cli._directory(args), url, progress=progress))
            )
        else:
            outcomes = asyncio.run(
                _in_backend_errors(url, import_all(url, cli._directory(args), progress=progress))
            )
    for outcome in outcomes:
        if outcome.status in ("differs", "failed"):
            print(f"{outcome.session_id}: {outcome.status}: {outcome.detail}", file=sys.stderr)
    counts = Counter(outcome.status for outcome in outcomes)
    copied = sum(outcome.items for outcome in outcomes if outcome.status == "copied")
    where = f"to {_shown(url)}" if verb == "export" else f"from {_shown(url)}"
    sessions = f"{counts['copied']} session{cli._s(counts['copied'])} ({copied} item{cli._s(copied)})"
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
    cli._error(message)
    return 2


async def _copy_to_url(source: JSONLSession, url: str, target_id: str) -> int:
    from ..transfer.backends import copy_session, open_url

    async with _backend_errors(url), open_url(url, target_id) as target:
        if await target.get_items(limit=1):
            raise cli.Failure(f"{_shown(url)}: session {target_id!r} already has items; not overwriting it")
        count = await copy_session(source, target, progress=_progress_bar("export"))
    print(
        f"{source.session_id}: exported {count} item{cli._s(count)} to {_shown(url)} as {target_id}",
        file=sys.stderr,
    )
    from .history import metadata_left_behind

    left = metadata_left_behind(source)
    if left:
        cli._note(f"{source.session_id}: {left} stay in {source.directory} (the backend stores items only)")
    return 0


async def _copy_from_url(url: str, source_id: str, target: JSONLSession) -> int:
    from ..transfer.backends import copy_session, open_url

    if target.get_items_sync(limit=1):
        raise cli.Failure(
            f"{target.session_id}: session already has items in {target.directory}; not overwriting it"
        )
    async with _backend_errors(url), open_url(url, source_id) as source:
        # Read everything and check that it can be stored before writing anything: a bad
        # item must not leave half a conversation behind.
        fetched = _Fetched(await source.get_items())
        try:
            codec.encode_items(fetched.items)
        except ValueError as exc:
            raise cli.Failure(f"{_shown(url)}: session {source_id!r}: {exc}; nothing imported") from None
        count = await copy_session(fetched, target, progress=_progress_bar("import"))
    if not count:
        raise cli.Failure(f"{_shown(url)}: session {source_id!r} has no items (wrong --id?)")
    cli._note(f"{target.session_id}: imported {count} item{cli._s(count)} from {_shown(url)}")
    return 0


class _Fetched:
    """Items already read from a backend, offered as a session to ``copy_session``."""

    def __init__(self, items: list[Any]) -> None:
        self.items = items

    async def get_items(self, limit: int | None = None) -> list[Any]:
        if limit is None:
            return self.items
        return self.items[-limit:] if limit else []


@asynccontextmanager
async def _backend_errors(url: str) -> AsyncIterator[None]:
    """Turn a backend's own exceptions (connection refused, bad credentials...) into one line."""
    try:
        yield
    except (cli.Failure, JSONLSessionError):
        raise
    except Exception as exc:  # redis.ConnectionError, sqlalchemy OperationalError, a driver ValueError...
        first_line = (str(exc).strip().splitlines() or [""])[0]  # SQLAlchemy appends "(Background on ...)"
        if _quotes_password(first_line, url):
            # e.g. redis-py on an unencoded "/" in it: "Port could not be cast to integer value as 'hun'"
            first_line = (
                "(message not shown: it quotes the password; percent-encode any '/', '@' or ':' in it)"
            )
        elif isinstance(exc, ValueError):
            raise
        raise cli.Failure(f"{_shown(url)}: {type(exc).__name__}: {first_line}") from None


def _quotes_password(text: str, url: str) -> bool:
    """Whether ``text`` holds the URL's password or a piece of it (as a driver that split it would)."""
    password = _password(url)
    if not password:
        return False
    return any(piece in text for piece in (password, *re.split(r"[/@:]", password)) if len(piece) >= 2)


def _password(url: str) -> str | None:
    """The password in ``url``: from ``user:`` to the *last* ``@``, so a ``/`` or ``@`` written
    in it unencoded (which the drivers accept) is part of it, not the end of it."""
    match = re.match(r"[^:/]+://[^/@:]*:(.+)@", url)
    return match.group(1) if match else None


def _shown(url: str) -> str:
    """The URL with any password masked, for messages."""
    password = _password(url)
    return url.replace(f":{password}@", ":***@", 1) if password else url


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
