"""The CLI's tool commands: ``check``, ``redact``, ``edit``, ``grep``, ``stats``, ``git-setup``.

The work is the library's (``tools.check``, ``tools.secrets``, ``tools.edit_copy``,
``tools.grep.search``, ``tools.stats.folder_stats``); these print what it answers. ``grep``'s
start-up is most of a rare word's search, so this module imports the checker, the secrets
scanner and the editor support only inside their commands.
"""

from __future__ import annotations

import itertools
import os
import re
import sys

from ..render.sizes import human_size
from ..render.terminal_text import printable
from .lookup import directory, existing, session_named, targets
from .output import (
    Failure,
    UsageError,
    confirm,
    error,
    note,
    plural,
    print_json,
    skip_warning,
    style_for,
)
from .parser import PROG

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterator
    from pathlib import Path

    from ..render.item_text import Style
    from ..tools.check import Problem
    from ..tools.grep import Hit

SNIPPET = 100


def cmd_check(args: argparse.Namespace) -> int:
    from ..tools.check import check_file, stray_temp_problems

    paths = targets(args, args.targets)
    if args.secrets:
        return _check_secrets(args, paths)
    found = remaining = 0
    problems: Iterator[Problem] = (
        problem
        for path in paths
        for problem in check_file(path, fix=args.fix, lock_timeout=args.lock_timeout)
    )
    if not args.targets:  # the whole folder: also what rewrites of since-deleted sessions left
        problems = itertools.chain(problems, stray_temp_problems(args.dir, fix=args.fix))
    for problem in problems:
        found += 1
        remaining += not problem.fixed
        if args.json:
            print_json(
                {
                    "path": str(problem.path),
                    "line": problem.line,
                    "reason": problem.reason,
                    "fixable": problem.fixable,
                    "fixed": problem.fixed,
                }
            )
        else:
            print(("fixed: " if problem.fixed else "") + printable(str(problem)))
    warned = _warn_large_items(args, paths)
    summary = f"checked {len(paths)} file{plural(len(paths))}: {found} problem{plural(found)}"
    if args.fix:
        summary += f", {found - remaining} fixed"
    if warned:
        summary += f"; {warned} item{plural(warned)} over {human_size(args.max_item_bytes)}"
    note(summary)
    return 1 if remaining else 0


def _warn_large_items(args: argparse.Namespace, paths: list[Path]) -> int:
    """A warning per item over ``--max-item-bytes``: the model receives it whole, every turn."""
    from .. import JSONLSessionError
    from ..tools.payloads import session_largest

    warned = 0
    for path in paths:
        try:
            large = session_largest(path, count=100, over=args.max_item_bytes, lock_timeout=args.lock_timeout)
        except (OSError, JSONLSessionError):
            continue  # named among the problems already
        for item in sorted(large, key=lambda item: item.line):
            warned += 1
            if args.json:
                print_json(
                    {
                        "path": str(path),
                        "line": item.line,
                        "warning": "large item",
                        "bytes": item.size,
                        "kind": item.kind,
                    }
                )
            else:
                print(
                    printable(f"{path}:{item.line}: warning: {item.kind} of {human_size(item.size)}")
                    + f", over --max-item-bytes {args.max_item_bytes} (the model receives it whole)"
                )
    return warned


def _check_secrets(args: argparse.Namespace, paths: list[Path]) -> int:
    from .. import SessionFileError
    from ..tools.secrets import scan_file

    findings = []
    refused = 0
    for path in paths:
        try:
            findings.extend(scan_file(path))
        except SessionFileError as exc:  # a symlink or FIFO named by path: report it, go on
            refused += 1
            error(str(exc))
    for finding in findings:
        if args.json:
            print_json(
                {
                    "path": str(finding.path),
                    "line": finding.line,
                    "kind": finding.kind,
                    "excerpt": finding.excerpt,
                }
            )
        else:
            print(printable(f"{finding.path}:{finding.line}: {finding.kind}: {finding.excerpt}"))
    summary = f"checked {len(paths)} file{plural(len(paths))}: {len(findings)} secret{plural(len(findings))}"
    note(summary + (f"; `{PROG} redact ID` replaces them" if findings else ""))
    return 1 if findings or refused else 0


def cmd_redact(args: argparse.Namespace) -> int:
    from ..tools.secrets import redact_session

    findings = redact_session(session_named(args, args.id))
    for finding in findings:
        where = f"{finding.path}:{finding.line}"
        print(printable(f"{where}: {finding.kind}: {finding.excerpt} -> [REDACTED:{finding.kind}]"))
    note(f"{args.id}: redacted {len(findings)} secret{plural(len(findings))}")
    return 0


