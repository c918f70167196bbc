"""Verify session files (and repair what can be repaired without losing data).

Problems found, each with the file and the line it is on:

* a complete line that is not valid JSON, or not a JSON object (the readers refuse the file);
* a torn tail: bytes after the last newline that are not an item (an interrupted write).
  Readers skip it; ``fix=True`` moves it to the ``.torn`` sidecar, as the next writer would;
* git merge conflict markers (``<<<<<<<``, ``=======``, ``>>>>>>>``), named as such;
* a ``function_call`` with no ``function_call_output`` for its ``call_id``, or an output
  with no call: the model API rejects such a history on the next turn.
  Calls that a paused run (``.run``) waits to have approved are not reported;
* the rest of the resend lint (``history.resend_rules``, docs/resend-lint.md): a reasoning item
  not followed by the item it produced, an approval request without its response, duplicate ids;
* a fork whose source has diverged from the prefix recorded in its ``.lineage`` (see
  ``lineage``), or whose lineage file is unreadable;
* a ``.meta``, ``.run`` or ``.usage`` that cannot be read: over its limit (read no further
  than that), not JSON, not a metadata record or a saved run, a log line longer than a record,
  not a regular file (named, never fixed here);
* a ``type`` or ``call_id`` that is not a string, and a line nested deeper than can be
  written back (docs/format.md, "Nesting");
* a temporary copy left next to the session by a rewrite (or a sidecar's replace) whose
  process was killed (``fix=True`` removes it: see ``temp_files``);
* a sidecar whose session file is gone (removed with ``rm``): ``fix=True`` removes it; and an
  edit that ``jsonl-session edit`` kept after a conflict, named and never removed (see
  ``leftovers``).

Only torn tails, leftover temporary files and sidecars, orphaned reasoning items and repeated copies of an
item are fixable here (``resend_fix``): every other repair means deciding what the conversation
should say, which is a job for ``jsonl-session edit``.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import codec, reads, scanner, sidecar_files, storage, temp_files
from ..core.errors import LockTimeout, SessionFileError, TornTailWarning
from ..core.locking import DEFAULT_LOCK_TIMEOUT
from ..core.names import DROPPED, META
from ..core.transaction import Transaction
from ..history import resend_rules
from ..history.resend_rules import ResendLint
from . import conflicts, leftovers

# A call item type -> the type of the item that answers it, matched on ``call_id``: the resend
# lint's table (docs/resend-lint.md), named here too for ``edit_copy``.
CALL_PAIRS = resend_rules.CALL_PAIRS
_ANSWER_TO_CALL = {answer: call for call, answer in CALL_PAIRS.items()}
_ANSWERS = frozenset(_ANSWER_TO_CALL)


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
    try:
        with Transaction(path, write=fix, timeout=lock_timeout) as file:
            if not file.exists:
                return [Problem(path, None, "no such file"), *_left_by(path, fix=fix)]
            lines = _LineChecker(path, _awaiting_approval(path))
            for scan in reads.scan_file(file.fd, file.size):  # a piece at a time: memory stays flat
                lines.take(scan)
            problems = lines.problems()
            torn = lines.torn_tail()
            if torn is not None and fix:
                file.sync_folder_once()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", TornTailWarning)  # reported as a Problem instead
                    storage.repair_tail(file.fd, path, durable=True)
                torn = Problem(torn.path, torn.line, f"{torn.reason}; moved to {path.name}.torn", True, True)
            # Under the session's lock no rewrite of it is under way: its temporary files are
            # a killed writer's (the lock on each is checked as well, see ``temp_files``).
            problems.extend(leftover_problems(temp_files.temp_files_of(path), fix=fix))
            problems.extend(kept_edit_problems(leftovers.kept_edits(path.parent, of=path)))
    except SessionFileError as exc:  # a symlink or FIFO where a session file belongs
        what = leftovers.not_a_file(path)
        if what is None or what == "a symlink":  # the message says so already, and why
            return [Problem(path, None, exc.message)]
        return [Problem(path, None, f"is {what}, not a session file")]
    except LockTimeout as exc:  # one busy file must not stop a folder's check
        return [
            Problem(
                path, None, f"not checked: lock not acquired within {exc.timeout:g}s (a writer or an edit)"
            )
        ]
    except OSError as exc:  # e.g. no permission to read it, a folder ("Is a directory")
        return [Problem(path, None, f"not checked: {exc.strerror or exc}")]
    if torn is not None:
        problems.append(torn)
    problems.extend(_lineage_problems(path, lock_timeout))
    problems.extend(_sidecar_problems(path, lock_timeout))
    problems.extend(Problem(*marker) for marker in conflicts.sidecar_markers(path))
    if fix and any(problem.fixable and not problem.fixed for problem in problems if problem.line):
        problems = _fix_for_resend(path, problems, lock_timeout)  # after the lock above is released
    return sorted(problems, key=lambda problem: problem.line or 0)


def stray_temp_problems(directory: str | Path, *, fix: bool = False) -> list[Problem]:
    """What sessions that no longer exist left in ``directory``: temporary files, sidecars, kept edits;
    and what is named like a session but is not a file (a FIFO, a folder: never opened).

    ``check_file`` reports those of the session it checks; these have no session to check.
    ``fix`` removes the temporary files and the sidecars, never a kept edit or a non-file.

    Example:
        >>> stray_temp_problems("sessions", fix=True)                   # doctest: +SKIP
        [Problem(path=PosixPath('sessions/.old.jsonl.5f0c9a21.tmp'), ...)]
    """
    folder = Path(directory)
    temps = [temp for temp in temp_files.temp_files(folder) if not _exists(temp_files.session_of(temp))]
    kept = [copy for copy in leftovers.kept_edits(folder) if not _exists(leftovers.session_of_kept(copy))]
    problems = [
        *leftover_problems(temps, fix=fix),
        *sidecar_problems(leftovers.orphaned_sidecars(folder), fix=fix),
        *kept_edit_problems(kept),
        *(
            Problem(path, None, f"is {what}, not a session file; `check --fix` leaves it")
            for path, what in leftovers.not_files(folder)
        ),
    ]
    return sorted(problems, key=lambda problem: problem.path.name)


def sidecar_problems(sidecars: list[tuple[Path, str]], *, fix: bool) -> list[Problem]:
    """A problem for each sidecar of a gone session (see ``leftovers``); removed with ``fix``.

    Except ``.dropped``: it holds what ``check --fix`` dropped, whose only copy it may be, so a
    person decides (``rm`` of the session removes it with the rest).
    """
    problems = []
    for path, kind in sidecars:
        session = path.name[: -len(kind) - 1]
        reason = f"{kind} sidecar left behind: its session {session} no longer exists"
        if "." + kind == DROPPED:
            problems.append(
                Problem(path, None, reason + "; it holds what `check --fix` dropped, `check --fix` leaves it")
            )
            continue
        try:
            if fix:
                os.unlink(path)
                problems.append(Problem(path, None, reason + "; removed", fixable=True, fixed=True))
                continue
        except FileNotFoundError:
            continue
        problems.append(Problem(path, None, reason + "; `check --fix` removes it", fixable=True))
    return problems


def kept_edit_problems(kept: list[Path]) -> list[Problem]:
    """A problem for each edit that ``jsonl-session edit`` kept; never fixable: a person decides."""
    return [
        Problem(
            copy,
            None,
            f"an edit kept after a conflict: merge it into {leftovers.session_of_kept(copy).name} "
            "by hand, then delete it (`check --fix` leaves it)",
        )
        for copy in kept
    ]


def _left_by(path: Path, *, fix: bool) -> list[Problem]:
    """What a named session that does not exist left: temporary files, sidecars, kept edits."""
    return [
        *leftover_problems(temp_files.temp_files_of(path), fix=fix),
        *sidecar_problems(leftovers.orphaned_sidecars(path.parent, of=path), fix=fix),
        *kept_edit_problems(leftovers.kept_edits(path.parent, of=path)),
    ]


def leftover_problems(temps: list[Path], *, fix: bool) -> list[Problem]:
    """A problem for each temporary file that no live writer holds; removed with ``fix``."""
    problems = []
    for temp in temps:
        if not temp_files.is_orphaned(temp):
            continue  # a rewrite in progress: not a problem
        try:
            size = os.lstat(temp).st_size
        except FileNotFoundError:
            continue
        if temp_files.is_edit_copy(temp):
            reason = f"copy ({size} bytes) left by an interrupted or refused `jsonl-session edit`"
        else:
            reason = f"temporary copy ({size} bytes) left by an interrupted rewrite"
        if fix and temp_files.remove_if_orphaned(temp):
            problems.append(Problem(temp, None, reason + "; removed", fixable=True, fixed=True))
        else:
            problems.append(Problem(temp, None, reason + "; `check --fix` removes it", fixable=True))
    return problems


def _exists(path: Path | None) -> bool:
    return path is not None and os.path.lexists(path)


def _awaiting_approval(path: Path) -> frozenset[Any]:
    """Call ids a paused run (``<file>.jsonl.run``) waits on: unanswered on purpose, not a problem."""
    from ..history.paused_runs import info

    try:
        paused = info(path)
    except SessionFileError:
        return frozenset()  # an unreadable .run: the calls are reported as unanswered
    return frozenset(entry.get("call_id") for entry in paused.pending) if paused is not None else frozenset()


def _fix_for_resend(path: Path, problems: list[Problem], lock_timeout: float) -> list[Problem]:
    """Drop the lines the resend lint may drop (``resend_fix``); each is then reported as fixed.

    Line numbers stay those of the file as it was read (a writer only appends meanwhile, which
    renumbers nothing): ``check`` without ``fix`` shows exactly these lines first. A dropped
    line's other problems go with it (a duplicate id on an orphaned reasoning item).
    """
    from .resend_fix import drop_fixable

    dropped = drop_fixable(path, awaiting=_awaiting_approval(path), lock_timeout=lock_timeout)
    gone = {problem.line for problem in dropped}
    kept = [seen for seen in problems if seen.line not in gone]
    where = f"; dropped; kept in {path.name}{DROPPED}"
    return [*kept, *(Problem(path, drop.line, drop.reason + where, True, True) for drop in dropped)]


def _lineage_problems(path: Path, lock_timeout: float) -> list[Problem]:
    from ..history.lineage import divergence

    try:
        reason = divergence(path, lock_timeout=lock_timeout)
    except SessionFileError as exc:  # a broken .lineage, or a source with a bad line
        return [Problem(exc.path, exc.line, exc.message)]
    return [] if reason is None else [Problem(path, None, reason)]


def _sidecar_problems(path: Path, lock_timeout: float) -> list[Problem]:
    """A ``.meta``, ``.run`` or ``.usage`` that cannot be read: over its limit (read no further),
    malformed, not a regular file.

    Never fixable here: each may hold the only copy of a title, a paused run or the tokens spent;
    a person decides.
    """
    from ..history.metadata import read_metadata
    from ..history.paused_runs import info

    def usage() -> object:
        return sidecar_files.read_lines(
            sidecar_files.sidecar(path, sidecar_files.USAGE), timeout=lock_timeout
        )

    readers: list[tuple[str, str, Callable[[], object]]] = [
        (META, "metadata not read", lambda: read_metadata(path)),
        (sidecar_files.RUN, "paused run not read", lambda: info(path)),
        (sidecar_files.USAGE, "usage log not read", usage),
    ]
    problems = []
    for kind, what, read in readers:
        sidecar = sidecar_files.sidecar(path, kind)
        if not os.path.lexists(sidecar):
            continue
        try:
            read()
        except SessionFileError as exc:
            problems.append(Problem(exc.path, exc.line, f"{what}: {exc.message}"))
        except OSError as exc:
            problems.append(Problem(sidecar, None, f"{what}: {exc.strerror or exc}"))
    return problems


class _LineChecker:
    """Each line's problems, and tool calls and outputs without their pair, fed one scan at a time.

    Only a line number and a name are kept per call and output, so a session of any size is
    checked in the memory of one piece.
    """

    def __init__(self, path: Path, awaiting: frozenset[Any] = frozenset()) -> None:
        self.path = path
        self.awaiting = awaiting
        self.found: list[Problem] = []
        self.calls: dict[tuple[str, Any], tuple[int, Any]] = {}  # (type, call_id) -> (line, name)
        self.answers: dict[tuple[str, Any], int] = {}  # (type of the call answered, call_id) -> line
        self.next_number = 1
        self.pending = b""
        self.resend = ResendLint(awaiting)  # reasoning without its item, unanswered approvals, duplicate ids

    def take(self, scan: scanner.Scan) -> None:
        for line in scan.lines:  # storage's one line scanner
            self._take_line(line.number, line.data)
        self.next_number += scan.newlines
        self.pending = scan.pending

    def _take_line(self, number: int, line: bytes) -> None:
        reason = scanner.describe_bad_line(line)
        if reason is not None:
            if conflicts.is_marker(line):
                reason = conflicts.marker_reason(line)
            self.found.append(Problem(self.path, number, reason))
            return
        item = codec.decode_line(line)
        reason = _shape_problem(line, item)
        if reason is not None:
            self.found.append(Problem(self.path, number, reason))
            return
        self.resend.take(number, item)
        kind = item.get("type")
        if kind in CALL_PAIRS:
            self.calls.setdefault((kind, item.get("call_id")), (number, item.get("name")))
        elif kind in _ANSWER_TO_CALL:
            self.answers.setdefault((_ANSWER_TO_CALL[kind], item.get("call_id")), number)

    def problems(self) -> list[Problem]:
        """The lines' problems, then every call without an output and every output without a call."""
        found = list(self.found)
        for key, (number, name) in self.calls.items():
            # A paused run's call waits for a person, not for an output.
            if key not in self.answers and key[1] not in self.awaiting:
                named = f" ({name})" if isinstance(name, str) else ""
                found.append(
                    Problem(self.path, number, f"{key[0]} {key[1]!r}{named} has no {CALL_PAIRS[key[0]]}")
                )
        for key, number in self.answers.items():
            if key not in self.calls:
                found.append(
                    Problem(self.path, number, f"{CALL_PAIRS[key[0]]} {key[1]!r} answers no {key[0]}")
                )
        for resend in self.resend.problems():
            hint = "; `check --fix` drops the line" if resend.fixable else ""
            found.append(Problem(self.path, resend.line, resend.reason + hint, resend.fixable))
        return found

    def torn_tail(self) -> Problem | None:
        """The bytes after the last newline, when they are not an item (after the last scan)."""
        tail = self.pending
        if codec.is_blank(tail):
            return None
        return Problem(
            self.path, self.next_number, f"torn tail: {len(tail)} bytes after the last newline", fixable=True
        )


