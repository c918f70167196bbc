"""The CLI's session commands: ``ls``, ``show``, ``tail``, ``add``, ``pop``, ``clear``, ``rm``, ``fork``
and ``textconv``.

Each reads the parsed arguments, calls the library (``SessionDirectory``, ``JSONLSession``,
the renderers) and prints. ``ls`` is the command whose start-up matters most: this module
imports only what it needs, and the rest inside the commands that use it.
"""

from __future__ import annotations

import sys
import time

from .. import MalformedLineError
from ..render.sizes import human_size
from ..render.terminal_text import printable
from ..session.listing import held_note, utc_seconds
from .lookup import directory, existing, open_session
from .output import (
    Failure,
    UsageError,
    confirm_or_fail,
    error,
    note,
    plural,
    print_items,
    print_json,
    skip_warning,
)
from .parser import PROG

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    import argparse
    from datetime import datetime
    from pathlib import Path
    from typing import Any

    from ..session.listing import SessionInfo
    from ..session.store import JSONLSession

TITLE_WIDTH = 40


def cmd_ls(args: argparse.Namespace) -> int:
    skipped: list[Exception] = []
    infos = directory(args).list(
        on_error=lambda _path, exc: skipped.append(exc), tags=args.tag, owner=args.user, limit=args.limit
    )
    for exc in skipped:  # one unreadable file is named, and the rest listed (exit 1)
        skip_warning(exc)
    status = 1 if skipped else 0
    filtered = bool(args.tag) or args.user is not None
    out = sys.stdout
    if args.tree and not args.json and infos:
        from .history import print_tree

        print_tree(infos)
        return status
    # Most recently active first, as listed: the newest item's time (the .times sidecar), else the file's.
    if args.json:
        if not infos and filtered:
            return 1
        # The standard json module, not orjson: for these flat records (str, int, bool, None) it writes
        # the same bytes, and loads ~10 ms sooner (tests/cli/test_cli.py, tests/project/test_startup.py).
        import json

        for info in infos:
            record = {
                "id": info.session_id,
                "items": info.items,
                "size": info.size,
                "modified": iso_utc(info.mtime),
                "last_activity": iso_utc(info.last_activity),
                "path": str(info.path),
                "paused": info.paused,
                "held": info.held,
                "forked_from": info.forked_from,
                "title": info.title,
                "default_title": info.default_title,
                "needs_merge": info.needs_merge,
                "tags": list(info.tags),
                "owner": info.owner,
            }
            line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
            sys.stdout.buffer.write(line.encode())
        return status
    if not infos:
        note(f"no session{' match' if filtered else 's'} in {args.dir}")
        return 1 if filtered else status  # a filter that matches nothing is a failed search, as in grep

    shown = [printable(info.session_id) for info in infos]
    width = max(2, *(len(session_id) for session_id in shown))
    marks = [printable(mark(info)) for info in infos]
    about = _about_columns(infos)
    notes = "  NOTE" if any(marks) else ""
    heading = f"{'ID':<{width}}  {'ITEMS':>6}  {'SIZE':>7}  {'LAST ACTIVITY (UTC)':<19}{about[0]}{notes}"
    out.write(heading.rstrip() + "\n")
    for info, session_id, marked, described in zip(infos, shown, marks, about[1]):
        modified = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(utc_seconds(info.last_activity)))
        size = human_size(info.size)
        row = f"{session_id:<{width}}  {info.items:>6}  {size:>7}  {modified}{described}  {marked}"
        out.write(row.rstrip() + "\n")
    return status


def mark(info: SessionInfo) -> str:
    """What ``ls`` says after a session's row: a merge to finish, a paused run, a fork's origin."""
    notes = []
    if info.needs_merge:  # git left conflict markers in it: not counted as items, `check` lists them
        notes.append("needs merge")
    if info.paused:
        held = held_note(info.held)
        notes.append(f"paused (needs approval; {held})" if held else "paused (needs approval)")
    if info.forked_from is not None:
        notes.append(f"fork of {info.forked_from}")
    return ", ".join(notes)


def _about_columns(infos: list[SessionInfo]) -> tuple[str, list[str]]:
    """``ls``'s OWNER, TAGS and TITLE columns (heading, cells), each only when a session has one.

    A session without a title shows its default one (its first user message) in quotes.
    """
    columns = {
        "OWNER": [printable(info.owner or "-") for info in infos],
        "TAGS": [printable(",".join(info.tags) or "-") for info in infos],
        "TITLE": [_title_cell(info) for info in infos],
    }
    shown = {name: cells for name, cells in columns.items() if any(cell != "-" for cell in cells)}
    widths = {name: max(len(name), min(TITLE_WIDTH, max(map(len, cells)))) for name, cells in shown.items()}

    def line(values: list[str]) -> str:
        cut = [
            value if len(value) <= width else value[: width - 1] + "…"
            for value, width in zip(values, widths.values())
        ]
        return "".join(f"  {value:<{width}}" for value, width in zip(cut, widths.values()))

    return line(list(shown)), [line(list(row)) for row in zip(*shown.values())] or [""] * len(infos)