def cmd_edit(args: argparse.Namespace) -> int:
    import shlex
    import subprocess

    from .. import MalformedLineError
    from ..session.parsing import parse_items
    from ..tools.edit_copy import edit_copy, new_unanswered_calls

    session = existing(args, args.id)
    editor = shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi")
    # No lock is held while the editor is open: a running agent keeps appending, and its
    # items are kept on save; only a pop, clear or rewrite meanwhile refuses the save.
    with edit_copy(session) as copy:
        before = len(copy.base_items())
        while True:
            status = subprocess.call([*editor, str(copy.path)])
            if status != 0:
                raise Failure(f"{args.id}: editor exited with status {status}; session left unchanged")
            if copy.unchanged():
                note(f"{args.id}: no change; session left unchanged")
                return 0
            try:
                items = parse_items(copy.path.read_bytes(), copy.path)
            except MalformedLineError as exc:
                error(f"line {exc.line}: {exc.message}")
                if not confirm("edit again?", default=True):
                    raise Failure(f"{args.id}: edit abandoned; session left unchanged") from None
                continue
            unanswered = new_unanswered_calls(copy.base_items(), items)
            for problem in unanswered:
                note(f"{PROG}: warning: {problem} (the model API rejects such a history)")
            if not unanswered or confirm("save anyway?"):
                break
            if not confirm("edit again?", default=True):
                raise Failure(f"{args.id}: edit abandoned; session left unchanged")
        appended = copy.save(items)
    after = len(items) + appended
    meanwhile = f"; {appended} added meanwhile kept" if appended else ""
    note(f"{args.id}: saved ({before} -> {after} item{plural(after)}{meanwhile})")
    return 0


def cmd_grep(args: argparse.Namespace) -> int:
    from ..core.errors import SessionNotFoundError
    from ..tools.grep import search

    folder = directory(args)
    # searching the folder: an unreadable file is named and skipped; a named one is an error
    if args.ids:
        sessions = [(session_id, str(existing(args, session_id).path)) for session_id in args.ids]
    else:  # a folder's ids name regular files already: no session object or pathlib needed (start-up)
        sessions = [(session_id, folder.session_path(session_id)) for session_id in folder.ids()]
    skipped: list[Exception] = []

    def skip(_path: object, exc: Exception) -> None:
        if not isinstance(exc, SessionNotFoundError):  # one deleted since the listing is just gone
            skipped.append(exc)

    def fail(_path: object, exc: Exception) -> None:
        raise exc  # a session named, even one deleted while grep waited for its lock

    on_error = fail if args.ids else skip
    try:
        hits = search(
            sessions,
            args.pattern,
            ignore_case=args.ignore_case,
            role=args.role,
            lock_timeout=args.lock_timeout,
            on_error=on_error,
        )
    except re.error as exc:
        raise UsageError(f"bad pattern {args.pattern!r}: {exc}") from None
    if args.json:
        matches = 0
        for matches, hit in enumerate(hits, 1):
            print_json({"id": hit.session_id, "line": hit.line, "role": hit.role, "text": hit.text})
    else:
        matches = _print_hits(hits, style_for(sys.stdout))
    for unreadable in skipped:
        skip_warning(unreadable)
    return 0 if matches and not skipped else 1


_LINES_PER_WRITE = 256


def _print_hits(hits: Iterator[Hit], style: Style) -> int:
    """``id:line: role: snippet`` per hit; how many there were.

    A common word prints a line for each of a million items, so what can be done once is:
    each session id and each heading is made printable (and coloured) once, and off a terminal
    the lines go out :data:`_LINES_PER_WRITE` at a time, one ``write`` each (and at the end,
    or before an error is raised). A terminal, or a stream that writes through, gets each line
    as it is found.
    """
    ids: dict[str, str] = {}
    heads: dict[str, str] = {}
    pending: list[str] = []
    out = sys.stdout
    # A terminal, or a stream that writes through (``python -u``, PYTHONUNBUFFERED: then even a
    # terminal is not line buffered), gets each line as it is found. Any stream will do.
    at_once = getattr(out, "line_buffering", False) or getattr(out, "write_through", False)
    per_write = 1 if at_once or out.isatty() else _LINES_PER_WRITE
    matches = 0
    try:
        for hit in hits:
            matches += 1
            session_id, heading = hit.session_id, hit.heading
            if (shown := ids.get(session_id)) is None:
                shown = ids[session_id] = printable(session_id)
            if (head := heads.get(heading)) is None:
                head = heads[heading] = style.role(printable(heading))
            pending.append(f"{shown}:{hit.line}: {head}: {snippet(hit, style)}\n")
            if len(pending) >= per_write:
                lines, pending = "".join(pending), []
                out.write(lines)
    finally:  # what was found before a session that fails (a lock not acquired...) is printed
        if pending:
            out.write("".join(pending))
    return matches


