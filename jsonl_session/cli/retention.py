"""The CLI's retention commands: ``prune`` and ``restore``.

The work is the library's (``tools.retention``: ``prune``, ``restore``, ``list_archives``);
these parse the duration and print what it answers. ``prune`` only says what it would do
unless ``--yes`` is given.
"""

from __future__ import annotations

import time

from ..render.sizes import human_size
from ..render.terminal_text import printable
from .lookup import directory
from .output import UsageError, note, plural, print_json, skip_warning
from .parser import PROG

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    import argparse


def cmd_prune(args: argparse.Namespace) -> int:
    from ..tools.retention import ARCHIVED, WOULD_ARCHIVE, parse_duration, prune

    try:
        older_than = parse_duration(args.older_than)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    outcomes = prune(directory(args), older_than, dry_run=not args.yes)
    for outcome in outcomes:
        if args.json:
            print_json(
                {
                    "id": outcome.session_id,
                    "action": outcome.action,
                    "last_written": _when(outcome.last_written),
                    "files": list(outcome.files),
                    "size": outcome.size,
                    "archive": str(outcome.archive) if outcome.archive else None,
                    "reason": outcome.reason,
                }
            )
            continue
        shown = printable(outcome.session_id)
        if outcome.action == ARCHIVED:
            print(f"archived {shown} -> {printable(str(outcome.archive))}")
        elif outcome.action == WOULD_ARCHIVE:
            files = len(outcome.files)
            print(
                f"would archive {shown}  (last written {_when(outcome.last_written)}, "
                f"{files} file{plural(files)}, {human_size(outcome.size)})"
            )
        else:
            print(f"skipped {shown}: {printable(outcome.reason or '')}")
    done = sum(outcome.action == ARCHIVED for outcome in outcomes)
    failed = sum(outcome.failed for outcome in outcomes)
    if not args.yes:
        would = sum(outcome.action == WOULD_ARCHIVE for outcome in outcomes)
        hint = f"; run again with --yes to archive {'it' if would == 1 else 'them'}" if would else ""
        note(f"{would} session{plural(would)} not written for {args.older_than}{hint}")
    else:
        skipped = len(outcomes) - done
        note(
            f"archived {done} session{plural(done)}"
            + (f", skipped {skipped}" if skipped else "")
            + (f"; `{PROG} restore ID` brings one back" if done else "")
        )
    return 1 if failed else 0


def cmd_restore(args: argparse.Namespace) -> int:
    from ..tools.retention import list_archives, restore

    if args.list:
        if args.id:
            raise UsageError("give an ID or --list, not both")
        skipped: list[Exception] = []
        archived = list_archives(directory(args), on_error=lambda _path, exc: skipped.append(exc))
        width = max([2, *(len(printable(entry.session_id)) for entry in archived)])
        for entry in archived:
            if args.json:
                print_json(
                    {
                        "id": entry.session_id,
                        "archive": str(entry.archive),
                        "archived_at": entry.archived_at,
                        "last_written": entry.last_written,
                        "items": entry.items,
                        "files": list(entry.files),
                        "size": entry.size,
                        "usage": entry.usage,
                    }
                )
            else:
                print(
                    f"{printable(entry.session_id):<{width}}  {entry.items:>6}  {human_size(entry.size):>7}  "
                    f"archived {entry.archived_at}  last written {entry.last_written}"
                )
        for problem in skipped:
            skip_warning(problem)
        return 1 if skipped else 0
    if not args.id:
        raise UsageError("give the ID of an archived session (or --list)")
    outcome = restore(directory(args), args.id)
    if args.json:
        print_json(
            {
                "id": outcome.session_id,
                "archive": str(outcome.archive),
                "files": list(outcome.files),
                "already_restored": outcome.already_restored,
            }
        )
    count = len(outcome.files)
    note(
        f"{printable(args.id)}: restored {count} file{plural(count)} from {printable(str(outcome.archive))}"
        + (" (an interrupted restore had written them; archive removed)" if outcome.already_restored else "")
    )
    return 0


def _when(mtime: float) -> str:
    if mtime <= 0:
        return "?"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(int(mtime)))
