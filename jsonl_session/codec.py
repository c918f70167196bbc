"""Items <-> lines: the one place that decides what a line on disk looks like.

A line is an item serialised by orjson (UTF-8 as-is, keys in the order given, no spaces),
followed by ``\\n``. Serialising the same item twice gives the same bytes, so re-recording
an unchanged conversation produces no git diff.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ._lazy import OnFirstUse
from .errors import ItemNotStorableError

if TYPE_CHECKING:
    import orjson
else:  # imported on first use: `jsonl-session ls` only counts lines (see _lazy.py)
    orjson = OnFirstUse("orjson", globals())

BOM = b"\xef\xbb\xbf"
# orjson reads integers beyond 64 bits as floats, silently; lines with a run of 19+ digits
# take the exact (slower) path through the standard library instead. Mapping digits to "0"
# and everything else to " " and then searching for the run is ~10x faster than a regex.
_DIGIT_MASK = bytes(48 if 48 <= byte <= 57 else 32 for byte in range(256))
_LONG_DIGIT_RUN = b"0" * 19
_CHECK_PIECE = 16 * 1024


def encode_items(items: Iterable[Any]) -> bytes:
    """Serialise items to newline-terminated lines, refusing anything that would not read back equal.

    orjson writes NaN and Infinity as ``null``, turns datetimes, dataclasses and UUIDs
    into strings and tuples into lists; reading the line back and comparing catches all of
    those in C, at about the cost of one more parse.

    Example:
        >>> encode_items([{"role": "user", "content": "héllo"}])
        b'{"role":"user","content":"h\\xc3\\xa9llo"}\\n'
    """
    if isinstance(items, (dict, str, bytes)):
        raise TypeError("add_items() takes a list of items, not a single item")
    lines = [_encode_item(index, item) for index, item in enumerate(items)]
    if len(lines) == 1:
        return lines[0] + b"\n"
    return b"\n".join(lines) + b"\n" if lines else b""


def _encode_item(index: int, item: Any) -> bytes:
    if type(item) is not dict:
        raise ItemNotStorableError(index, f"an item must be a dict, not {type(item).__name__}")
    try:
        line = orjson.dumps(item)
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
    return decode_line if has_long_digit_run(data) else orjson.loads


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

    def __enter__(self) -> None:
        self._was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc_info: object) -> None:
        if self._was_enabled:
            gc.enable()


def _decode_exact(line: bytes) -> Any:
    """The standard library's parser (exact big integers), held to orjson's rules otherwise.

    Given bytes, ``json.loads`` guesses UTF-16 or -32 from NUL bytes; it also accepts a BOM,
    ``1e400`` (as inf) and lone surrogate escapes, and raises RecursionError (not a
    ValueError) on deep nesting. The hostile-file corpus found each of these
    (tests/corpus/*_with_long_number.jsonl).
    """
    try:
        import json  # the slow, exact path (long numbers); most files never take it

        value = json.loads(line.decode("utf-8"), parse_constant=_reject_constant, parse_float=_finite)
        json.dumps(value, ensure_ascii=False).encode("utf-8")  # raises on a lone surrogate
    except RecursionError:
        raise ValueError("nested too deeply") from None
    return value


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:20]} is out of range for a float")
    return value


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _why_not_storable(item: Any) -> str | None:
    """Find the first value that cannot be stored exactly, and say where it is (for the error)."""
    for path, value in _walk(item, "item"):
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


def _walk(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    yield path, value
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _walk(child, f"{path}[{key!r}]")
    elif isinstance(value, (list, tuple)):
        for index, child in enumerate(value):
            yield from _walk(child, f"{path}[{index}]")
