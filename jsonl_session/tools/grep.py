"""What ``jsonl-session grep`` reads: the lines of a session whose text may match, decoded.

Decoding 60 MB of JSON to find one word takes about a second; finding the word in the raw
bytes takes a few tens of milliseconds. So when the pattern is a plain word, :func:`matching_items`
looks for it in the file's bytes and decodes only the lines that may hold it; the regex still
runs on each decoded item's text, so the pre-filter changes the speed, never the answer.

It may keep a line whose text does not match, never drop one that does. The text of an item
holds a word its raw line does not in these cases, each handled here:

* JSON may write any character as ``\\uXXXX`` (``zan\\u007aibar``): every line with a ``\\u``
  escape is decoded too;
* with ``-i``, Python's ``re`` also folds ``ſ`` to s, the Kelvin sign to k and ``ı``, ``İ`` to i:
  lines holding those characters are decoded when the word has the letter;
* the text is partly *built* (``transcript.text_of``): parts joined with spaces (a word
  cannot span two), tool arguments serialised again compactly (no ``:`` or ``,`` in a word;
  numbers re-formatted, ``1E2`` becomes ``100.0``: no digits), and ``[part]``, ``None``,
  ``True``, ``False``, ``inf``, ``nan`` from values that are no text: words found in those
  are not pre-filtered.

``tests/tools/test_grep_prefilter.py`` pins each case. :func:`search` is the whole of
``jsonl-session grep``: the regex, the role filter and what each hit is, for the CLI to print.

Example:
    >>> [hit.line for hit in search([("convo", "sessions/convo.jsonl")], "weather")]  # doctest: +SKIP
    [1, 4]
    >>> prefilter_for("zanzibar", ignore_case=False).word
    b'zanzibar'
    >>> prefilter_for("zan.*bar", ignore_case=False) is None      # regex syntax: decode every line
    True
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack

from ..core import codec, reads, scanner
from ..core.errors import JSONLSessionError
from ..core.locking import DEFAULT_LOCK_TIMEOUT
from ..core.transaction import Transaction
from ..render.item_text import heading, label, text_of
from . import system_grep

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from typing import Any

    from ..core.safe_open import StrPath

# Regex syntax, and characters a writer may escape (``"``, ``\\``, ``\\/``) or follow with a
# space (``:``, ``,``) where the compactly re-serialised text has none.
_NOT_LITERAL = frozenset('.^$*+?{}[]\\|()"/:,')
# Text that text_of makes up rather than copies from the line.
_BUILT = ("[part]", "none", "true", "false", "inf", "nan")
# Non-ASCII characters that re.IGNORECASE matches to an ASCII letter (all of them: checked by
# the test over every code point).
FOLDS = {"i": "\u0130\u0131", "k": "\u212a", "s": "\u017f"}
_ESCAPE = re.compile(rb"\\u")


class Hit:
    """One item whose text matches: where it is, what it is, and where in its text the match is.

    A plain class with slots, not a dataclass: ``grep``'s start-up is most of a rare word's search.
    """

    __slots__ = ("end", "heading", "item", "line", "role", "session_id", "start", "text")

    def __init__(
        self, session_id: str, line: int, item: dict[str, Any], text: str, start: int, end: int
    ) -> None:
        self.session_id = session_id
        self.line = line
        """The item's 1-based line number in its file."""
        self.item = item
        self.role = label(item)
        """``user``, ``assistant``, ``function_call``... (``item_text.label``)."""
        self.heading = heading(item)
        """What a transcript shows before the text (``tool call get_weather``...)."""
        self.text = text
        """The item's text as the transcript shows it (``item_text.text_of``), which was searched."""
        self.start = start
        """Where the first match begins in ``text``."""
        self.end = end
        """Where it ends."""

    def __repr__(self) -> str:
        span = f"({self.start}, {self.end})"
        return f"Hit({self.session_id!r}, line={self.line}, role={self.role!r}, span={span})"


def search(
    sessions: Sequence[tuple[str, StrPath]],
    pattern: str,
    *,
    ignore_case: bool = False,
    role: str | None = None,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    on_error: Callable[[StrPath, Exception], None] | None = None,
) -> Iterator[Hit]:
    """Each item of the ``(session id, file)`` pairs whose text matches the regex ``pattern``, in order.

    ``role`` keeps only items whose role (``user``, ``function_call``...) or heading is that.
    Files are read as :func:`matching_items` reads them (under their shared locks, bad lines
    skipped, a plain word pre-filtered in the raw bytes); one that cannot be read goes to
    ``on_error(path, error)`` and the rest are searched, or, without ``on_error``, its
    error is raised.

    Raises:
        re.error: ``pattern`` is not a regular expression (at the call, before any file is read).
    """
    compiled = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    prefilter = prefilter_for(pattern, ignore_case=ignore_case)
    return _search(sessions, compiled, prefilter, role, lock_timeout, on_error)


