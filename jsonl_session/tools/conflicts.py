"""Git merge conflict markers: what they look like, and where a merge left them beside a session.

A text merge of two histories writes ``<<<<<<<``, ``=======`` and ``>>>>>>>`` lines into the
session file and into every sidecar both sides changed (two branches that each add to a
session both append to its ``.times``). Readers of a sidecar skip what they cannot parse, so
a marker there goes unnoticed unless ``check`` looks for it; ``jsonl-session git-setup`` keeps
every kind whole on merge so it does not happen (docs/workflows.md).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from ..core.names import KINDS, TORN_SUFFIX
from ..core.safe_open import open_regular
from ..core.scanner import is_conflict_marker

is_marker = is_conflict_marker
"""Whether a line (without its newline) is a conflict marker line: ``core.scanner``'s rule."""

ADVICE = "resolve the merge, then edit"

_PIECE = 1 << 20  # a sidecar is read a megabyte at a time: a huge one costs no more memory
_HEAD = 8  # only a line's first bytes tell a marker


def marker_reason(line: bytes) -> str:
    """What ``check`` says of a marker line."""
    return f"git merge conflict marker {line[:7].decode()!r}: {ADVICE}"


def sidecar_paths(session_path: Path) -> list[Path]:
    """Every file a merge may have touched beside the session: each sidecar kind, each ``.torn``."""
    name = session_path.name
    suffixes = [TORN_SUFFIX, *(suffix for kind in KINDS for suffix in (kind, kind + TORN_SUFFIX))]
    return [session_path.with_name(name + suffix) for suffix in suffixes]


def sidecar_markers(session_path: Path) -> Iterator[tuple[Path, int, str]]:
    """``(sidecar, line, reason)`` for every conflict marker line in the session's sidecars.

    Read a piece at a time, keeping only the first bytes of each line; a sidecar that is not a
    regular file (or cannot be read) is left to the checks that read it.
    """
    for path in sidecar_paths(session_path):
        try:
            opened = open_regular(path)
        except OSError:
            continue
        if opened is None:
            continue
        fd = opened[0]
        try:
            yield from ((path, number, reason) for number, reason in _markers(fd))
        except OSError:
            continue
        finally:
            os.close(fd)


def _markers(fd: int) -> Iterator[tuple[int, str]]:
    number, head, position = 1, b"", 0  # head: the current line's first _HEAD bytes
    while True:
        piece = os.pread(fd, _PIECE, position)
        if not piece:
            break
        position += len(piece)
        lines = piece.split(b"\n")
        for line in lines[:-1]:
            head += line[: _HEAD - len(head)]
            if is_marker(head):
                yield number, marker_reason(head)
            number, head = number + 1, b""
        head += lines[-1][: _HEAD - len(head)]
    if head and is_marker(head):
        yield number, marker_reason(head)