def _title_cell(info: SessionInfo) -> str:
    if info.title is not None:
        return printable(info.title)
    if info.default_title is None:
        return "-"
    shown = printable(info.default_title)
    cut = shown if len(shown) <= TITLE_WIDTH - 2 else shown[: TITLE_WIDTH - 3] + "…"
    return f'"{cut}"'  # quoted: the first user message, not a title someone set


def iso_utc(mtime: float) -> str:
    """``datetime.fromtimestamp(mtime, timezone.utc).isoformat(timespec="seconds")``, without datetime."""
    when = time.gmtime(utc_seconds(mtime))
    return (
        f"{when.tm_year:04d}-{when.tm_mon:02d}-{when.tm_mday:02d}"
        f"T{when.tm_hour:02d}:{when.tm_min:02d}:{when.tm_sec:02d}+00:00"
    )


def cmd_show(args: argparse.Namespace) -> int:
    if args.html or args.markdown or args.output:
        return _show_document(args)
    session = existing(args, args.id)
    if args.turns:
        from .history import show_turns

        return show_turns(args, session)
    if not args.json:
        from .meta import header_for

        header = header_for(session)
        if header is not None:
            print(header)
        from ..history.paused_runs import held_items

        held = held_note(held_items(session.path))
        if held:  # SDK 0.24: a paused run keeps a guardrailed turn out of the history until it resumes
            print(f"paused run: {held}, written when it resumes")
    first = 1
    try:
        if args.n is None:
            timed = session.get_items_with_times_sync()
        else:  # only the newest n are read: `show -n 1` of a 300 MB session peaked near 800 MB
            total = session.count_items_sync()
            timed = session.get_items_with_times_sync(limit=args.n) if args.n else []
            first = max(1, total - len(timed) + 1)
    except MalformedLineError:
        if args.json:  # JSON Lines cannot carry a line that is not an item: the error stands
            raise
        return _show_leniently(args, session, numbered=True)
    if args.json or all(when is None for _, when in timed):
        print_items(args, [item for item, _ in timed], first=first)
    else:
        _print_timed(timed, first)
    return 0


def _print_timed(timed: list[tuple[Any, datetime | None]], first: int) -> None:
    """``show``'s transcript with a time column: when each item was added (UTC), blank when unknown."""
    from ..render.item_text import render
    from .output import style_for

    style = style_for(sys.stdout)
    for offset, (item, when) in enumerate(timed):
        stamp = when.strftime("%Y-%m-%d %H:%M:%S") if when is not None else ""
        print(f"{first + offset:>4}  {stamp:<19}  {render(item, style=style)}")


def _show_document(args: argparse.Namespace) -> int:
    """``show --html`` / ``--markdown``: the whole transcript as one document, to stdout or ``-o FILE``."""
    from ..history.page_data import page_about
    from ..render.file_io import open_private, session_markdown, write_session_html

    if args.json or not (args.html or args.markdown):
        error("show: -o goes with --html or --markdown, and --json with neither")
        return 2
    if args.turns:  # refused, not ignored: a page of turns is text or JSON
        error("show: --turns lists turns as text or --json, not as --html or --markdown")
        return 2
    path = existing(args, args.id).path
    # the header's metadata and the turns panel (not on a -n page: it lacks most turns' items)
    about = page_about(path, turns=args.n is None, lock_timeout=args.lock_timeout) if args.html else None
    # The page is written with the session file's mode (0600 beside a 0600 session): a
    # transcript is as private as its session. HTML streams, a piece at a time.
    out = open_private(args.output, path) if args.output else sys.stdout.buffer
    try:
        if args.html:
            written = write_session_html(
                path, args.id, out, newest=args.n, lock_timeout=args.lock_timeout, about=about
            )
            count, bad, first_bad = written.count, written.unreadable, written.first_unreadable
        else:
            text, found = session_markdown(path, args.id, newest=args.n, lock_timeout=args.lock_timeout)
            out.write(text.encode())
            count, bad, first_bad = len(found.views), len(found.unreadable), found.unreadable[:5]
    finally:
        if args.output:
            out.close()
        else:
            out.flush()
    if bad:
        unreadable_warning(path, bad, first_bad)
    if args.output:
        print(f"{args.id}: wrote {args.output} ({count} item{plural(count)})", file=sys.stderr)
    return 0


def cmd_tail(args: argparse.Namespace) -> int:
    if args.timeout is not None and not args.follow:
        raise UsageError("--timeout only applies to tail -f")
    if args.follow:
        from .follow import follow

        return follow(args, open_session(args, args.id))
    session = existing(args, args.id)
    try:
        items = session.get_items_sync(limit=args.n)
    except MalformedLineError:
        if args.json:
            raise
        return _show_leniently(args, session, numbered=False)
    print_items(args, items)
    return 0


