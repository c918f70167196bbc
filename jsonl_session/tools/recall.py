"""A recall tool for agents: search a folder of past sessions, get snippets back, bounded in size.

:func:`session_search_tool` returns a ready Agents SDK ``FunctionTool``: give it to an agent
and the model can look up what was said in earlier conversations. :func:`search_sessions` is
the same search as a plain function (what the tool calls), for use without the SDK.

The search is ``jsonl-session grep``'s (``tools.grep.search``: each file read under its shared
lock, a plain word pre-filtered in the raw bytes), case-insensitive, with every word of the
query required in one item, in any order; it reads the text a transcript shows
(``render.item_text.text_of``). Each match names its session and turn (``history.turns``: a turn
starts at a user message; ``None`` before the first one), counted by reading the session a
piece at a time up to the match: a long session is never held whole.

Matches come newest sessions first, or, with ``order="relevance"``, best first: scored with
BM25 at query time, no index to build or keep. A word's weight (its inverse document frequency)
is taken over the items the search reads anyway, those holding the query's longest word, so a
word that is rare among them counts for more; repeats of a word count with diminishing returns,
and a long item counts each less. At most :data:`RANKED_MATCHES` matches are ranked (the newest
sessions' first; the rest are still counted), each kept only as its snippet: memory stays bounded
whatever the folder holds.

What may be searched is decided once, before any file is read, and holds for every way in:
``owner`` and ``tags`` keep the sessions whose metadata (``history.metadata``) match, and
``exclude`` removes some. A ``session_id`` the model names must be among those; one that is
not (excluded, another owner's, no such session) gets the answer an unknown id gets, so the
model cannot tell a refused session from a missing one. Metadata that cannot be read puts
its session out of scope: a scope is never guessed.

What the model gets back is capped: at most ``max_results`` snippets of at most
``snippet_chars`` characters, and ``max_chars`` characters in all, the last line saying how
many more matches there were. A tool output that can grow without bound is what makes a
context explode.

Example:
    >>> from agents import Agent                                                   # doctest: +SKIP
    >>> agent = Agent(name="Assistant", tools=[session_search_tool("sessions")])  # doctest: +SKIP
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..core import reads, scanner
from ..core.errors import JSONLSessionError
from ..core.transaction import Transaction
from ..history.metadata import read_metadata, string_list
from ..history.titles import is_user_message
from ..session.folder import SessionDirectory
from .grep import Hit, search

if TYPE_CHECKING:
    from agents import FunctionTool

DEFAULT_NAME = "search_past_conversations"
DEFAULT_DESCRIPTION = (
    "Search the user's earlier conversations (stored sessions) for words. Returns matching "
    "snippets, each with its session id and turn number, newest sessions first. Give a few "
    "distinctive words (every word must appear; case is ignored; no regular expressions)."
)
RELEVANCE_DESCRIPTION = DEFAULT_DESCRIPTION.replace("newest sessions first", "best matches first")


@dataclass(frozen=True)
class Snippet:
    """One match: the session, the turn (None before the first user message), who said it, the text."""

    session_id: str
    turn: int | None
    role: str
    text: str


@dataclass(frozen=True)
class Found:
    """The snippets shown and how many matches there were in all (``total >= len(snippets)``)."""

    query: str
    snippets: list[Snippet]
    total: int

    def render(self, max_chars: int) -> str:
        """The text the model reads: one line per snippet, then how many more; at most ``max_chars``."""
        if not self.total:
            return f"No past conversation mentions {self.query!r}."
        head = f"{self.total} match{'es' if self.total != 1 else ''} for {self.query!r}"
        lines: list[str] = []
        used = len(head) + 2
        for snippet in self.snippets:
            turn = f"turn {snippet.turn}" if snippet.turn is not None else "before the first turn"
            line = f"- [session {snippet.session_id}, {turn}, {snippet.role}] {snippet.text}"
            # room for this line and the "N more" line after it
            if used + len(line) + 1 + _MORE_ROOM > max_chars:
                break
            lines.append(line)
            used += len(line) + 1
        more = self.total - len(lines)
        text = head + (f" (showing {len(lines)}):" if more else ":") + "\n" + "\n".join(lines)
        if more:
            text += (
                f"\n({more} more match{'es' if more != 1 else ''} not shown: search with more specific words)"
            )
        return text[:max_chars]


_MORE_ROOM = 80

ORDERS = ("newest", "relevance")
RANKED_MATCHES = 2_000
"""Matches ``order="relevance"`` ranks at most: the first ones found, newest sessions first."""
# BM25's usual constants: how fast repeats of a word saturate, how much an item's length counts.
_K1 = 1.2
_B = 0.75


def search_sessions(
    directory: SessionDirectory | str | os.PathLike[str],
    query: str,
    *,
    max_results: int = 10,
    snippet_chars: int = 300,
    exclude: Iterable[str] = (),
    session_id: str | None = None,
    owner: str | None = None,
    tags: Iterable[str] = (),
    order: str = "newest",
) -> Found:
    """Search the sessions of ``directory`` for the words of ``query``; the newest sessions first,
    or with ``order="relevance"`` the best matches first (BM25, see the module's docstring).

    ``owner`` and ``tags`` limit the search to the sessions with that owner and every one of
    those tags (as ``SessionDirectory.list`` filters them; sessions without metadata are then
    left out); ``exclude`` names sessions never searched (the agent's current one, say).
    ``session_id`` searches that one only, if those allow it: otherwise the answer is that of an
    id that does not exist. Unreadable files are skipped.

    Raises:
        TypeError: ``exclude`` or ``tags`` is one string rather than a list of them, or
            ``owner`` is not a string.
        ValueError: ``order`` is neither ``"newest"`` nor ``"relevance"``.

    Example:
        >>> found = search_sessions("sessions", "golden gate")                # doctest: +SKIP
        >>> found.total, found.snippets[0].session_id, found.snippets[0].turn  # doctest: +SKIP
        (3, 'convo_123', 1)
    """
    folder = directory if isinstance(directory, SessionDirectory) else SessionDirectory(directory)
    excluded, tags_wanted = _checked_scope(exclude, tags, owner, order)
    skip, wanted_tags = frozenset(excluded), frozenset(tags_wanted)
    words = query.casefold().split()
    if not words:
        return Found(query, [], 0)
    ids = _in_scope(folder, skip, owner, wanted_tags, session_id)
    sessions = [(i, folder.session_path(i)) for i in ids]
    sessions.sort(key=lambda pair: _mtime(pair[1]), reverse=True)
    # grep's search finds the longest word (pre-filtered in the raw bytes); the others filter its hits
    longest = max(words, key=len)
    hits = search(
        sessions,
        re.escape(longest),
        ignore_case=True,
        lock_timeout=folder.lock_timeout,
        on_error=lambda _path, _exc: None,
    )
    ranking = _Ranking(words) if order == "relevance" else None
    kept: list[_Match] = []
    total = 0
    for hit in hits:
        text = hit.text.casefold()
        found = [word in text for word in words]
        if ranking is not None:
            ranking.read(found)
        if all(found):
            total += 1
            if ranking is not None:
                if len(kept) < RANKED_MATCHES:
                    ranking.match(text)
                    kept.append(_Match(hit.session_id, hit.line, hit.role, _window(hit, snippet_chars)))
            elif len(kept) < max_results:
                kept.append(_Match(hit.session_id, hit.line, hit.role, _window(hit, snippet_chars)))
    if ranking is not None:
        kept = [kept[position] for position in ranking.best(max_results)]
    turns = _turns_of(folder, [(match.session_id, match.line) for match in kept])
    snippets = [
        Snippet(match.session_id, turns.get((match.session_id, match.line)), match.role, match.snippet)
        for match in kept
    ]
    return Found(query, snippets, total)


@dataclass(frozen=True)
class _Match:
    """A match as kept until its turn is known: where, who, and its snippet (not the item or its text)."""

    session_id: str
    line: int
    role: str
    snippet: str


class _Ranking:
    """BM25 over the items the search reads: document frequencies from all of them, scores for matches."""

    def __init__(self, words: list[str]) -> None:
        self.words = words
        self.read_items = 0
        self.holding = [0] * len(words)  # items read that hold each word
        self.matches: list[tuple[list[int], int]] = []  # per match: how often each word, its length

    def read(self, found: list[bool]) -> None:
        self.read_items += 1
        for position, present in enumerate(found):
            self.holding[position] += present

    def match(self, text: str) -> None:
        self.matches.append(([text.count(word) for word in self.words], text.count(" ") + 1))

    def best(self, limit: int) -> list[int]:
        """Positions of the ``limit`` best matches, best first; ties keep the newest first."""
        if not self.matches:
            return []
        import math

        weights = [
            math.log(1 + (self.read_items - holding + 0.5) / (holding + 0.5)) for holding in self.holding
        ]
        average = sum(length for _, length in self.matches) / len(self.matches) or 1.0
        scores = []
        for counts, length in self.matches:
            norm = _K1 * (1 - _B + _B * length / average)
            scores.append(
                sum(weight * count * (_K1 + 1) / (count + norm) for weight, count in zip(weights, counts))
            )
        return sorted(range(len(scores)), key=lambda position: -scores[position])[:limit]


def session_search_tool(
    directory: SessionDirectory | str | os.PathLike[str] = "sessions",
    *,
    max_results: int = 10,
    max_chars: int = 4000,
    snippet_chars: int = 300,
    exclude: Iterable[str] = (),
    owner: str | None = None,
    tags: Iterable[str] = (),
    order: str = "newest",
    name: str = DEFAULT_NAME,
    description: str | None = None,
) -> FunctionTool:
    """An Agents SDK function tool that searches the sessions of ``directory`` (needs ``openai-agents``).

    The model calls it with ``query`` (a few words) and, optionally, ``session_id``; it gets
    at most ``max_results`` snippets, each with its session id and turn, in at most
    ``max_chars`` characters, and is told how many more matches there were. The search runs
    in a worker thread, so the event loop never waits for a file lock.

    ``owner``, ``tags`` and ``exclude`` are the application's, not the model's: they bound
    every call, a ``session_id`` included (one outside them answers as an unknown id).

    Args:
        directory: The sessions folder (or a ``SessionDirectory``).
        max_results: Snippets returned at most.
        max_chars: Characters of the whole answer at most.
        snippet_chars: Characters of one snippet at most.
        exclude: Session ids never searched (the agent's current session, say).
        owner: Search only the sessions this owner owns (their metadata's ``owner``);
            None searches every owner's.
        tags: Search only the sessions that have every one of these tags.
        order: ``"newest"`` sessions first, or ``"relevance"``: the best matches first (BM25).
        name: The tool's name as the model sees it.
        description: What the model is told the tool does (by default, what it does in this ``order``).

    Example:
        >>> from agents import Agent, Runner                                   # doctest: +SKIP
        >>> recall = session_search_tool(                                      # doctest: +SKIP
        ...     "sessions", owner="user-42", exclude=["convo_124"]
        ... )
        >>> agent = Agent(name="Assistant", tools=[recall])                    # doctest: +SKIP
        >>> Runner.run_sync(agent, "What did I say about Zürich last week?",  # doctest: +SKIP
        ...                 session=JSONLSession("convo_124"))
    """
    import asyncio

    from agents import function_tool

    for label, value in (
        ("max_results", max_results),
        ("max_chars", max_chars),
        ("snippet_chars", snippet_chars),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{label} must be a positive int, not {value!r}")
    excluded, wanted_tags = _checked_scope(exclude, tags, owner, order)
    if description is None:
        description = DEFAULT_DESCRIPTION if order == "newest" else RELEVANCE_DESCRIPTION

    async def search_past_conversations(query: str, session_id: str | None = None) -> str:
        """Search earlier conversations.

        Args:
            query: A few distinctive words; every one must appear in a message.
            session_id: Only search this session (optional).
        """
        found = await asyncio.to_thread(
            search_sessions,
            directory,
            query,
            max_results=max_results,
            snippet_chars=snippet_chars,
            exclude=excluded,
            session_id=session_id,
            owner=owner,
            tags=wanted_tags,
            order=order,
        )
        return found.render(max_chars)

    tool: FunctionTool = function_tool(
        search_past_conversations, name_override=name, description_override=description
    )
    return tool


def _checked_scope(
    exclude: Iterable[str], tags: Iterable[str], owner: str | None, order: str
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``exclude`` and ``tags`` as tuples, checked with ``owner`` and ``order`` before any file is read."""
    excluded = tuple(string_list("exclude", exclude))
    wanted_tags = tuple(string_list("tags", tags))
    if owner is not None and not isinstance(owner, str):
        raise TypeError(f"owner must be a str or None, not {type(owner).__name__}")
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, not {order!r}")
    return excluded, wanted_tags


def _in_scope(
    folder: SessionDirectory,
    exclude: frozenset[str],
    owner: str | None,
    tags: frozenset[str],
    only: str | None,
) -> list[str]:
    """The ids that may be searched: sessions of the folder (``only`` that one, if given) that
    are not excluded, with that owner and those tags if asked. A refused ``only`` and an unknown
    one both give ``[]``: the same answer."""
    ids = [
        session_id
        for session_id in folder.ids()
        if session_id not in exclude and (only is None or session_id == only)
    ]
    if owner is None and not tags:
        return ids
    return [session_id for session_id in ids if _matches(folder.session_path(session_id), owner, tags)]


def _matches(path: str, owner: str | None, tags: frozenset[str]) -> bool:
    try:
        stored = read_metadata(Path(path))
    except (OSError, ValueError, JSONLSessionError):
        return False  # a sidecar we cannot read proves nothing: out of scope
    return (owner is None or stored.owner == owner) and tags <= set(stored.tags)


def _turns_of(folder: SessionDirectory, places: list[tuple[str, int]]) -> dict[tuple[str, int], int | None]:
    """The turn of each (session, line): user messages counted from the top of its file, under its lock."""
    wanted: dict[str, set[int]] = {}
    for session_id, line in places:
        wanted.setdefault(session_id, set()).add(line)
    turns: dict[tuple[str, int], int | None] = {}
    for session_id, lines in wanted.items():
        try:
            with Transaction(
                folder.session_path(session_id), write=False, timeout=folder.lock_timeout
            ) as file:
                if file.exists:
                    for number, turn in _count_turns(file.fd, file.size, lines).items():
                        turns[(session_id, number)] = turn
        except (OSError, JSONLSessionError):
            continue
    return turns


def _count_turns(fd: int, size: int, lines: set[int]) -> dict[int, int | None]:
    """The turn of each of ``lines`` (line numbers), read a piece at a time up to the last of them."""
    last = max(lines)
    found: dict[int, int | None] = {}
    turn = 0
    for scan in reads.scan_file(fd, size):
        for line in scan.lines:
            if b"user" in line.data and is_user_message(scanner.parse_item(line.data)):
                turn += 1
            if line.number in lines:
                found[line.number] = turn or None
            if line.number >= last:
                return found
    return found


def _window(hit: Hit, width: int) -> str:
    """About ``width`` characters of the hit's text around the match, on one line."""
    text = hit.text
    start = max(0, hit.start - width // 3)
    end = min(len(text), start + width)
    window = " ".join(text[start:end].split())
    return ("…" if start else "") + window + ("…" if end < len(text) else "")


def _mtime(path: str) -> float:
    try:
        return Path(path).stat().st_mtime
    except OSError:
        return 0.0
