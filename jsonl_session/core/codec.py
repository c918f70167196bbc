"""Items <-> lines: the one place that decides what a line on disk looks like.

A line is an item serialised by orjson (UTF-8 as-is, keys in the order given, no spaces),
followed by ``\\n``. Serialising the same item twice gives the same bytes, so re-recording
an unchanged conversation produces no git diff.

Nesting has two limits, both orjson's (docs/format.md, "Nesting"): an item is written only
if it nests at most :data:`MAX_DEPTH` containers deep, the item itself counting as one; a
line is read if it nests at most :data:`MAX_READ_DEPTH`. Lines in between (written by hand
or by another tool) are read, shown and searched, but cannot be written back; nothing here
recurses in Python, so no depth ever raises ``RecursionError``.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Callable, Iterable, Iterator

from .deferred_imports import OnFirstUse
from .errors import ItemNotStorableError

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    import json
    from typing import Any

    import orjson
else:  # imported on first use: `jsonl-session ls` only counts lines (see core/deferred_imports.py)
    json = OnFirstUse("json", globals())
    orjson = OnFirstUse("orjson", globals())

BOM = b"\xef\xbb\xbf"
# orjson reads integers beyond 64 bits as floats, silently; lines with a run of 19+ digits
# take the exact (slower) path through the standard library instead. Mapping digits to "0"
# and everything else to " " and then searching for the run is ~10x faster than a regex.
_DIGIT_MASK = bytes(48 if 48 <= byte <= 57 else 32 for byte in range(256))
_LONG_DIGIT_RUN = b"0" * 19
_CHECK_PIECE = 16 * 1024

MAX_DEPTH = 254
"""The deepest item orjson writes: containers nested, the item itself counting as level 1."""
MAX_READ_DEPTH = 1024
"""The deepest line orjson reads; a deeper one is not valid JSON to every reader here."""
_PATH_SHOWN = 6  # segments of a deep item's path named in an error (the rest is "…")


def encode_items(items: Iterable[Any]) -> bytes:
    """Serialise items to newline-terminated lines, refusing anything that would not read back equal.

    orjson writes NaN and Infinity as ``null``, turns datetimes, dataclasses and UUIDs
    into strings and tuples into lists; reading the line back and comparing catches all of
    those in C, at about the cost of one more parse.

    Example:
        >>> encode_items([{"role": "user", "content": "héllo"}])
        b'{"role":"user","content":"h\\xc3\\xa9llo"}\\n'
    """
    if type(items) is list and len(items) == 1 and type(items[0]) is dict:
        # The Runner's usual call, done in this one function (in a busy process each Python
        # call costs about 1 µs). On any doubt, _encode_item below says what is wrong.
        item = items[0]
        try:
            line = orjson.dumps(item, option=orjson.OPT_APPEND_NEWLINE)
        except TypeError:
            pass
        else:
            if orjson.loads(line) == item:
                return line
    if isinstance(items, (dict, str, bytes)):
        raise TypeError("add_items() takes a list of items, not a single item")
    newline = orjson.OPT_APPEND_NEWLINE
    return b"".join([_encode_item(index, item, newline) for index, item in enumerate(items)])


def encoding_or_none(items: Iterable[Any]) -> bytes | None:
    """The items as :func:`encode_items` would write them, or None if they cannot be (e.g.
    hand-edited huge ints): what a rewrite compares its result with, to skip writing equal bytes."""
    try:
        return encode_items(items)
    except ValueError:
        return None


def encode_lines(items: Iterable[Any]) -> list[bytes]:
    """Each item's line *without* its newline, refused as :func:`encode_items` refuses: for a
    caller that needs the lines apart (``item_times`` fingerprints each one before they are
    joined, which costs less than splitting the joined payload again).

    Example:
        >>> encode_lines([{"a": 1}, {"b": 2}])
        [b'{"a":1}', b'{"b":2}']
    """
    if isinstance(items, (dict, str, bytes)):
        raise TypeError("add_items() takes a list of items, not a single item")
    return [_encode_item(index, item, 0) for index, item in enumerate(items)]


def _encode_item(index: int, item: Any, option: int) -> bytes:
    """One item's line, with its newline if ``option`` says so (orjson reads it as whitespace)."""
    if type(item) is not dict:
        raise ItemNotStorableError(index, f"an item must be a dict, not {type(item).__name__}")
    try:
        line = orjson.dumps(item, option=option)
    except TypeError as exc:  # orjson.JSONEncodeError subclasses TypeError
        raise ItemNotStorableError(index, _why_not_storable(item) or str(exc)) from None
    if orjson.loads(line) != item:
        raise ItemNotStorableError(
            index, _why_not_storable(item) or "it does not read back equal to what was given"
        )
    return line


