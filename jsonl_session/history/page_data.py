"""What a transcript page shows about its session besides the items: the header and the turns panel.

``show --html`` and ``serve`` pass :func:`page_about` to the page (``render.html``), which draws
the title, tags and owner in its header and a "Turns" panel: each turn's items, bytes, the
context so far in tokens, the input tokens its runs recorded, and its largest tool outputs, each
a link to its line (``history.turn_growth`` computes them; ``show --turns`` prints the same).

The growth is read with the usage log under the session's shared lock, a line at a time, and
added up turn by turn as ``turn_growth`` does (the same numbers: tests/history/test_metadata.py
compares them), keeping per turn only its question, its sizes and its three largest outputs:
a page of a big session costs little more than its turns. Lines that are not items are
skipped (the page flags them itself).

Example:
    >>> about = page_about("sessions/convo_123.jsonl")            # doctest: +SKIP
    >>> about["title"], [turn["turn"] for turn in about["turns"]]  # doctest: +SKIP
    ('Refund A-1042', [1, 2])
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..core import reads, scanner, sidecar_files
from ..core.errors import SessionFileError, UnsafePathError
from ..core.locking import DEFAULT_LOCK_TIMEOUT
from ..core.transaction import Transaction
from ..render.item_text import shorten, text_of
from .metadata import SessionMetadata, read_metadata
from .titles import TEXT_WIDTH, default_title, first_user_message, is_user_message
from .turn_growth import LARGEST, Contributor, Growth, TurnGrowth
from .turns import Turn
from .usage import turn_usage


def page_about(
    path: str | os.PathLike[str], *, turns: bool = True, lock_timeout: float = DEFAULT_LOCK_TIMEOUT
) -> dict[str, Any]:
    """The page's ``about`` object: title (or None), default title, tags, owner, extra, turns.

    ``turns`` False leaves the panel out (``"turns": None``): ``show -n N`` pages hold only
    the newest items, which most turns' links would miss.

    A hand-broken ``.meta`` file does not stop the page: ``problem`` says what is wrong with it
    (None when nothing is), and the page shows no title, tags or owner.
    """
    path = Path(path)
    with Transaction(path, write=False, timeout=lock_timeout) as file:
        if file.exists:
            growth, first = _read(path, file.fd, file.size, turns=turns, lock_timeout=lock_timeout)
        else:
            growth, first = (Growth([], 0, 0) if turns else None), None
    return _about(path, growth, first)


def about_of(
    path: str | os.PathLike[str],
    fd: int,
    size: int,
    *,
    turns: bool = True,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
) -> dict[str, Any]:
    """:func:`page_about` of the first ``size`` bytes of the session open on ``fd``.

    For ``serve``, which streams a page from a descriptor taken under the shared lock: the
    header and the turns describe exactly the bytes the page shows, whatever was written since.
    """
    path = Path(path)
    growth, first = _read(path, fd, size, turns=turns, lock_timeout=lock_timeout)
    return _about(path, growth, first)


def _about(path: Path, growth: Growth | None, first: Any) -> dict[str, Any]:
    try:
        stored, problem = read_metadata(path), None
    except (SessionFileError, UnsafePathError) as exc:
        stored, problem = SessionMetadata(), str(exc)
    return {
        "problem": problem,
        "title": stored.title,
        "default_title": default_title(first),
        "tags": list(stored.tags),
        "owner": stored.owner,
        "extra": dict(stored.extra),
        "turns": None if growth is None else [_turn(turn) for turn in growth.turns],
        "context_tokens": None if growth is None else growth.context_tokens,
    }


def _read(path: Path, fd: int, size: int, *, turns: bool, lock_timeout: float) -> tuple[Growth | None, Any]:
    """The growth (None unless ``turns``) and the first user message of the file open on ``fd``."""
    if not turns:
        return None, first_user_message(fd, size)
    about = AboutLines()
    for scan in reads.scan_file(fd, size):
        about.add(scan)
    return about.growth(path, lock_timeout=lock_timeout), about.first_question()


class AboutLines:
    """:func:`about_of`, fed a session's lines a scan at a time by a reader that scans them anyway.

    ``serve`` reads a page's bytes once: the same scans make the items' views, these numbers
    and the times matched against ``.times``.
    """

    def __init__(self) -> None:
        self._growing = _Growing()

    def add(self, scan: scanner.Scan) -> None:
        """Count the scan's items (lines that are not items are skipped)."""
        for line in scan.lines:
            self.add_line(line, scanner.parse_item(line.data))

    def add_line(self, line: scanner.Line, item: Any) -> None:
        """Count one line, already parsed (``item`` None: not an item, skipped)."""
        if item is not None:
            self._growing.add(line.number, len(line.data), item)

    def first_question(self) -> Any:
        """The first user message of the lines so far, or None."""
        questions = self._growing.questions
        return questions[0] if questions else None

    def growth(self, path: Path, *, lock_timeout: float) -> Growth:
        # The usage log has its own lock, which every writer of it holds: it reads whole.
        usage_log = sidecar_files.sidecar(path, sidecar_files.USAGE)
        return self._growing.done(sidecar_files.read_lines(usage_log, timeout=lock_timeout))

    def about(self, path: str | os.PathLike[str], *, turns: bool, lock_timeout: float) -> dict[str, Any]:
        """The page's ``about`` of the lines so far (``turns`` False: without the panel)."""
        path = Path(path)
        growth = self.growth(path, lock_timeout=lock_timeout) if turns else None
        return _about(path, growth, self.first_question())


