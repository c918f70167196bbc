"""The CLI's history commands: ``show --turns``, ``rewind``, ``ls --tree``, usage in ``stats``.

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
if TYPE_CHECKING:  # `ls --tree` imports this module: turns and usage wait for their commands
    from typing import Any

    from ..history.turn_growth import Growth as TurnsGrowth
    from ..history.turn_growth import TurnGrowth
    from ..session.listing import SessionInfo

TREE_TEXT = 50


def cmd_rewind(args: argparse.Namespace) -> int:
    """Remove whole turns from the end, under the lock, and print what went."""
    session = existing(args, args.id)
    from ..history.turns import TooFewTurnsError

    had_run = session.paused_run() is not None
    try:
        removed = session.rewind_sync(args.turns)
    except TooFewTurnsError as exc:
        raise Failure(f"{args.id}: {exc.reason}") from None
    if not removed:
        raise Failure(f"{args.id}: no turns to rewind")
    print_items(args, removed)
    from ..history.titles import is_user_message

    turns = sum(1 for item in removed if is_user_message(item))
    note = "; its paused run was discarded" if had_run else ""
    print(
        f"{args.id}: removed {turns} turn{plural(turns)} ({len(removed)} item{plural(len(removed))}){note}",
        file=sys.stderr,
    )
    return 0


def show_turns(args: argparse.Namespace, session: Any) -> int:
    """One line per turn: number, item range, when it ran and what it cost (if recorded), its bytes,
    the context so far, its largest tool output, the question; exit 1 if it outgrew ``--context-window``."""
    from ..history.turn_growth import read_growth
    from ..history.turns import split_turns

    timed = session.get_items_with_times_sync()  # the items, and when each was added (.times)
    turns = split_turns([item for item, _ in timed])
    usage = {entry["user_turn_number"]: entry for entry in session.get_turn_usage_sync()}
    growth = read_growth(session.path, lock_timeout=session.lock_timeout)
    grown = {turn.index: turn for turn in growth.turns}
    if args.n is not None:
        turns = turns[-args.n :] if args.n else []
    if turns and not args.json:
        print(
            f"{'TURN':>4}  {'ITEMS':<15} {'WHEN (UTC)':<19}  {'TOKENS':>10}  {'BYTES':>9}  {'CONTEXT':<17}  "
            f"{'LARGEST TOOL OUTPUT':<28}  QUESTION"
        )
    for turn in turns:
        entry = usage.get(turn.index, {})
        started = timed[turn.start][1] if turn.start < len(timed) else None
        if args.json:
            print_json(
                {
                    "turn": turn.index,
                    "first_item": turn.start + 1,
                    "last_item": turn.end,
                    "items": turn.items,
                    "text": turn.text,
                    "at": entry.get("at"),
                    "started": None if started is None else f"{started:%Y-%m-%dT%H:%M:%S}Z",
                    "total_tokens": entry.get("total_tokens"),
                    **_growth_fields(grown.get(turn.index)),
                }
            )
            continue
        when = entry.get("at", "").replace("T", " ").rstrip("Z")
        if not when and started is not None:  # no run recorded: when its first item was added
            when = f"{started:%Y-%m-%d %H:%M:%S}"
        tokens = f"{entry['total_tokens']} tok" if entry else ""
        span = f"{turn.start + 1}-{turn.end}"
        size = _growth_columns(grown[turn.index]) if turn.index in grown else ""
        print(f"{turn.index:>4}  items {span:<9} {when:<19}  {tokens:>10}  {size}{printable(turn.text)}")
    if not turns and not args.json:
        print(f"{args.id}: no turns (no user messages)", file=sys.stderr)
    return 1 if _outgrown(args.id, growth, args.context_window) else 0


def print_growth(growth: dict[str, TurnsGrowth], window: int | None) -> bool:
    """``stats --turns``: each session's turns (items, bytes, context, input tokens) and their
    largest tool outputs; True if one outgrew ``window`` tokens (each such session is named)."""
    from ..render.sizes import human_size

    over = False
    for session_id, session in growth.items():
        turns = session.turns
        size = human_size(session.total_bytes)
        heading = f"{printable(session_id)}: {len(turns)} turn{plural(len(turns))}, {size}"
        print(f"{heading}, context ~{session.context_tokens:,} tokens")
        if turns:
            columns = f"{'TURN':>4} {'ITEMS':>5} {'BYTES':>9} {'CONTEXT':>9} {'~TOKENS':>9} {'INPUT':>9}"
            print(f"  {columns}  QUESTION")
        for turn in turns:
            recorded = "-" if turn.input_tokens is None else f"{turn.input_tokens:,}"
            sizes = f"{human_size(turn.bytes):>9} {human_size(turn.context_bytes):>9}"
            print(
                f"  {turn.index:>4} {turn.items:>5} {sizes} {turn.context_tokens:>9,} {recorded:>9}  "
                + printable(turn.text)
            )
            for output in turn.largest:
                named = printable(output.tool or output.type)
                print(
                    f"  {'':>10} {human_size(output.bytes):>9}  {named} (line {output.line}, {output.type})"
                )
        over = _outgrown(session_id, session, window) or over
    return over


def _growth_columns(turn: TurnGrowth) -> str:
    from ..render.sizes import human_size

    biggest = ""
    if turn.largest:
        output = turn.largest[0]
        biggest = f"{printable(output.tool or output.type)[:18]} {human_size(output.bytes)}"
    context = f"~{turn.context_tokens:,}"
    return f"{human_size(turn.bytes):>9}  ctx {context:>9} tok  {biggest:<28}  "


def _growth_fields(turn: TurnGrowth | None) -> dict[str, Any]:
    if turn is None:
        return {}
    fields = turn.as_dict()
    names = ("bytes", "context_bytes", "context_tokens", "input_tokens", "requests", "largest")
    return {name: fields[name] for name in names}


def _outgrown(session_id: str, growth: TurnsGrowth, window: int | None) -> bool:
    """Name the session on stderr if its context does not fit ``window`` tokens."""
    if window is None or growth.context_tokens <= window:
        return False
    over = growth.first_over(window)
    since = f" from turn {over.index}" if over is not None else ""
    print(
        printable(f"{session_id}: does not fit a {window:,}-token context window{since} ")
        + f"(~{growth.context_tokens:,} tokens: bytes/4, or the recorded input per request if larger)",
        file=sys.stderr,
    )
    return True


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
        # The log is a ledger: clear and rewind leave it, so say whose tokens these are.
        "tokens: every recorded run, cleared or rewound turns included\n"
        f"  {'ID':<{width}} {'RUNS':>5} {'REQS':>5} {'INPUT':>9} {'CACHED':>9} {'OUTPUT':>9} "
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