def snippet(hit: Hit, style: Style) -> str:
    """About SNIPPET characters around the match, on one line, the match highlighted."""
    text = hit.text
    size = len(text)
    start = hit.start - _BEFORE if hit.start > _BEFORE else 0  # max(0, ...) without a call: once a hit
    end = max(hit.end, start + SNIPPET)
    if end >= size:
        end = size
        if end - SNIPPET < start:  # text near the end: show more before it, not less
            start = end - SNIPPET if end > SNIPPET else 0
    if style.enabled:
        window = (
            printable(text[start : hit.start])
            + style.match(printable(text[hit.start : hit.end]))
            + printable(text[hit.end : end])
        )
    else:
        window = text[start:end]
        if window.isprintable():
            # Nothing to escape, and no whitespace but spaces (every other kind, from tab to
            # U+3000, is a control or separator, which isprintable refuses): the window is
            # already on one line, and the same squashed unless spaces run, lead or trail.
            if "  " not in window and window[:1] != " " and window[-1:] != " ":
                return ("…" if start else "") + window + ("…" if end < size else "")
        else:  # printable works a character at a time: once over the window is the same, and faster
            window = printable(window)
    # split/join squashes newlines and runs of spaces 4x faster than a regex (colour codes have no spaces)
    return ("…" if start else "") + " ".join(window.split()) + ("…" if end < size else "")


_BEFORE = SNIPPET // 3


def cmd_stats(args: argparse.Namespace) -> int:
    from ..tools.stats import folder_stats
    from .history import print_usage

    if args.id:
        existing(args, args.id)
    skipped = 0

    def skip(_session_id: str, exc: Exception) -> None:
        nonlocal skipped
        skipped += 1  # an unreadable or conflicted file or log: named, the rest still counted
        skip_warning(exc)

    if args.turns or args.context_window is not None:  # the window is measured per turn
        from ..tools.stats import folder_growth
        from .history import print_growth

        ids = [args.id] if args.id else None
        growth = folder_growth(directory(args), ids, on_error=None if args.id else skip)
        if args.json:
            for session_id, session in growth.items():
                print_json({"id": session_id, **session.as_dict(args.context_window)})
            window = args.context_window
            over = window is not None and any(session.context_tokens > window for session in growth.values())
        else:
            over = print_growth(growth, args.context_window)
        return 1 if skipped or over else 0
    stats = folder_stats(directory(args), [args.id] if args.id else None, on_error=None if args.id else skip)
    if args.json:
        print_json(stats.as_dict())
        return 1 if skipped else 0
    scope = printable(args.id) if args.id else f"{stats.sessions} session{plural(stats.sessions)}"
    items, tool_calls = stats.items, stats.tool_calls
    print(
        f"{scope}: {items} item{plural(items)}, {stats.characters} characters, "
        f"{tool_calls} tool call{plural(tool_calls)}, {human_size(stats.bytes)} on disk"
    )
    for name, count in stats.by_role.most_common():
        print(f"  {printable(name):<24} {count:>7}")
    if stats.tools:
        print("tools:")
        for name, count in stats.tools.most_common():
            print(f"  {printable(name):<24} {count:>7}")
    if stats.largest:
        print("largest items:")
        for session_id, large in stats.largest:
            where = f"line {large.line}" if args.id else printable(f"{session_id} line {large.line}")
            print(f"  {printable(large.kind)}, {human_size(large.size)}, {where}")
    archived = {f"{session_id} (archived)": totals for session_id, totals in stats.archived.items()}
    print_usage(stats.tokens | archived, stats.tokens_total)
    return 1 if skipped else 0


def cmd_git_setup(args: argparse.Namespace) -> int:
    from ..tools.git_setup import NotARepository, setup_git

    try:
        changes = setup_git(args.dir)
    except NotARepository as exc:
        raise UsageError(f"git-setup: {exc}") from None
    for change in changes:
        note(change)
    if not changes:
        note(f"{args.dir}: git already set up; nothing changed")
    return 0