class _Growing:
    """``turn_growth``'s numbers, item by item: each turn's totals and three largest outputs.

    ``turn_growth`` takes every item at once; a page of a big session must not (a 40 MB
    session's page peaked ~190 MB higher that way: tests/render/test_html_streaming.py), so
    this keeps per turn its question, sizes and largest outputs, and the names of the calls
    not yet answered.
    """

    def __init__(self) -> None:
        self.questions: list[Any] = []  # each turn's user message (its usage is matched by its hash)
        self.rows: list[list[Any]] = []  # per turn: first line, last line, items, bytes, outputs
        self.calls: dict[Any, str] = {}  # call_id -> tool name, until its output comes
        self.preamble = self.total = 0

    def add(self, number: int, size: int, item: dict[str, Any]) -> None:
        self.total += size
        if is_user_message(item):
            self.questions.append(item)
            self.rows.append([number, number, 0, 0, []])
        if not self.rows:
            self.preamble += size
            return
        row = self.rows[-1]
        row[1], row[2], row[3] = number, row[2] + 1, row[3] + size
        kind = item.get("type")
        call_id = item.get("call_id")
        key = call_id if isinstance(call_id, (str, int)) else repr(call_id)
        if isinstance(kind, str) and kind.endswith("_output"):
            outputs = row[4]
            outputs.append(Contributor(number, kind, self.calls.pop(key, None), size))
            outputs.sort(key=lambda output: (-output.bytes, output.line))
            del outputs[LARGEST:]
        elif isinstance(item.get("name"), str) and "call_id" in item:
            self.calls[key] = item["name"]

    def done(self, records: list[dict[str, Any]]) -> Growth:
        split = [Turn(index, index - 1, index, "") for index in range(1, len(self.questions) + 1)]
        recorded = {entry["user_turn_number"]: entry for entry in turn_usage(records, self.questions, split)}
        context = self.preamble
        answer = []
        for index, (question, row) in enumerate(zip(self.questions, self.rows), 1):
            first, last, items, size, outputs = row
            context += size
            usage = recorded.get(index)
            answer.append(
                TurnGrowth(
                    index,
                    first,
                    last,
                    items,
                    size,
                    context,
                    shorten(text_of(question), TEXT_WIDTH),
                    usage["input_tokens"] if usage else None,
                    usage["requests"] if usage else None,
                    tuple(outputs),
                )
            )
        return Growth(answer, self.preamble, self.total)


def _turn(turn: Any) -> dict[str, Any]:
    fields = turn.as_dict()
    names = ("turn", "first_line", "items", "bytes", "context_tokens", "input_tokens", "largest", "text")
    return {name: fields[name] for name in names}