def _show_leniently(args: argparse.Namespace, session: JSONLSession, *, numbered: bool) -> int:
    """``show``/``tail`` of a file with bad lines: the items by line number, each bad line flagged.

    As ``show --html`` and ``textconv`` show them; the warning names ``check``, and conflict
    markers get its advice (resolve the merge).
    """
    from ..render.file_io import lines_leniently
    from ..render.item_text import render
    from ..tools.conflicts import ADVICE, is_marker
    from .output import style_for

    lines = lines_leniently(session.path, lock_timeout=args.lock_timeout)
    if args.n is not None:
        lines = lines[-args.n :] if args.n else []
    style = style_for(sys.stdout)
    markers: list[int] = []
    bad: list[int] = []
    for line in lines:
        if line.item is not None:
            print(render(line.item, number=line.number if numbered else None, style=style))
            continue
        marker = is_marker(line.raw)
        (markers if marker else bad).append(line.number)
        reason = "git merge conflict marker" if marker else line.reason
        raw = printable(line.raw[:SHOWN_BYTES].decode("utf-8", "replace"))
        where = f"{line.number:>4}  ! " if numbered else f"! line {line.number}: "
        print(style.dim(f"{where}unreadable line ({reason}): {raw}"))
    if markers:
        note(
            f"{PROG}: warning: {session.path}: git merge conflict markers (line "
            f"{_numbers(markers)}): {ADVICE}; `{PROG} check` lists them"
        )
    if bad:
        unreadable_warning(session.path, len(bad), bad[:5])
    return 0


SHOWN_BYTES = 200
"""How much of a bad line ``show`` prints (``check`` prints the reason; the file has the rest)."""


def _numbers(numbers: list[int], total: int | None = None) -> str:
    """The first five line numbers, and ``...`` if there are more (``total``: how many in all)."""
    more = (len(numbers) if total is None else total) > min(5, len(numbers))
    return ", ".join(map(str, numbers[:5])) + (", ..." if more else "")


def unreadable_warning(path: Path | str, count: int, first: list[int]) -> None:
    """The one warning for bad lines shown as they are: how many, where, and that ``check`` says why."""
    note(
        f"{PROG}: warning: {path}: {count} unreadable line{plural(count)} shown as "
        f"{'it is' if count == 1 else 'they are'} (line {_numbers(first, count)}); `{PROG} check` says why"
    )


def cmd_add(args: argparse.Namespace) -> int:
    session = open_session(args, args.id)
    if args.text == "-":
        from ..session.parsing import parse_items

        items = parse_items(sys.stdin.buffer.read(), "<stdin>")  # a bad line: nothing is added
    else:
        items = [{"role": args.role, "content": args.text}]
    session.add_items_sync(items)
    note(f"{args.id}: added {len(items)} item{plural(len(items))}")
    return 0


def cmd_pop(args: argparse.Namespace) -> int:
    item = existing(args, args.id).pop_item_sync()
    if item is None:
        raise Failure(f"{args.id}: session is empty; nothing to pop")
    print_json(item)
    return 0


def cmd_clear(args: argparse.Namespace) -> int:
    session = existing(args, args.id)
    count = session.count_items_sync()
    if not args.yes:
        confirm_or_fail(
            f"clear all {count} item{plural(count)} of {args.id}?", f"{args.id}: not cleared", "clear"
        )
    session.clear_session_sync()
    note(f"{args.id}: cleared {count} item{plural(count)}")
    return 0


def cmd_rm(args: argparse.Namespace) -> int:
    session = existing(args, args.id)
    if not args.yes:
        confirm_or_fail(f"delete {session.path}?", f"{args.id}: not deleted", "rm")
    if not directory(args).delete(args.id):
        raise Failure(f"{args.id}: no such session in {args.dir}")
    note(f"{args.id}: deleted {session.path}")
    return 0


def cmd_fork(args: argparse.Namespace) -> int:
    from ..history.turns import TooFewTurnsError

    existing(args, args.source)
    try:
        target = directory(args).fork(args.source, args.target, at=args.at, at_turn=args.at_turn)
    except TooFewTurnsError as exc:
        raise Failure(f"{args.source}: {exc.reason}") from None
    count = target.count_items_sync()
    short = f" (all it has; --at {args.at})" if args.at is not None and args.at > count else ""
    note(f"{args.target}: forked {count} item{plural(count)} from {args.source}{short}")
    return 0


def cmd_textconv(args: argparse.Namespace) -> int:
    from ..render.file_io import file_diff_text

    sys.stdout.buffer.write(file_diff_text(args.file, lock_timeout=args.lock_timeout).encode())
    return 0
