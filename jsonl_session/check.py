"""Verify session files (and repair what can be repaired without losing data).

Problems found, each with the file and the line it is on:

* a complete line that is not valid JSON, or not a JSON object (the readers refuse the file);
* a torn tail: bytes after the last newline that are not an item (an interrupted write).
  Readers skip it; ``fix=True`` moves it to the ``.torn`` sidecar, as the next writer would;
* git merge conflict markers (``<<<<<<<``, ``=======``, ``>>>>>>>``), named as such;
* a ``function_call`` with no ``function_call_output`` for its ``call_id``, or an output
  with no call: the model API rejects such a history on the next turn;
  Calls that a paused run (``.run``) waits to have approved are not reported;
* a fork whose source has diverged from the prefix recorded in its ``.lineage`` (see
  ``lineage``), or whose lineage file is unreadable.

Only torn tails are fixable here: every other repair means deciding what the conversation
should say, which is a job for ``jsonl-session edit``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import codec, storage
from .errors import SessionFileError, TornTailWarning
from .locking import DEFAULT_LOCK_TIMEOUT, MISSING, FileHandle

# A call item type -> the type of the item that answers it, matched on ``call_id``.
CALL_PAIRS = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
}


# A text merge of two histories leaves these lines behind (see docs/workflows.md).
_CONFLICT_MARKERS = (b"<<<<<<< ", b"<<<<<<<\n", b"=======", b">>>>>>> ", b"||||||| ")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a session file.

    Example:
        >>> str(Problem(Path("s/a.jsonl"), 3, "not valid JSON (...): '{oops'"))
        "s/a.jsonl:3: not valid JSON (...): '{oops'"
    """

    path: Path
    line: int | None
    reason: str
    fixable: bool = False
    fixed: bool = False

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else str(self.path)
        return f"{where}: {self.reason}"


def check_file(
    path: str | Path, *, fix: bool = False, lock_timeout: float = DEFAULT_LOCK_TIMEOUT
) -> list[Problem]:
    """Every problem in one session file, read under its shared lock (exclusive with ``fix``).

    With ``fix=True`` a torn tail is moved to the sidecar and reported with ``fixed=True``.

    Example:
        >>> for problem in check_file("sessions/convo_123.jsonl"):   # doctest: +SKIP
        ...     print(problem)
        sessions/convo_123.jsonl:7: function_call 'call_1' (get_weather) has no function_call_output
    """
    path = Path(path)
    handle = FileHandle(path)
    try:
        fd = handle.acquire(write=fix, create=False, timeout=lock_timeout)
    except SessionFileError as exc:  # a symlink or FIFO where a session file belongs
        return [Problem(path, None, exc.message)]
    if fd == MISSING:
        return [Problem(path, None, "no such file")]
    try:
        scan = storage.scan_lines(storage.read_range(fd, 0, handle.size))
        problems = _line_problems(path, scan.lines, _awaiting_approval(path))
        torn = _torn_tail(path, scan)
        if torn is not None and fix:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", TornTailWarning)  # reported as a Problem instead
                storage.repair_tail(fd, path, durable=True)
            torn = Problem(torn.path, torn.line, f"{torn.reason}; moved to {path.name}.torn", True, True)
    finally:
        handle.release()
        handle.close()
    if torn is not None:
        problems.append(torn)
    problems.extend(_lineage_problems(path, lock_timeout))
    return sorted(problems, key=lambda problem: problem.line or 0)


def _awaiting_approval(path: Path) -> frozenset[Any]:
    """Call ids a paused run (``<file>.jsonl.run``) waits on: unanswered on purpose, not a problem."""
    from .runs import info

    try:
        paused = info(path)
    except SessionFileError:
        return frozenset()  # an unreadable .run: the calls are reported as unanswered
    return frozenset(entry.get("call_id") for entry in paused.pending) if paused is not None else frozenset()


def _lineage_problems(path: Path, lock_timeout: float) -> list[Problem]:
    from .lineage import divergence

    try:
        reason = divergence(path, lock_timeout=lock_timeout)
    except SessionFileError as exc:  # a broken .lineage, or a source with a bad line
        return [Problem(exc.path, exc.line, exc.message)]
    return [] if reason is None else [Problem(path, None, reason)]


def _line_problems(
    path: Path, lines: list[storage.Line], awaiting: frozenset[Any] = frozenset()
) -> list[Problem]:
    problems = []
    calls: dict[tuple[str, Any], tuple[int, dict[str, Any]]] = {}
    answers: dict[tuple[str, Any], tuple[int, dict[str, Any]]] = {}
    answer_types = {answer: call for call, answer in CALL_PAIRS.items()}
    for number, line in ((line.number, line.data) for line in lines):  # storage's one line scanner
        reason = storage.describe_bad_line(line)
        if reason is not None:
            if line.rstrip(b"\r").startswith(_CONFLICT_MARKERS):
                reason = f"git merge conflict marker {line[:7].decode()!r}: resolve the merge, then edit"
            problems.append(Problem(path, number, reason))
            continue
        item = codec.decode_line(line)
        kind = item.get("type")
        if kind in CALL_PAIRS:
            calls.setdefault((kind, item.get("call_id")), (number, item))
        elif kind in answer_types:
            answers.setdefault((answer_types[kind], item.get("call_id")), (number, item))
    for key, (number, item) in calls.items():
        if key not in answers and key[1] not in awaiting:  # a paused run's call waits for a person
            name = f" ({item['name']})" if isinstance(item.get("name"), str) else ""
            problems.append(Problem(path, number, f"{key[0]} {key[1]!r}{name} has no {CALL_PAIRS[key[0]]}"))
    for key, (number, item) in answers.items():
        if key not in calls:
            problems.append(Problem(path, number, f"{CALL_PAIRS[key[0]]} {key[1]!r} answers no {key[0]}"))
    return problems


def _torn_tail(path: Path, scan: storage.Scan) -> Problem | None:
    tail = scan.pending
    if codec.is_blank(tail):
        return None
    return Problem(
        path, scan.newlines + 1, f"torn tail: {len(tail)} bytes after the last newline", fixable=True
    )
