"""The CLI's history commands: ``show --turns``, ``rewind``, ``ls --tree`` and marks, usage in ``stats``.

Like every command module, this only formats what the library answers (``JSONLSession.turns``,
``rewind_sync``, ``get_turn_usage_sync``, ``tools.stats``...).
"""

from __future__ import annotations

import argparse
import sys

from ..render.terminal_text import printable
from .lookup import existing
from .output import Failure, plural, print_items, print_json

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:  # `ls` imports this module for its marks: turns and usage wait for their commands
    from typing import Any

    from ..session.folder import SessionInfo

TREE_TEXT = 50


def cmd_rewind(args: argparse.Namespace) -> int:
    """Remove whole turns from the end, under the lock, and print what went."""
    session = existing(args, args.id)
    had_run = session.paused_run() is not None
    removed = session.rewind_sync(args.turns)
    if not removed:
        raise Failure(f"{args.id}: no turns to rewind")
    print_items(args, removed)
    from ..history.turns import is_user_message

    turns = sum(1 for item in removed if is_user_message(item))
    note = "; its paused run was discarded" if had_run else ""
    print(
        f"{args.id}: removed {turns} turn{plural(turns)} ({len(removed)} item{plural(len(removed))}){note}",
        file=sys.stderr,
    )
    return 0


def show_turns(args: argparse.Namespace, session: Any) -> int:
    """One line per turn: number, item range, when it ran and what it cost (if recorded), the question."""
    turns = session.turns()
    usage = {entry["user_turn_number"]: entry for entry in session.get_turn_usage_sync()}
    if args.n is not None:
        turns = turns[-args.n :] if args.n else []
    for turn in turns:
        entry = usage.get(turn.index, {})
        if args.json:
            print_json(
                {
                    "turn": turn.index,
                    "first_item": turn.start + 1,
                    "last_item": turn.end,
                    "items": turn.items,
                    "text": turn.text,
                    "at": entry.get("at"),
                    "total_tokens": entry.get("total_tokens"),
                }
            )
            continue
        when = entry.get("at", "").replace("T", " ").rstrip("Z")
        tokens = f"{entry['total_tokens']} tok" if entry else ""
        span = f"{turn.start + 1}-{turn.end}"
        print(f"{turn.index:>4}  items {span:<9} {when:<19}  {tokens:>10}  {printable(turn.text)}")
    if not turns and not args.json:
        print(f"{args.id}: no turns (no user messages)", file=sys.stderr)
    return 0


def mark(info: SessionInfo) -> str:
    """What ``ls`` says after a session's row: a paused run, a fork's origin."""
    notes = []
    if info.paused:
        notes.append("paused (needs approval)")
    if info.forked_from is not None:
        notes.append(f"fork of {info.forked_from}")
    return ", ".join(notes)


def print_tree(infos: list[SessionInfo]) -> None:
    """Sessions as a lineage tree: every fork under its source, oldest name order."""
    by_id = {info.session_id: info for info in infos}
    children: dict[str | None, list[SessionInfo]] = {}
    for info in infos:
        parent = info.forked_from if info.forked_from in by_id else None
        children.setdefault(parent, []).append(info)

    def walk(parent: str | None, prefix: str, seen: frozenset[str]) -> None:
        kids = sorted(children.get(parent, []), key=lambda info: info.session_id)
        for position, info in enumerate(kids):
            last = position == len(kids) - 1
            branch = "" if parent is None else ("└── " if last else "├── ")
            extra = [f"{info.items} item{plural(info.items)}"]
            if info.paused:
                extra.append("paused")
            if parent is None and info.forked_from is not None:
                extra.append(f"fork of {info.forked_from} (gone)")
            print(printable(f"{prefix}{branch}{info.session_id}  ({', '.join(extra)})"))
            if info.session_id not in seen:  # a hand-made cycle must not loop forever
                inner = prefix if parent is None else prefix + ("    " if last else "│   ")
                walk(info.session_id, inner, seen | {info.session_id})

    walk(None, "", frozenset())


def print_usage(per_session: dict[str, dict[str, int]], overall: dict[str, int]) -> None:
    """The token table of ``stats``: one row per session with a usage log, then the total."""
    if not per_session:
        print("tokens: none recorded (session.record_usage(result) after each run)")
        return
    width = max(5, *(len(printable(session_id)) for session_id in per_session))
    print(
        f"tokens:\n  {'ID':<{width}} {'RUNS':>5} {'REQS':>5} {'INPUT':>9} {'CACHED':>9} {'OUTPUT':>9} "
        f"{'REASON':>9} {'TOTAL':>9}"
    )
    for session_id, totals in sorted(per_session.items()):
        print(f"  {printable(session_id):<{width}} {_row(totals)}")
    if len(per_session) > 1:
        print(f"  {'total':<{width}} {_row(overall)}")


def _row(totals: dict[str, int]) -> str:
    widths = {"runs": 5, "requests": 5}
    names = (
        "runs",
        "requests",
        "input_tokens",
        "cached_tokens",
        "output_tokens",
        "reasoning_tokens",
        "total_tokens",
    )
    return " ".join(f"{totals[name]:>{widths.get(name, 9)}}" for name in names)
