"""The CLI's ``tail -f``: print a session's changes as they happen, until Ctrl-C or a timeout.

The watching is ``JSONLSession.watch_sync``; this prints each change.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from .output import Failure, note, plural, print_items, print_json, style_for

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    import threading

    from ..session.store import JSONLSession


def follow(args: argparse.Namespace, session: JSONLSession) -> int:
    """``tail -f``: the newest N items, then every change as it happens, until Ctrl-C or SIGTERM.

    With ``--json`` each line is one change, ``{"kind": ..., "count": ..., "items": [...]}``,
    so a script can tell appended items from pops and clears.
    """
    style = style_for(sys.stdout)
    limit = f" (up to {args.timeout:g} s)" if args.timeout is not None else ""
    if not session.path.is_file():
        note(f"{args.id}: no such session in {args.dir} yet; waiting for it{limit}")
    # Ctrl-C ends the watch (closed cleanly) and reaches main() as KeyboardInterrupt: exit 130.
    with _stop_after(args.timeout) as stop, session.watch_sync(start=args.n, stop_event=stop) as changes:
        for change in changes:
            if args.json:
                print_json({"kind": change.kind, "count": change.count, "items": change.items})
            elif change.kind == "appended":
                print_items(args, change.items)
            elif change.kind == "removed":
                print(style.dim(f"-- {change.count} item{plural(change.count)} removed --"))
            elif change.kind == "replaced":
                print(style.dim(f"-- session rewritten: now {change.count} item{plural(change.count)} --"))
                print_items(args, change.items[-args.n :] if args.n else [])
            else:  # cleared, deleted
                print(style.dim(f"-- session {change.kind} --"))
            sys.stdout.flush()
    if args.timeout is not None and not session.path.is_file():
        raise Failure(f"{args.id}: still no such session after {args.timeout:g} s")
    return 0


@contextmanager
def _stop_after(seconds: float | None) -> Iterator[threading.Event]:
    """An event set after ``seconds`` (never when None), for ``tail -f --timeout``."""
    import threading

    stop = threading.Event()
    timer = threading.Timer(seconds, stop.set) if seconds is not None else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    try:
        yield stop
    finally:
        if timer is not None:
            timer.cancel()
