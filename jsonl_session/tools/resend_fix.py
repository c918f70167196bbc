"""``check --fix`` for the resend lint: drop the lines that can go without deciding what was said.

What goes (``ResendProblem.fixable``, see ``history.resend_rules``): a reasoning item not
followed by the item it produced, and a copy of an item identical to the line right before it
(a duplicate id written twice). Everything else the lint finds is reported and kept: a call
without its output (the SDK may still be running the tool; inventing an output is a guess),
an output without its call (it holds the tool's only copy of its result), an unanswered
approval, a duplicate id whose copies differ.

Nothing dropped is lost: each dropped item is appended first, with its line number, why and
when, to ``<file>.jsonl.dropped`` (JSON Lines, append-only, fsynced before the rewrite renames
the session, as torn tails go to ``.torn``): a crash in between leaves a copy in both places,
never in neither. ``rm`` removes the sidecar with the session, ``prune`` archives it.

The lint runs again inside the session's locked rewrite (``LockedOperations.rewriting``): a
writer that appended after ``check`` read the file is waited for, its items are linted and
kept, and line numbers are those of the file as it is under the lock.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..core import scanner, sidecar_files
from ..core.errors import MalformedLineError
from ..core.locking import MISSING
from ..core.names import DROPPED, id_for
from ..history.lineage import now
from ..history.resend_rules import ResendProblem, resend_problems
from ..session.store import JSONLSession


def drop_fixable(path: Path, *, awaiting: Iterable[Any] = (), lock_timeout: float) -> list[ResendProblem]:
    """Remove, in one atomic rewrite under the write lock, every line the resend lint may drop.

    Returns what was removed, by the line it was on before (empty when nothing could be, e.g.
    the file has a line that is not an item: that is for a person first).

    Example:
        >>> dropped = drop_fixable(Path("sessions/a.jsonl"), lock_timeout=10)   # doctest: +SKIP
        >>> [(problem.line, problem.reason) for problem in dropped]            # doctest: +SKIP
        [(7, "reasoning 'rs_1' is not followed by the item it produced (it ends the history)")]
    """
    session_id = id_for(path.name)
    if session_id is None:  # not a name a session has: no session object can rewrite it
        return []
    session = JSONLSession(session_id, path.parent, lock_timeout=lock_timeout)
    dropped: list[ResendProblem] = []
    try:
        with session.locked(write=True, create=False) as fd:
            if fd == MISSING:
                return []
            with session.rewriting(fd) as draft:
                # The items' lines, as the rewrite read them (we hold the lock: nothing moves).
                numbers = [line.number for line in scanner.scan_lines(path.read_bytes()).lines]
                if len(numbers) != len(draft.items):
                    return []  # cannot tell which line is which: change nothing
                numbered = list(zip(numbers, draft.items))
                dropped = [problem for problem in resend_problems(numbered, awaiting) if problem.fixable]
                gone = {problem.line for problem in dropped}
                if gone:
                    _keep_dropped(path, numbered, dropped, lock_timeout)
                    draft.items = [item for number, item in numbered if number not in gone]
    except MalformedLineError:
        return []
    finally:
        session.close()
    return dropped


def dropped_path(path: Path) -> Path:
    """``<file>.jsonl.dropped``: where ``check --fix`` keeps what it drops."""
    return sidecar_files.sidecar(path, DROPPED)


def _keep_dropped(
    path: Path, numbered: list[tuple[int, Any]], dropped: list[ResendProblem], lock_timeout: float
) -> None:
    """Append each dropped item, durably, to the ``.dropped`` sidecar (under the session's lock)."""
    items = dict(numbered)
    when = now()
    for problem in dropped:
        record = {
            "dropped_at": when,
            "item": items[problem.line],
            "line": problem.line,
            "reason": problem.reason,
        }
        sidecar_files.append_line(dropped_path(path), record, durable=True, timeout=lock_timeout)
