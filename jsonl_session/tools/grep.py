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
* the text is partly *built* (``render.item_text.text_of``): parts joined with spaces (a word
  cannot span two), tool arguments serialised again compactly (no ``:`` or ``,`` in a word;
  numbers re-formatted, ``1E2`` becomes ``100.0``: no digits), and ``[part]``, ``None``,
  ``True``, ``False``, ``inf``, ``nan`` from values that are no text: words found in those
  are not pre-filtered.

A phrase (words and spaces) is looked for as it is where no list (``[``) could join it from
parts, else by its longest word, kept only on the lines that may hold the phrase whole
(``Prefilter.may_hold_phrase``: the word after a ``[``...): a common word in a rarer phrase
decodes the phrase's lines, not the word's.

``tests/tools/test_grep_prefilter.py`` pins each case. Memory is bounded whatever the folder
holds (``matching_items``: ``tests/tools/test_grep_bounded.py``). :func:`search` is the whole of
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

import os
import re
import sys
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import ExitStack

from ..core import codec, reads
from ..core.errors import JSONLSessionError, SessionNotFoundError
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
    ``role`` and ``heading`` are worked out when asked (the CLI asks for one of them), not for
    every hit.
    """

    __slots__ = ("end", "item", "line", "session_id", "start", "text")

    def __init__(
        self, session_id: str, line: int, item: dict[str, Any], text: str, start: int, end: int
    ) -> None:
        self.session_id = session_id
        self.line = line
        """The item's 1-based line number in its file."""
        self.item = item
        self.text = text
        """The item's text as the transcript shows it (``render.item_text.text_of``), which was searched."""
        self.start = start
        """Where the first match begins in ``text``."""
        self.end = end
        """Where it ends."""

    @property
    def role(self) -> str:
        """``user``, ``assistant``, ``function_call``... (``render.item_text.label``)."""
        return label(self.item)

    @property
    def heading(self) -> str:
        """What a transcript shows before the text (``tool call get_weather``...)."""
        return heading(self.item)

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
    error is raised. One deleted since it was listed is skipped, and told to ``on_error`` as a
    :class:`SessionNotFoundError` (a caller that named it may call that an error).

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
    ids = [session_id for session_id, _ in sessions]
    paths = [path for _, path in sessions]
    find = pattern.search  # the loop runs once a candidate line: no lookups it can do without
    for index, number, item in matching_items(paths, prefilter, lock_timeout, on_error):
        if role is not None and role not in (label(item), heading(item)):
            continue
        text = text_of(item)
        match = find(text)
        if match is not None:
            start, end = match.span()
            yield Hit(ids[index], number, item, text, start, end)


class Prefilter:
    """Which raw lines may hold a match: those with ``word`` (lower-cased with ``-i``), a ``\\u``
    escape, or (with ``-i``) one of ``variants``; for a ``phrase`` (words and spaces), those
    of them that :meth:`may_hold_phrase`."""

    def __init__(self, word: str, *, ignore_case: bool, phrase: str | None = None) -> None:
        self.ignore_case = ignore_case
        self.word = (word.lower() if ignore_case else word).encode()
        self.variants = _variants(word, ignore_case)
        self.phrase = None if phrase is None else (phrase.lower() if ignore_case else phrase).encode()
        self._phrase_variants = _variants(phrase or "", ignore_case)
        self.longest = max(len(self.word), len(b"\\u"), *map(len, self.variants))
        """The longest byte string looked for: pieces read apart overlap by one byte less."""
        self._word = re.compile(re.escape(self.word))
        self._phrase = None if self.phrase is None else re.compile(re.escape(self.phrase))
        self._variants = [re.compile(re.escape(variant)) for variant in self.variants]
        self._folded_phrase = [re.compile(re.escape(variant)) for variant in self._phrase_variants]

    def lines(self, data: bytes) -> Iterator[tuple[int, int, bytes]]:
        """``(line number, offset, line)`` of each line of ``data`` that may hold a match, in
        order; numbers count from 1 at the start of ``data``, offsets are where lines start.
        For a phrase, only the lines that :meth:`may_hold_phrase`."""
        haystack = data.lower() if self.ignore_case else data
        literal, variants = self._word, self._variants
        if self._phrase is not None and b"[" not in data:
            # No list to join parts from: a phrase's lines hold it as it is, escaped, or with
            # a character -i folds (any of the phrase's). Look for the phrase, not its word,
            # which a common word's lines hold several times more often.
            literal, variants = self._phrase, self._folded_phrase
        hits: Iterator[int] = _one_per_line(haystack, literal)
        sift = literal is self._word and self.phrase is not None  # the word's lines: those that may hold it
        extra: list[int] = []
        if b"\\" in data:  # memchr: most files without escapes skip the regex
            extra += (found.start() for found in _ESCAPE.finditer(data))
        if variants and not data.isascii():
            for variant in variants:
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
            line = data[start:line_end]
            if not sift or self.may_hold_phrase(line):
                yield number, start, line

    def grep_patterns(self) -> tuple[list[bytes], bool]:
        """What the system's grep looks for, and whether as extended regular expressions: the
        word, ``\\u`` and the variants, literally; for a phrase, the lines
        :meth:`may_hold_phrase` keeps (the phrase, or the word after a ``[``...), so grep hands
        back only lines that are decoded. The word and the phrase hold no character special to
        ``grep -E`` (``prefilter_for`` refuses them).

        Parts are joined only from a list, and a list's ``[`` comes before its elements in
        the line: the word after a ``[`` is enough. ``word.*\\[`` as well cost grep twice the
        time over lines that all hold a common word (it reads each to its end for a ``[``)."""
        if self.phrase is None:
            return [self.word, b"\\u", *self.variants], False
        return [self.phrase, rb"\[.*" + self.word, rb"\\u", *self.variants, *self._phrase_variants], True

    def may_hold_phrase(self, line: bytes) -> bool:
        """Whether a line with the phrase's word (or an escape, or a character ``-i`` folds) may
        hold the phrase: it has it as it is, or its text may be joined from parts with a space
        (the word after a list's ``[``), or be written otherwise (an escape, a character ``-i``
        folds). A phrase holds no ``"``, ``\\``, ``/``, ``:`` or ``,``, which a writer escapes
        or spaces differently, nor a word the text makes up. The lines the system's grep hands
        back (:meth:`grep_patterns`) are these."""
        if self.phrase is None:
            return True
        haystack = line.lower() if self.ignore_case else line
        bracket = line.find(b"[")
        return (
            self.phrase in haystack
            or (bracket >= 0 and haystack.find(self.word, bracket) >= 0)
            or b"\\u" in line
            or any(variant in line for variant in self._phrase_variants)
        )

    def may_match(self, data: bytes) -> bool:
        """Whether ``data`` (a part of a line) holds one of the byte strings looked for."""
        haystack = data.lower() if self.ignore_case else data
        return self.word in haystack or b"\\u" in data or any(variant in data for variant in self.variants)


def prefilter_for(pattern: str, *, ignore_case: bool) -> Prefilter | None:
    """A pre-filter for ``pattern``, or None when every line must be decoded.

    Only a plain printable-ASCII literal qualifies; with spaces, its longest word is looked
    for (parts of a message are joined with a space, so a word never spans two), then the
    lines that have it are kept if they may hold the whole phrase (``may_hold_phrase``).
    """
    if not pattern or not all(" " <= char <= "~" for char in pattern) or _NOT_LITERAL & set(pattern):
        return None
    word = max(pattern.split(" "), key=len)
    if not word or any(char.isdigit() for char in word) or any(word.lower() in text for text in _BUILT):
        return None
    return Prefilter(word, ignore_case=ignore_case, phrase=pattern if " " in pattern else None)


def _variants(text: str, ignore_case: bool) -> tuple[bytes, ...]:
    """The non-ASCII characters ``-i`` matches to a letter of ``text``, as bytes."""
    folds = "".join(FOLDS.get(char, "") for char in set(text.lower())) if ignore_case else ""
    return tuple(char.encode() for char in sorted(folds))


HELD_BYTES = 4 << 20
"""Bytes of candidate lines a search holds at most (plus one line): a common word's search
reads until it holds this much, decodes and hands on those lines, then reads on."""
# One batch locks files until _BATCH_FILES or _BATCH_BYTES: a rare word's search runs one
# grep per CPU over the whole of a small folder.
_BATCH_FILES = 64
_BATCH_BYTES = 256 << 20
_PIECE = 1 << 20
"""Bytes Python reads of a file at once."""


def matching_items(
    paths: Sequence[StrPath],
    prefilter: Prefilter | None,
    lock_timeout: float,
    on_error: Callable[[StrPath, Exception], None] | None = None,
    *,
    held_bytes: int = HELD_BYTES,
) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """``(index in paths, line number, item)`` of each item whose line passes ``prefilter``.

    Each file is read under its shared lock; blank, malformed and torn lines are skipped
    (they are ``check``'s business, not grep's), as are lines that hold no JSON object. A
    file that cannot be read is passed to ``on_error(path, error)`` and skipped, or, without
    ``on_error``, its error is raised; one deleted since it was listed is skipped, and passed
    to ``on_error`` as a :class:`SessionNotFoundError`. With a pre-filter, a batch of files is locked
    together while the system's ``grep`` reads them (``system_grep``); otherwise, or
    without a usable grep, one file at a time is read and searched in Python.

    Memory is flat in the number of hits: once about ``held_bytes`` of candidate lines are
    held, the reading stops where it is, the locks are released, those lines are decoded and
    handed on, and the next batch goes on from there (the file locked again: if it was
    rewritten or cut meanwhile, it is read again from its start, its lines already reached
    skipped). A line that is not a candidate is never held, however long.
    """
    index, offset, number, inode = 0, 0, 1, -1  # where to go on from: a file, a byte, its line
    skip_through = 0  # lines of paths[index] already handed on, when it must be read again
    while index < len(paths):
        found: list[tuple[int, int, bytes]] = []
        with ExitStack() as locks:  # decoding and printing happen after the locks are released
            batch: list[tuple[int, StrPath, int, int]] = []
            grep = prefilter is not None and system_grep.available()
            files = _BATCH_FILES if grep else 1  # Python reads and searches one file at a time
            after = _lock_batch(paths, index, lock_timeout, on_error, locks, batch, files, _BATCH_BYTES)
            if offset and batch and batch[0][0] == index:
                stat = os.fstat(batch[0][2])
                if stat.st_ino != inode or stat.st_size < offset:  # rewritten or cut: from its start
                    skip_through, offset, number = number - 1, 0, 1
            elif not batch or batch[0][0] != index:
                offset, number, skip_through = 0, 1, 0  # the file went: its next batch starts afresh
            held = 0
            stop = None
            candidates = _candidates(batch, prefilter, offset, number)
            try:
                for at, line_number, end, line in candidates:
                    if at == index and line_number <= skip_through:
                        continue
                    found.append((at, line_number, line))
                    held += len(line)
                    if held >= held_bytes:
                        stop = at, end, line_number + 1
                        break
            finally:
                candidates.close()  # stops the greps (the locks are still held meanwhile)
            if stop is not None:
                skip_through = skip_through if stop[0] == index else 0
                index, offset, number = stop
                inode = os.fstat(next(fd for at, _, fd, _ in batch if at == index)).st_ino
            else:
                index, offset, number, skip_through = after, 0, 1, 0
        yield from _items(found)
        found = []  # not held while the next batch is read


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
    lose what they hold. A later file that is busy, fails or is gone starts the next batch instead.
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
        # Deleted since it was listed, while waiting for its lock, or between two batches of it.
        if not file.exists:
            if on_error is not None:
                if batch:
                    break  # reported when it heads the next batch
                gone = "no such session (deleted while grep ran)"
                on_error(path, SessionNotFoundError(path, gone))
            index += 1
            continue
        index += 1
        batch.append((index - 1, path, file.fd, file.size))
        size += file.size
    return index


def _candidates(
    batch: list[tuple[int, StrPath, int, int]], prefilter: Prefilter | None, offset: int, number: int
) -> Generator[tuple[int, int, int, bytes]]:
    """``(index, line number, offset after the line, line)`` of each line of the batch's files
    that may match, in order; the first file from ``offset`` on (the start of line ``number``).

    The system's grep reads what it can: whole files, with a pre-filter. What it cannot (the
    rest of a file where a search stopped, a line too long for its memory limit, everything
    when it is missing or misbehaves) Python reads, a piece at a time.
    """
    rest = batch
    if offset or prefilter is None or not system_grep.available():
        if batch:
            index, _, fd, size = batch[0]
            for line_number, end, line in _python_lines(fd, size, prefilter, offset, number):
                yield index, line_number, end, line
        rest = batch[1:]
    if not rest:
        return
    run = None
    if prefilter is not None:
        words, extended = prefilter.grep_patterns()
        paths = [path for _, path, _, _ in rest]
        run = system_grep.start(paths, words, ignore_case=prefilter.ignore_case, extended=extended)
    if run is None:
        for index, _, fd, size in rest:
            for line_number, end, line in _python_lines(fd, size, prefilter, 0, 1):
                yield index, line_number, end, line
        return
    with run:
        for group in run.groups():
            position, offset, number = group.first, 0, 1
            for position, line_number, end, line in group.records():
                if line_number == 1:  # grep reads the first line with its BOM; Python strips it
                    line = line.removeprefix(codec.BOM)
                yield rest[position][0], line_number, end, line
                offset, number = end, line_number + 1
            if group.failed:  # the rest of its files, from its last line found on, in Python
                for index, _, fd, size in rest[position : group.end]:
                    for line_number, end, line in _python_lines(fd, size, prefilter, offset, number):
                        yield index, line_number, end, line
                    offset, number = 0, 1


def _python_lines(
    fd: int, size: int, prefilter: Prefilter | None, offset: int, number: int
) -> Iterator[tuple[int, int, bytes]]:
    """``(line number, offset after the line, line)`` of each line from ``offset`` (the start
    of line ``number``) to ``size`` that may match (every one without a pre-filter), in order.

    Read :data:`_PIECE` at a time: memory is a few pieces and the lines yielded. A line longer
    than a piece is looked at a piece at a time and read whole only if a part may match; one
    without a match is never held, so a hostile 300 MB line without a newline costs a piece.
    """
    keep = prefilter.longest - 1 if prefilter is not None else 0
    phrase = prefilter.may_hold_phrase if prefilter is not None else _any_line  # for a long line
    start = offset  # where the line being read starts
    held: bytes | None = b""  # its bytes so far, while fewer than a piece; None once longer
    matched = False  # for a long line: whether a part of it may match
    overlap = b""  # a long line's last bytes looked at: a word may span two pieces
    position = offset
    while position < size:
        piece = reads.read_range(fd, position, min(size, position + _PIECE))
        if not piece:
            break  # shorter than it was: search what there is
        base, position = position, position + len(piece)
        if held is None:
            newline = piece.find(b"\n")
            part = piece if newline < 0 else piece[:newline]
            if not matched:
                matched = prefilter is None or prefilter.may_match(overlap + part)
                overlap = (overlap + part[-keep:])[-keep:] if keep else b""
            if newline < 0:
                continue
            if matched and phrase(line := _line(fd, start, base + newline)):
                yield number, base + newline + 1, line
            number, start, held = number + 1, base + newline + 1, b""
            piece = piece[newline + 1 :]
        data = held + piece
        newline = data.rfind(b"\n")
        if newline >= 0:
            yield from _lines_in(data[: newline + 1], start, number, prefilter)
            number += data.count(b"\n", 0, newline + 1)
            start += newline + 1
            data = data[newline + 1 :]
        held = data
        if len(held) >= _PIECE:  # a long line: from here on looked at, not held
            matched = prefilter is None or prefilter.may_match(held)
            overlap = held[-keep:] if keep else b""
            held = None
    if held is None:
        if matched and phrase(line := _line(fd, start, position)):
            yield number, position + 1, line
    elif held:  # the last line, without its newline
        yield from _lines_in(held, start, number, prefilter)


def _lines_in(
    data: bytes, start: int, number: int, prefilter: Prefilter | None
) -> Iterator[tuple[int, int, bytes]]:
    """What :func:`_python_lines` yields for ``data``, whole lines from offset ``start`` (line ``number``)."""
    if prefilter is not None:
        for counted, at, line in prefilter.lines(data):
            yield number + counted - 1, start + at + len(line) + 1, _unmarked(line, start + at)
        return
    at = 0
    for line in data.split(b"\n"):
        if at < len(data):
            yield number, start + at + len(line) + 1, _unmarked(line, start + at)
        number += 1
        at += len(line) + 1


def _any_line(_line: bytes) -> bool:
    return True


def _line(fd: int, start: int, end: int) -> bytes:
    return _unmarked(reads.read_range(fd, start, end), start)


def _unmarked(line: bytes, start: int) -> bytes:
    """The line without a BOM, if it is the file's first (only that one is skipped)."""
    return line.removeprefix(codec.BOM) if start == 0 else line


def _items(lines: list[tuple[int, int, bytes]]) -> Iterator[tuple[int, int, dict[str, Any]]]:
    few = "orjson" not in sys.modules and sum(len(line) for *_, line in lines) < _FEW_BYTES
    loads = _loads_without_orjson if few else _orjson_loads()
    for index, number, line in lines:
        try:  # a blank line fails too: no codec.is_blank on every line
            item = loads(line)  # not codec.decode_line: exact huge ints do not matter to a search
        except ValueError:
            continue
        if isinstance(item, dict):
            yield index, number, item


_FEW_BYTES = 512 << 10
"""Candidate lines up to this size are decoded by :func:`_loads_without_orjson`: importing orjson
(~13 ms, with the dataclasses, inspect and uuid it loads) costs more than it saves on them."""


def _orjson_loads() -> Callable[[bytes], Any]:
    import orjson

    return orjson.loads


def _loads_without_orjson(line: bytes) -> Any:
    """What ``orjson.loads(line)`` gives, or the ``ValueError`` it raises, by the standard library.

    A rare word's search decodes a few lines: ``json`` imports in ~2 ms, orjson in ~13.
    ``json`` is held to orjson's rules: no ``NaN``, ``Infinity`` or float beyond the range,
    integers past 64 bits as floats, UTF-8 only. A line it cannot be sure of (a ``\\u`` escape
    may be a lone surrogate; nesting that reaches the recursion limit) goes to orjson itself.
    ``tests/tools/test_grep_bounded.py`` compares the two over the hostile-file corpus.
    """
    import json

    if b"\\u" in line:
        return _orjson_loads()(line)
    try:
        return json.loads(line.decode(), parse_constant=_no_constant, parse_float=_finite, parse_int=_int)
    except RecursionError:
        return _orjson_loads()(line)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if value in (_INFINITY, -_INFINITY):
        raise ValueError(f"{text[:20]} is out of range")
    return value


_INFINITY = float("inf")


def _int(text: str) -> int | float:
    value = int(text)
    return value if -(1 << 63) <= value < 1 << 64 else _finite(text)  # as orjson reads it


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