def _search(
    sessions: Sequence[tuple[str, StrPath]],
    pattern: re.Pattern[str],
    prefilter: Prefilter | None,
    role: str | None,
    lock_timeout: float,
    on_error: Callable[[StrPath, Exception], None] | None,
) -> Iterator[Hit]:
    paths = [path for _, path in sessions]
    for index, number, item in matching_items(paths, prefilter, lock_timeout, on_error):
        if role is not None and role not in (label(item), heading(item)):
            continue
        text = text_of(item)
        match = pattern.search(text)
        if match is not None:
            yield Hit(sessions[index][0], number, item, text, match.start(), match.end())


class Prefilter:
    """Which raw lines may hold a match: those with ``word`` (lower-cased with ``-i``), a ``\\u``
    escape, or (with ``-i``) one of ``variants``."""

    def __init__(self, word: str, *, ignore_case: bool) -> None:
        self.ignore_case = ignore_case
        self.word = (word.lower() if ignore_case else word).encode()
        folds = "".join(FOLDS.get(char, "") for char in set(word.lower())) if ignore_case else ""
        self.variants = tuple(char.encode() for char in sorted(folds))
        self._word = re.compile(re.escape(self.word))
        self._variants = [re.compile(re.escape(variant)) for variant in self.variants]

    def lines(self, data: bytes) -> Iterator[tuple[int, bytes]]:
        """``(line number, line)`` of each line of ``data`` that may hold a match, in order."""
        haystack = data.lower() if self.ignore_case else data
        hits: Iterator[int] = _one_per_line(haystack, self._word)
        extra: list[int] = []
        if b"\\" in data:  # memchr: most files without escapes skip the regex
            extra += (found.start() for found in _ESCAPE.finditer(data))
        if self._variants and not data.isascii():
            for variant in self._variants:
                extra += _one_per_line(data, variant)
        if extra:
            hits = iter(sorted({*hits, *extra}))
        number, counted_to, line_end = 1, 0, -1
        for found in hits:
            if found <= line_end:
                continue  # another hit in the line just yielded
            start = data.rfind(b"\n", 0, found) + 1
            line_end = data.find(b"\n", found)
            line_end = len(data) if line_end < 0 else line_end
            number += data.count(b"\n", counted_to, start)
            counted_to = start
            yield number, data[start:line_end]


def prefilter_for(pattern: str, *, ignore_case: bool) -> Prefilter | None:
    """A pre-filter for ``pattern``, or None when every line must be decoded.

    Only a plain printable-ASCII literal qualifies; with spaces, its longest word is looked
    for (parts of a message are joined with a space, so a word never spans two).
    """
    if not pattern or not all(" " <= char <= "~" for char in pattern) or _NOT_LITERAL & set(pattern):
        return None
    word = max(pattern.split(" "), key=len)
    if not word or any(char.isdigit() for char in word) or any(word.lower() in text for text in _BUILT):
        return None
    return Prefilter(word, ignore_case=ignore_case)


def matching_items(
    paths: Sequence[StrPath],
    prefilter: Prefilter | None,
    lock_timeout: float,
    on_error: Callable[[StrPath, Exception], None] | None = None,
) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """``(index in paths, line number, item)`` of each item whose line passes ``prefilter``.

    Each file is read under its shared lock; blank, malformed and torn lines are skipped
    (they are ``check``'s business, not grep's), as are lines that hold no JSON object. A
    file that cannot be read is passed to ``on_error(path, error)`` and skipped, or, without
    ``on_error``, its error is raised. With a pre-filter, a batch of files is locked
    together while the system's ``grep -F`` reads them (``system_grep``); otherwise, or
    without a usable grep, one file at a time is read and searched in Python.
    """
    first = 0
    hit_ratio = 1.0  # candidate bytes per byte read: assume every line at first
    while first < len(paths):
        with ExitStack() as locks:  # decoding and printing happen after the locks are released
            batch: list[tuple[int, StrPath, int, int]] = []
            if prefilter is not None and system_grep.available():
                files = _BATCH_FILES
                budget = int(_BATCH_OUTPUT / max(hit_ratio, _BATCH_OUTPUT / _BATCH_BYTES))
            else:
                files, budget = 1, _BATCH_BYTES  # Python reads and searches one file at a time
            first = _lock_batch(paths, first, lock_timeout, on_error, locks, batch, files, budget)
            found = None if prefilter is None else _grep_batch(batch, prefilter)
            if found is None:
                found = [(index, _python_lines(fd, size, prefilter)) for index, _, fd, size in batch]
            elif batch:
                candidates = sum(len(line) for _, lines in found for _, line in lines)
                hit_ratio = candidates / max(1, sum(size for *_, size in batch))
        for index, lines in found:
            for number, item in _items(lines):
                yield index, number, item
        found, lines = [], []  # not held while the next batch is read


