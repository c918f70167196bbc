"""Context growth per turn: what each turn adds to the history the model is sent, and what is biggest.

For every turn (a user message and what follows it, see ``turns``): its items and bytes, the
context so far (every item up to the end of the turn: all of it goes back to the model on the
next request), the input tokens its runs used where the usage log (``<file>.jsonl.usage``)
recorded them, and its largest tool outputs, the usual reason a context explodes.

Tokens are estimated from bytes: ``ceil(bytes / 4)`` (:data:`BYTES_PER_TOKEN`; OpenAI's rule of
thumb for English text, and JSON punctuation keeps stored items near it). Where a turn's runs
were recorded, the log's ``input_tokens`` divided by its ``requests`` is what the model really
read per request on that turn; :attr:`TurnGrowth.context_tokens` takes the larger of the two,
so a recorded session is never flagged on a guess that is too small.

``turn_growth`` is pure (numbered items and usage records in, numbers out); ``read_growth``
reads one session file and its usage log under the session's shared lock.

Example:
    >>> growth = turn_growth([(1, 30, {"role": "user", "content": "hi"})], [])
    >>> growth.turns[0].bytes, growth.turns[0].context_tokens
    (30, 8)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import reads, scanner, sidecar_files
from ..core.errors import MalformedLineError
from ..core.locking import DEFAULT_LOCK_TIMEOUT
from ..core.transaction import Transaction
from .turns import split_turns
from .usage import turn_usage

BYTES_PER_TOKEN = 4
LARGEST = 3  # tool outputs listed per turn


@dataclass(frozen=True)
class Contributor:
    """One tool output, by its line, type, the tool that produced it (if its call names it) and size."""

    line: int
    type: str
    tool: str | None
    bytes: int

    def as_dict(self) -> dict[str, Any]:
        return {"line": self.line, "type": self.type, "tool": self.tool, "bytes": self.bytes}


@dataclass(frozen=True)
class TurnGrowth:
    """One turn's share of the context, and the context once it is done."""

    index: int
    first_line: int
    last_line: int
    items: int
    bytes: int
    """The turn's own items, as stored (one JSON line each, newline not counted)."""
    context_bytes: int
    """Every item from the start of the file to the end of this turn (what the next request sends)."""
    text: str
    input_tokens: int | None = None
    """Input tokens of the turn's recorded runs (summed over their requests), or None if none."""
    requests: int | None = None
    largest: tuple[Contributor, ...] = field(default=())

    @property
    def estimated_tokens(self) -> int:
        """The context in tokens, estimated from its bytes: ``ceil(context_bytes / 4)``."""
        return -(-self.context_bytes // BYTES_PER_TOKEN)

    @property
    def context_tokens(self) -> int:
        """The context in tokens: the estimate, or the recorded input per request if that is larger."""
        if self.input_tokens and self.requests:
            return max(self.estimated_tokens, -(-self.input_tokens // self.requests))
        return self.estimated_tokens

    def as_dict(self) -> dict[str, Any]:
        return {
            "turn": self.index,
            "first_line": self.first_line,
            "last_line": self.last_line,
            "items": self.items,
            "bytes": self.bytes,
            "context_bytes": self.context_bytes,
            "estimated_tokens": self.estimated_tokens,
            "input_tokens": self.input_tokens,
            "requests": self.requests,
            "context_tokens": self.context_tokens,
            "largest": [contributor.as_dict() for contributor in self.largest],
            "text": self.text,
        }


@dataclass(frozen=True)
class Growth:
    """Every turn's growth, oldest first, and the items before the first turn (a system prompt)."""

    turns: list[TurnGrowth]
    preamble_bytes: int
    total_bytes: int

    @property
    def context_tokens(self) -> int:
        """The whole history in tokens, as the next request would send it (see :class:`TurnGrowth`)."""
        last = self.turns[-1].context_tokens if self.turns else 0
        return max(last, -(-self.total_bytes // BYTES_PER_TOKEN))

    def first_over(self, window: int) -> TurnGrowth | None:
        """The first turn after which the context no longer fits ``window`` tokens, or None."""
        return next((turn for turn in self.turns if turn.context_tokens > window), None)

    def as_dict(self, window: int | None = None) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "turns": [turn.as_dict() for turn in self.turns],
            "preamble_bytes": self.preamble_bytes,
            "total_bytes": self.total_bytes,
            "context_tokens": self.context_tokens,
        }
        if window is not None:
            over = self.first_over(window)
            answer["context_window"] = window
            answer["fits"] = over is None and self.context_tokens <= window
            answer["over_from_turn"] = over.index if over is not None else None
        return answer


def turn_growth(
    entries: Sequence[tuple[int, int, Any]], records: list[dict[str, Any]], *, largest: int = LARGEST
) -> Growth:
    """The growth of a history given as ``(line number, bytes, item)`` in file order, and its usage log.

    Example:
        >>> entries = [(1, 40, {"role": "user", "content": "weather?"}),
        ...            (2, 90, {"type": "function_call", "call_id": "c1", "name": "get_weather"}),
        ...            (3, 4000, {"type": "function_call_output", "call_id": "c1", "output": "..."})]
        >>> turn = turn_growth(entries, []).turns[0]
        >>> turn.bytes, turn.largest[0].tool, turn.largest[0].line
        (4130, 'get_weather', 3)
    """
    items = [item for _, _, item in entries]
    turns = split_turns(items)
    recorded = {entry["user_turn_number"]: entry for entry in turn_usage(records, items, turns)}
    tools: dict[Any, str] = {}  # call_id -> tool name
    preamble = sum(size for _, size, _ in entries[: turns[0].start]) if turns else 0
    context = preamble
    answer = []
    for turn in turns:
        span = entries[turn.start : turn.end]
        outputs = []
        for number, size, item in span:
            kind = item.get("type")
            if isinstance(item.get("name"), str) and "call_id" in item and not str(kind).endswith("_output"):
                tools[_key(item.get("call_id"))] = item["name"]
            if isinstance(kind, str) and kind.endswith("_output"):
                outputs.append(Contributor(number, kind, tools.get(_key(item.get("call_id"))), size))
        outputs.sort(key=lambda output: (-output.bytes, output.line))
        size = sum(size for _, size, _ in span)
        context += size
        usage = recorded.get(turn.index)
        answer.append(
            TurnGrowth(
                turn.index,
                span[0][0],
                span[-1][0],
                turn.items,
                size,
                context,
                turn.text,
                usage["input_tokens"] if usage else None,
                usage["requests"] if usage else None,
                tuple(outputs[:largest]),
            )
        )
    return Growth(answer, preamble, sum(size for _, size, _ in entries))


def read_growth(path: str | Path, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> Growth:
    """The growth of one session file, read with its usage log under the session's shared lock.

    A line that is not an item raises ``MalformedLineError`` (as reading the session does).

    Example:
        >>> growth = read_growth("sessions/convo_123.jsonl")             # doctest: +SKIP
        >>> growth.first_over(128_000)                                   # doctest: +SKIP
    """
    path = Path(path)
    entries: list[tuple[int, int, Any]] = []
    records: list[dict[str, Any]] = []
    with Transaction(path, write=False, timeout=lock_timeout) as file:
        if file.exists:
            for scan in reads.scan_file(file.fd, file.size):
                for line in scan.lines:
                    item = scanner.parse_item(line.data)
                    if item is None:
                        reason = scanner.describe_bad_line(line.data) or "invalid line"
                        raise MalformedLineError(path, reason, line.number)
                    entries.append((line.number, len(line.data), item))
        # Under the session's lock, which every writer of the log holds: the log reads whole.
        usage_log = sidecar_files.sidecar(path, sidecar_files.USAGE)
        records = sidecar_files.read_lines(usage_log, timeout=lock_timeout)
    return turn_growth(entries, records)


def _key(call_id: Any) -> Any:
    return call_id if isinstance(call_id, (str, int)) else repr(call_id)