def _shape_problem(line: bytes, item: dict[str, Any]) -> str | None:
    """What makes a parsed item unusable although it is a JSON object, or None.

    A ``type`` or ``call_id`` that is a list or an object crashed the whole folder's check
    ("unhashable type", tests/render/test_hostile_content.py); a line nested deeper than orjson
    writes reads fine but cannot be written back by any rewrite.
    """
    kind = item.get("type")
    if kind is not None and not isinstance(kind, str):
        return f"its type is a {_json_kind(kind)}, not a string"
    call_id = item.get("call_id")
    if call_id is not None and not isinstance(call_id, str) and (kind in CALL_PAIRS or kind in _ANSWERS):
        return f"{kind} has a call_id that is a {_json_kind(call_id)}, not a string"
    # Only a line with enough brackets can be that deep: the count is cheap, the walk is not.
    if line.count(b"[") + line.count(b"{") > codec.MAX_DEPTH:
        depth = codec.depth_of(item)
        if depth > codec.MAX_DEPTH:
            return (
                f"nested {depth} levels deep (more than {codec.MAX_DEPTH}): it reads, but rewrite, "
                "edit, redact and fork refuse it; flatten or remove it by hand (docs/format.md)"
            )
    return None


def _json_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "JSON object"
    return "JSON array" if isinstance(value, list) else type(value).__name__