# One grep run reads files until _BATCH_FILES or until it may hand back about _BATCH_OUTPUT
# bytes of candidate lines (all of them are held until decoded), judged by the last run's
# share of matching bytes: a rare word reads up to _BATCH_BYTES at once (fewer runs), a
# common one 16 MB (bounded memory: ~2x that).
_BATCH_FILES = 64
_BATCH_OUTPUT = 16 << 20
_BATCH_BYTES = 256 << 20


def _lock_batch(
    paths: Sequence[StrPath],
    first: int,
    lock_timeout: float,
    on_error: Callable[[StrPath, Exception], None] | None,
    locks: ExitStack,
    batch: list[tuple[int, StrPath, int, int]],
    files: int,
    limit: int,
) -> int:
    """Lock files from ``paths[first]`` on (shared), adding ``(index, path, fd, size)`` to
    ``batch``, until ``files`` files or ``limit`` bytes; return the index to go on from.

    Only the batch's first file may wait for its lock (up to ``lock_timeout``) or report an
    error: waiting while holding the others would stall their writers, and an error would
    lose what they hold. A later file that is busy or fails starts the next batch instead.
    """
    size = 0
    index = first
    while index < len(paths) and len(batch) < files and size < limit:
        path = paths[index]
        try:
            file = locks.enter_context(
                Transaction(path, write=False, timeout=None if batch else lock_timeout)
            )
            if file.busy:
                break
        except (OSError, JSONLSessionError) as exc:
            if batch:
                break
            if on_error is None:
                raise
            on_error(path, exc)
            index += 1
            continue
        index += 1
        if file.exists:  # else deleted since the folder was listed
            batch.append((index - 1, path, file.fd, file.size))
            size += file.size
    return index


def _grep_batch(
    batch: list[tuple[int, StrPath, int, int]], prefilter: Prefilter
) -> list[tuple[int, list[tuple[int, bytes]]]] | None:
    words = [prefilter.word, b"\\u", *prefilter.variants]
    paths = [path for _, path, _, _ in batch]
    found = system_grep.lines_containing(paths, words, ignore_case=prefilter.ignore_case)
    if found is None:
        return None
    for lines in found:  # grep reads the file's first line with its BOM; Python strips it first
        if lines and lines[0][0] == 1:
            lines[0] = (1, lines[0][1].removeprefix(codec.BOM))
    return [(index, lines) for (index, *_), lines in zip(batch, found)]


def _python_lines(fd: int, size: int, prefilter: Prefilter | None) -> list[tuple[int, bytes]]:
    data = reads.read_range(fd, 0, size).removeprefix(codec.BOM)
    if prefilter is None:
        return [(line.number, line.data) for line in scanner.scan_lines(data).lines]
    return list(prefilter.lines(data))


def _items(lines: list[tuple[int, bytes]]) -> Iterator[tuple[int, dict[str, Any]]]:
    import orjson

    for number, line in lines:
        if codec.is_blank(line):
            continue
        try:
            item = orjson.loads(line)  # not codec.decode_line: exact huge ints do not matter to a search
        except ValueError:
            continue
        if isinstance(item, dict):
            yield number, item


def _one_per_line(haystack: bytes, literal: re.Pattern[bytes]) -> Iterator[int]:
    """Offsets of ``literal`` in ``haystack``, the first in each line only.

    A compiled literal finds a word ~20% faster than ``bytes.find`` and several times faster
    than a pattern with ``re.IGNORECASE`` (``-i`` searches a lower-cased copy instead:
    ``bytes.lower`` changes only ASCII letters, so its offsets are offsets in the original).
    """
    search = literal.search
    position = 0
    while (found := search(haystack, position)) is not None:
        yield found.start()
        end = haystack.find(b"\n", found.end())
        if end < 0:
            return
        position = end + 1
