"""Conversation turns: a user message and everything after it, up to the next user message.

An item limit can cut a tool call from its output (the SDK's issues #3738 and #1385): the
model API then rejects the history. Counting *turns* instead never starts a history in the
middle of one, because a turn always begins with the user's message.

Items before the first user message (a system prompt, say) belong to no turn: ``turns()``
does not list them, a turn limit keeps them only when it reaches the start of the file, and
``rewind`` never removes them.

Reads and rewinds scan backwards from the end, asking for more lines only while too few
user messages have been seen, so their cost follows the size of what they return.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import reads, scanner, storage
from ..core.errors import MalformedLineError
from ..render.item_text import shorten, text_of
from .titles import TEXT_WIDTH, is_user_message

_FIRST_GUESS = 8  # items per turn: a question, a tool call and its output, an answer...


@dataclass(frozen=True)
class Turn:
    """One turn: its number (from 1) and the items ``start:end`` it spans (end excluded).

    Example:
        >>> split_turns([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}])
        [Turn(index=1, start=0, end=2, text='Hi')]
    """

    index: int
    start: int
    end: int
    text: str
    """The user's message, whitespace collapsed and cut to 60 characters."""

    @property
    def items(self) -> int:
        """How many items the turn holds (the user's message included)."""
        return self.end - self.start


def split_turns(items: list[Any]) -> list[Turn]:
    """Every turn of a history, oldest first (a pure function of the items)."""
    starts = [index for index, item in enumerate(items) if is_user_message(item)]
    ends = [*starts[1:], len(items)]
    return [
        Turn(number, start, end, shorten(text_of(items[start]), TEXT_WIDTH))
        for number, (start, end) in enumerate(zip(starts, ends), 1)
    ]


def last_turn(fd: int, path: Path, *, size: int) -> tuple[int, Any]:
    """How many turns the file holds, and the user message that opens the newest (None if none).

    Parses only the lines that contain ``user``: every user message does, and recording a
    run's usage on a long session then costs a scan of its bytes, not a parse of every item.
    """
    data = reads.read_range(fd, 0, size)
    count, newest = 0, None
    for line in scanner.lines_containing(data, b"user"):
        item = scanner.parse_item(line)
        if is_user_message(item):
            count, newest = count + 1, item
    return count, newest


def newest_turns(fd: int, path: Path, turns: int, *, size: int) -> list[Any]:
    """The items of the newest ``turns`` whole turns (everything when there are fewer).

    Reads the newest lines in growing batches until enough user messages are among them.
    """
    if turns <= 0 or size == 0:
        return []
    wanted = turns * _FIRST_GUESS
    while True:
        items = reads.read_items(fd, path, wanted, size=size)
        starts = [index for index, item in enumerate(items) if is_user_message(item)]
        if len(starts) >= turns:
            return items[starts[-turns] :]
        if len(items) < wanted:  # reached the start of the file
            return items
        wanted *= 4


class TooFewTurnsError(ValueError):
    """A rewind or fork named more turns than the session has (``rewind_sync(10)`` on 2 turns).

    Example:
        >>> str(TooFewTurnsError(Path("s/a.jsonl"), 2, "rewind 10"))
        's/a.jsonl: has 2 turns; cannot rewind 10'
    """

    def __init__(self, path: Path, count: int, wanted: str) -> None:
        self.path, self.count = path, count
        self.reason = f"has {count} turn{'' if count == 1 else 's'}; cannot {wanted}"
        super().__init__(f"{path}: {self.reason}")

    def __reduce__(self) -> tuple[type, tuple[Path, int, str]]:
        return (type(self), (self.path, self.count, self.reason.split("cannot ", 1)[1]))


def rewind(fd: int, path: Path, turns: int, *, durable: bool) -> list[Any]:
    """Remove the newest ``turns`` whole turns with one truncation; return the removed items.

    The caller holds the exclusive lock. A torn tail is saved to the sidecar first, as by
    every writer. Items before the first user message are never removed.

    Raises:
        TooFewTurnsError: the session has fewer than ``turns`` turns (nothing is removed).
    """
    if turns <= 0:
        return []
    storage.repair_tail(fd, path, durable=durable)
    size = os.fstat(fd).st_size
    if size == 0:
        raise TooFewTurnsError(path, 0, f"rewind {turns}")
    wanted = turns * _FIRST_GUESS
    while True:
        lines, tail_item, tail_offset = reads.newest_lines(fd, size, wanted)
        entries = [(offset, _parse(fd, path, offset, line)) for offset, line in lines]
        if tail_item is not None:
            entries.append((tail_offset, tail_item))
        starts = [index for index, (_, item) in enumerate(entries) if is_user_message(item)]
        at_start = len(lines) < wanted - (tail_item is not None)
        if len(starts) >= turns or at_start:
            if len(starts) < turns:  # never rewind everything silently
                raise TooFewTurnsError(path, len(starts), f"rewind {turns}")
            first = starts[-turns]
            storage.truncate(fd, entries[first][0], durable=durable)
            return [item for _, item in entries[first:]]
        wanted *= 4


def _parse(fd: int, path: Path, offset: int, line: bytes) -> Any:
    item = scanner.parse_item(line)
    if item is None:
        problem = scanner.describe_bad_line(line) or "invalid line"
        raise MalformedLineError(path, problem, reads.line_number(fd, offset))
    return item
