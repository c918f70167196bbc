"""The CLI's ``mirror``: keep a PostgreSQL or Redis database equal to the folder, live.

The mirror itself is the library's (``transfer.mirror``: catch up, then follow, retry after an
outage); this prints what it reports. Outcome lines (``--json``: one JSON object per session)
go to stdout, the progress bar, notices and the summary to stderr; session ids and every
other foreign string are printed escaped (``--json`` keeps them exact). Exit codes: 0 done (or
stopped by SIGTERM, once what the files hold is mirrored), 1 a failure or, with ``--verify``,
any difference, 2 a usage error or a refused ``--delete`` (a folder that cannot be read, or
most of the database at once without ``--yes``), 130 Ctrl-C.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from .. import JSONLSessionError
from ..render.terminal_text import printable
from ..transfer.urls import error_line, quotes_password, shown_urls
from .lookup import directory
from .output import Failure, UsageError, note, print_json

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from typing import Any

    from ..transfer.mirror import MirrorOutcome


def cmd_mirror(args: argparse.Namespace) -> int:
    """``mirror --to URL``: catch up and follow; ``--once``, ``--dry-run``, ``--verify``: catch up only."""
    import asyncio

    from ..transfer.mirror import catch_up_mirror, mirror_folder

    url = args.to[0] if len(args.to) == 1 else args.to  # several: sessions spread by their id's hash
    folder, screen = directory(args), _Screen()
    guard = {"delete": args.delete, "mass_delete": args.yes}
    if args.once or args.dry_run or args.verify:
        dry_run = args.dry_run or args.verify
        work = catch_up_mirror(folder, url, dry_run=dry_run, progress=screen.progress, **guard)
        outcomes = asyncio.run(_one_line_errors(url, work, screen))
        screen.end_line()
        for outcome in outcomes:
            if args.json:
                print_json(outcome.as_json())
            elif outcome.status != "same":
                print(shown(outcome.describe(dry_run=dry_run)))
        verb = "verified" if args.verify else "dry run" if args.dry_run else "caught up"
        note(_summary(outcomes, url, verb, dry_run=dry_run))
        failed = any(outcome.status == "failed" for outcome in outcomes)
        return 1 if failed or (args.verify and any(outcome.differs for outcome in outcomes)) else 0

    def report(outcome: MirrorOutcome) -> None:
        if args.json:
            print_json(outcome.as_json())
            sys.stdout.flush()  # a script reads it as it happens
        elif outcome.status == "failed":
            screen.say(shown(outcome.describe()))

    import signal
    import threading

    # A service manager's stop (SIGTERM): what the files hold is mirrored, then exit 0.
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    options = {"report": report, "notice": screen.say, "progress": screen.progress, **guard}
    asyncio.run(_one_line_errors(url, mirror_folder(folder, url, stop_event=stop, **options), screen))
    screen.end_line()
    return 0


def shown(line: str) -> str:
    """One line for a person: control characters escaped, and line breaks too (an id or a
    foreign row may hold them; a line must stay one line)."""
    return printable(line).replace("\n", "\\n").replace("\t", "\\t")


def _summary(outcomes: list[MirrorOutcome], url: str | list[str], verb: str, *, dry_run: bool = False) -> str:
    counts: Counter[str] = Counter(outcome.status for outcome in outcomes)
    labels = {"same": "up to date", "kept": "only there (kept)"}
    if dry_run:  # nothing was written: say what would have been
        labels |= {status: f"would be {status}" for status in ("created", "appended", "rewritten", "deleted")}
    order = ("same", "created", "appended", "rewritten", "deleted", "kept", "failed")
    parts = [f"{counts[status]} {labels.get(status, status)}" for status in order if counts[status]]
    sessions = sum(1 for outcome in outcomes if outcome.status != "kept")
    return f"{verb}: {sessions} session{'' if sessions == 1 else 's'} against {shown_urls(url)}: " + (
        ", ".join(parts) or "nothing to compare"
    )


class _Screen:
    """The progress bar (on a terminal only) and notices, which end a bar's line first."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.open = False  # a bar is drawn on the current line

    def progress(self, done: int, total: int) -> None:
        if not self.tty:
            return
        width = 30
        filled = width * done // total if total else width
        sys.stderr.write(f"\rcatching up [{'#' * filled}{'.' * (width - filled)}] {done}/{total} sessions")
        sys.stderr.flush()
        self.open = True
        if done >= total:
            self.end_line()

    def say(self, message: str) -> None:
        self.end_line()
        note(message)

    def end_line(self) -> None:
        if self.open:
            sys.stderr.write("\n")
            self.open = False


async def _one_line_errors(url: str | list[str], work: Any, screen: _Screen) -> Any:
    async with _database_errors(url, screen):
        return await work


@asynccontextmanager
async def _database_errors(url: str | list[str], screen: _Screen) -> AsyncIterator[None]:
    """A database's own exceptions (connection refused, bad credentials...) as one line, no password."""
    from ..transfer.mirror import FolderUnavailable, MassDeletionRefused

    try:
        yield
    except (FolderUnavailable, MassDeletionRefused) as exc:  # refused before anything was deleted
        screen.end_line()
        raise UsageError(str(exc)) from None
    except (Failure, JSONLSessionError):
        screen.end_line()
        raise
    except Exception as exc:
        screen.end_line()
        if isinstance(exc, ValueError) and not quotes_password(str(exc), url):
            raise
        raise Failure(f"{shown_urls(url)}: {error_line(exc, url)}") from None