def decode_line(line: bytes) -> Any:
    """Parse one line's bytes (no newline) into a Python value; raises ``ValueError``.

    Integers beyond 64 bits come back exact rather than as rounded floats.
    """
    if has_long_digit_run(line):
        return _decode_exact(line)
    return orjson.loads(line)


def decoder_for(data: bytes) -> Callable[[bytes], Any]:
    """The line parser to use for every line in ``data``: plain orjson unless a long number is there.

    Checking a whole block at once costs a fraction of checking line by line.
    """
    return decoder(long_numbers=has_long_digit_run(data))


def decoder(*, long_numbers: bool) -> Callable[[bytes], Any]:
    """Plain orjson, or the exact parser when the lines may hold 19+ digit numbers."""
    return decode_line if long_numbers else orjson.loads


def has_long_digit_run(data: bytes) -> bool:
    """True if ``data`` holds 19+ digits in a row (a number orjson might not read exactly).

    Checked in 16 KiB pieces that overlap by 18 bytes: each piece's translation stays in the
    CPU cache, which makes a 45 MB file's check almost twice as fast as one translation.
    """
    size = len(data)
    if size <= _CHECK_PIECE:
        return _LONG_DIGIT_RUN in data.translate(_DIGIT_MASK)
    overlap = len(_LONG_DIGIT_RUN) - 1
    for start in range(0, size, _CHECK_PIECE):
        if _LONG_DIGIT_RUN in data[start : start + _CHECK_PIECE + overlap].translate(_DIGIT_MASK):
            return True
    return False


def is_blank(line: bytes) -> bool:
    """Blank lines (spaces, tabs, a stray ``\\r``) are allowed and skipped."""
    return not line.strip()


class gc_paused:  # lower case: it reads like the function it replaces, ``with gc_paused():``
    """Pause the cyclic GC while decoding many lines.

    Every new dict counts as an allocation; with the GC on, reading 100,000 items re-scans
    the growing list again and again and costs several times the parse itself. A class, not
    ``@contextmanager``: measured, the generator-based version made a 100,000-line read
    ~70 ms (30 %) slower.
    """

    def __init__(self, *, young_collection_after: bool = False) -> None:
        self._collect = young_collection_after

    def __enter__(self) -> None:
        self._was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc_info: object) -> None:
        if self._was_enabled:
            gc.enable()
            if self._collect:
                # Collect what this pause allocated now, in a piece proportional to it,
                # rather than in one long pass over everything at the next allocation.
                gc.collect(1)


def _decode_exact(line: bytes) -> Any:
    """The standard library's parser (exact big integers), held to orjson's rules otherwise.

    Given bytes, ``json.loads`` guesses UTF-16 or -32 from NUL bytes; it also accepts a BOM,
    ``1e400`` (as inf) and lone surrogate escapes, and raises RecursionError (not a
    ValueError) on deep nesting. The hostile-file corpus found each of these
    (tests/corpus/*_with_long_number.jsonl).
    """
    try:
        value = json.loads(line.decode("utf-8"), parse_constant=_reject_constant, parse_float=_finite)
        json.dumps(value, ensure_ascii=False).encode("utf-8")  # raises on a lone surrogate
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if depth_of(value) > MAX_READ_DEPTH:  # the stdlib's limit follows sys.setrecursionlimit
        raise ValueError(f"nested more than {MAX_READ_DEPTH} levels deep")
    return value


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:20]} is out of range for a float")
    return value


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def depth_of(value: Any) -> int:
    """How many containers deep ``value`` nests (a scalar is 0, ``[]`` is 1), without recursing.

    Example:
        >>> depth_of({"role": "user", "content": [{"type": "input_text", "text": "hi"}]})
        3
    """
    deepest = 0
    stack = [(value, 1)]
    while stack:
        current, depth = stack.pop()
        if isinstance(current, dict):
            children: Iterable[Any] = current.values()
        elif isinstance(current, (list, tuple)):
            children = current
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list, tuple)))
    return deepest


def identical(first: Any, second: Any) -> bool:
    """True if two decoded values are the same JSON, type for type (``1`` is not ``1.0``), without recursing.

    ``==`` recurses in C and raised ``RecursionError`` comparing 1,000-deep items.

    Example:
        >>> identical({"a": [1]}, {"a": [1]}), identical({"a": [1]}, {"a": [1.0]})
        (True, False)
    """
    pairs = [(first, second)]
    while pairs:
        left, right = pairs.pop()
        if type(left) is not type(right):
            return False
        if isinstance(left, dict):
            if list(left) != list(right):
                return False
            pairs.extend((left[key], right[key]) for key in left)
        elif isinstance(left, list):
            if len(left) != len(right):
                return False
            pairs.extend(zip(left, right))
        elif left != right:
            return False
    return True


