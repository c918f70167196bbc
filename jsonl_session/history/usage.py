"""Token usage per run: ``<file>.jsonl.usage``, one JSON line per recorded run, append-only.

A line says what one ``Runner.run`` (or the part of it since the run was last recorded)
cost, which turn it answered and when::

    {"at":"2026-12-02T18:40:07Z","cached_tokens":0,"input_tokens":812,"model":"gpt-4.1",
     "output_tokens":64,"paused":false,"reasoning_tokens":0,"requests":2,"total_tokens":876,
     "turn":3,"turn_sha256":"5d41..."}

``turn`` is the number of the session's newest turn when the run was recorded, and
``turn_sha256`` the hash of that turn's user message: after a rewind, a new turn with the
same number but another question is not credited with the old turn's cost.

The log is a ledger: tokens once spent stay in it when turns are rewound.
:func:`session_usage` totals every line (what was paid); :func:`turn_usage` answers per turn
for the turns still in the session, as ``AdvancedSQLiteSession.get_turn_usage`` does.
"""

from __future__ import annotations

import functools
import os
import threading
import weakref
from typing import Any

from .lineage import now, prefix_hash
from .turns import Turn

COUNTERS = ("requests", "input_tokens", "output_tokens", "total_tokens", "cached_tokens", "reasoning_tokens")


def counters_of(usage: Any) -> dict[str, int]:
    """The counters of an SDK ``Usage`` object, or of its JSON form inside a saved run state.

    Example:
        >>> counters_of({"requests": 1, "input_tokens": 10, "output_tokens": 2, "total_tokens": 12,
        ...              "input_tokens_details": {"cached_tokens": 4}})["cached_tokens"]
        4
    """
    get = usage.get if isinstance(usage, dict) else lambda name, default=None: getattr(usage, name, default)
    counters = {name: _int(get(name, 0)) for name in COUNTERS[:4]}
    counters["cached_tokens"] = _detail(get("input_tokens_details", None), "cached_tokens")
    counters["reasoning_tokens"] = _detail(get("output_tokens_details", None), "reasoning_tokens")
    return counters


def result_counters(result: Any) -> dict[str, int]:
    """The usage so far of a run result (``RunResult.context_wrapper.usage``; zeros if it has none)."""
    usage = getattr(getattr(result, "context_wrapper", None), "usage", None)
    return counters_of(usage) if usage is not None else dict.fromkeys(COUNTERS, 0)


def model_of(result: Any) -> str | None:
    """The name of the model the run's last agent used, as well as it can be told."""
    model = getattr(getattr(result, "last_agent", None), "model", None)
    if model is None or isinstance(model, str):
        return model
    name = getattr(model, "model", None)
    return name if isinstance(name, str) else type(model).__name__


def since(total: dict[str, int], recorded: dict[str, int] | None) -> dict[str, int]:
    """What ``total`` adds to ``recorded``: the share of a resumed run not yet in the log.

    A resumed run's usage includes what it spent before it paused. If ``total`` is smaller
    than ``recorded`` anywhere, it is another run, and all of it is new.
    """
    if recorded is None or any(total.get(name, 0) < recorded.get(name, 0) for name in COUNTERS):
        return dict(total)
    return {name: total.get(name, 0) - recorded.get(name, 0) for name in COUNTERS}


def new_record(
    counters: dict[str, int], *, model: str | None, turn: int | None, user_item: Any, paused: bool
) -> dict[str, Any]:
    """One line of the log."""
    return {
        "at": now(),
        **counters,
        "model": model,
        "paused": paused,
        "turn": turn,
        "turn_sha256": turn_hash(user_item) if user_item is not None else None,
    }


class RecordedResults:
    """Which run results were recorded to which session, so that recording one again counts it once.

    Keyed by the result object's identity (the SDK's results are dataclasses, so unhashable)
    through a weak reference: an entry goes when its result is freed, and a new object that
    reuses the id is not mistaken for it. Then by the session file's absolute path.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()  # a weak reference's callback may run inside, on this thread
        self._records: dict[int, tuple[weakref.ref[Any], dict[str, dict[str, Any]]]] = {}

    def get(self, result: Any, session_path: os.PathLike[str]) -> dict[str, Any] | None:
        """The line written when ``result`` was recorded to this session, or None."""
        with self._lock:
            entry = self._records.get(id(result))
            if entry is None or entry[0]() is not result:
                return None
            return entry[1].get(os.path.abspath(session_path))

    def remember(self, result: Any, session_path: os.PathLike[str], record: dict[str, Any]) -> None:
        """Note that ``result`` was recorded to this session as ``record``."""
        key = id(result)
        with self._lock:
            entry = self._records.get(key)
            if entry is None or entry[0]() is not result:
                try:
                    ref = weakref.ref(result, functools.partial(self._forget, key))
                except TypeError:  # cannot be weakly referenced: not remembered
                    return
                entry = self._records[key] = (ref, {})
            entry[1][os.path.abspath(session_path)] = dict(record)

    def _forget(self, key: int, dead: weakref.ref[Any]) -> None:
        with self._lock:
            entry = self._records.get(key)
            if entry is not None and entry[0] is dead:
                del self._records[key]


recorded_results = RecordedResults()


def turn_hash(user_item: Any) -> str:
    """The hash that ties log lines to a turn: that of its user message as stored."""
    return prefix_hash([user_item])


def session_usage(records: list[dict[str, Any]]) -> dict[str, int] | None:
    """Totals over every recorded run, as ``AdvancedSQLiteSession.get_session_usage`` answers.

    Returns None when nothing was recorded; ``total_turns`` counts distinct turns.

    Example:
        >>> session_usage([{"requests": 1, "input_tokens": 5, "turn": 1}])["input_tokens"]
        5
    """
    if not records:
        return None
    totals = {name: sum(_int(record.get(name, 0)) for record in records) for name in COUNTERS}
    totals["total_turns"] = len({(record.get("turn"), record.get("turn_sha256")) for record in records})
    totals["runs"] = len(records)
    return totals


def turn_usage(records: list[dict[str, Any]], items: list[Any], turns: list[Turn]) -> list[dict[str, Any]]:
    """Usage per turn still in the session, oldest first, in ``get_turn_usage``'s shape.

    Each entry also says when the turn's first recorded run finished (``at``).
    """
    by_turn: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for record in records:
        by_turn.setdefault((record.get("turn"), record.get("turn_sha256")), []).append(record)  # type: ignore[arg-type]
    answer = []
    for turn in turns:
        matching = by_turn.get((turn.index, turn_hash(items[turn.start])))
        if not matching:
            continue
        totals = {name: sum(_int(record.get(name, 0)) for record in matching) for name in COUNTERS}
        answer.append(
            {
                "user_turn_number": turn.index,
                "requests": totals["requests"],
                "input_tokens": totals["input_tokens"],
                "output_tokens": totals["output_tokens"],
                "total_tokens": totals["total_tokens"],
                "input_tokens_details": {"cached_tokens": totals["cached_tokens"]},
                "output_tokens_details": {"reasoning_tokens": totals["reasoning_tokens"]},
                "at": min(str(record.get("at")) for record in matching),
                "models": sorted({str(record.get("model")) for record in matching}),
            }
        )
    return answer


def _detail(details: Any, name: str) -> int:
    # The SDK's RunState JSON stores the details as a list of dicts; the live object as one object.
    if details is None:
        return 0
    if isinstance(details, list):
        return sum(_detail(part, name) for part in details)
    value = details.get(name, 0) if isinstance(details, dict) else getattr(details, name, 0)
    return _int(value)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
