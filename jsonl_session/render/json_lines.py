"""JSON Lines for output (``--json``): one value per line, whatever a reader accepted.

The CLI writes its ``--json`` output through these rather than the codec, so that it needs
nothing below this layer. The bytes are the codec's (``codec.dumps_any``): orjson's compact
JSON, falling back to an encoder that also writes integers beyond 64 bits and items nested
deeper than orjson writes.

Example:
    >>> json_line({"id": "convo", "n": 2**70})
    b'{"id":"convo","n":1180591620717411303424}\\n'
"""

from __future__ import annotations

from collections.abc import Iterable

from ..core.codec import dumps_any

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from typing import Any


def json_line(value: Any) -> bytes:
    """``value`` as one line of compact JSON, newline included."""
    return dumps_any(value) + b"\n"


def json_lines(values: Iterable[Any]) -> bytes:
    """Each of ``values`` as one line of compact JSON."""
    return b"".join(dumps_any(value) + b"\n" for value in values)