def dumps_any(value: Any) -> bytes:
    """JSON for any value a reader returned, for output (``show --json``, ``tail -f --json``).

    orjson for everything it can write; an item nested deeper than it writes, or holding an
    integer beyond 64 bits (read exactly from a hand-edited line), goes through a small
    iterative encoder instead, so printing never fails on a line that reading accepted.

    Example:
        >>> dumps_any({"n": 2**70})
        b'{"n":1180591620717411303424}'
    """
    try:
        return orjson.dumps(value)
    except TypeError:
        return _dumps_iteratively(value).encode()


def _dumps_iteratively(value: Any) -> str:
    parts: list[str] = []
    # A stack of things still to write: values, and the literal text between them.
    stack: list[tuple[bool, Any]] = [(False, value)]
    while stack:
        is_text, current = stack.pop()
        if is_text:
            parts.append(current)
        elif isinstance(current, dict):
            pending: list[tuple[bool, Any]] = [(True, "{")]
            for index, (key, child) in enumerate(current.items()):
                pending.append(
                    (True, ("," if index else "") + json.dumps(str(key), ensure_ascii=False) + ":")
                )
                pending.append((False, child))
            pending.append((True, "}"))
            stack.extend(reversed(pending))
        elif isinstance(current, (list, tuple)):
            pending = [(True, "[")]
            for index, child in enumerate(current):
                if index:
                    pending.append((True, ","))
                pending.append((False, child))
            pending.append((True, "]"))
            stack.extend(reversed(pending))
        else:
            try:
                parts.append(orjson.dumps(current).decode())
            except TypeError:
                parts.append(json.dumps(current, ensure_ascii=False, default=repr))
    return "".join(parts)


def _why_not_storable(item: Any) -> str | None:
    """Find the first value that cannot be stored exactly, and say where it is (for the error)."""
    for path, value in _walk(item):
        if path is None:  # nested too deeply: ``value`` says where
            return str(value)
        if isinstance(value, tuple):
            return f"{path} is a tuple, which would read back as a list"
        if isinstance(value, float) and not math.isfinite(value):
            return f"{path} is {value!r}, which JSON cannot represent (orjson would write null)"
        if type(value) is int and not -(2**63) <= value < 2**64:
            return f"{path} is an integer beyond 64 bits, which orjson cannot write exactly"
        if type(value) is dict:
            for key in value:
                if type(key) is not str:
                    return f"{path} has a key {key!r} that is not a str"
        elif type(value) not in (list, str, int, float, bool, type(None)):
            return f"{path} is a {type(value).__name__}, which JSON cannot represent exactly"
    return None


def _walk(item: Any) -> Iterator[tuple[str | None, Any]]:
    """Every value in ``item`` with its path, depth first, without recursing.

    Stops with ``(None, reason)`` at the first container nested deeper than orjson
    writes, so a 10,000-deep or self-referencing item cannot raise ``RecursionError`` here
    (tests/render/test_hostile_content.py). Paths are built only for values actually yielded, from
    a chain of (segment, parent) links, so a deep item costs no quadratic string building.
    """
    stack: list[tuple[Any, int, Any]] = [(item, 1, None)]  # value, depth, link = (segment, parent link)
    while stack:
        value, depth, link = stack.pop()
        container = isinstance(value, (dict, list, tuple))
        if container and depth > MAX_DEPTH:
            yield None, _too_deep(value, link)
            return
        yield _path(link), value
        if isinstance(value, dict):
            children = [(f"[{key!r}]", child) for key, child in value.items()]
        elif isinstance(value, (list, tuple)):
            children = [(f"[{index}]", child) for index, child in enumerate(value)]
        else:
            continue
        stack.extend((child, depth + 1, (segment, link, value)) for segment, child in reversed(children))


def _too_deep(value: Any, link: Any) -> str:
    where = _path(link)
    ancestors = []
    while link is not None:
        ancestors.append(link[2])
        link = link[1]
    if any(ancestor is value for ancestor in ancestors):
        return f"{where} contains itself (a reference cycle), which JSON cannot represent"
    return f"{where} is nested more than {MAX_DEPTH} levels deep, the most orjson writes (docs/format.md)"


def _path(link: Any) -> str:
    segments = []
    while link is not None:
        segments.append(link[0])
        link = link[1]
    segments.reverse()
    if len(segments) > _PATH_SHOWN:  # a path 255 levels long would drown the message
        return "item" + "".join(segments[:_PATH_SHOWN]) + f"…({len(segments) - _PATH_SHOWN} more)"
    return "item" + "".join(segments)
