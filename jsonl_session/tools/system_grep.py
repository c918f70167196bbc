"""Which lines of some files hold one of a few literal byte strings, found by the system's ``grep -F``.

``jsonl-session grep`` decodes only the lines whose raw bytes may match (``search.Prefilter``).
Python finds a word in bytes at about 2 GB/s and counts newlines (for line numbers) at about
3 GB/s, one pass after the other, on one CPU: ~50 ms over 60 MB here. ``grep -F`` does both in
one pass (~35 ms in one process), and the files are split between several greps, one per CPU.
So a search asks the system's grep first, and falls back to Python when there is none or it
fails.

It is spawned with ``os.posix_spawnp``, not :mod:`subprocess`, whose import alone costs about
twice the search. ``LC_ALL=C`` makes ``-i`` fold ASCII letters only, as ``bytes.lower`` does,
and ``-a`` reads bytes that are not text as text.

Example:
    >>> lines_containing(["sessions/a.jsonl"], [b"zanzibar"], ignore_case=False)  # doctest: +SKIP
    [[(8, b'{"role": "user", "content": "line 7 zanzibar"}')]]
"""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from ..core.safe_open import StrPath

DISABLE_VARIABLE = "JSONL_SESSION_PYTHON_GREP"
"""Set (to anything but empty) to search with Python only, for instance to compare the two."""

_unusable = False  # set once grep is missing or misbehaves: later searches go straight to Python


def lines_containing(
    paths: Sequence[StrPath], words: Sequence[bytes], *, ignore_case: bool
) -> list[list[tuple[int, bytes]]] | None:
    """For each path, ``(line number, line)`` of each line holding one of ``words``.

    None when there is no usable grep (the caller searches in Python). Lines are numbered
    from 1 as an editor shows them; a last line without its newline counts.
    The caller holds the files' locks while this runs.
    """
    global _unusable
    if not available() or not paths or not words:
        return None
    # -D skip: a FIFO or device put in a session's place is not read (it could block forever)
    arguments = ["grep", "-F", "-H", "-n", "-a", "-D", "skip", "--null", "--color=never"]
    if ignore_case:
        arguments.append("-i")
    for word in words:
        arguments += ["-e", os.fsdecode(word)]
    names = [os.fsencode(path) for path in paths]
    unique = list(dict.fromkeys(names))  # grep reports a file named twice twice
    found: dict[bytes, list[tuple[int, bytes]]] | None = {}
    greps: list[_Grep] = []
    try:
        for group in _groups(unique, min(os.cpu_count() or 1, MAX_PROCESSES)):
            greps.append(_Grep([*arguments, "--", *map(os.fsdecode, group)], group))
        for grep in greps:
            parsed = _parse(grep.output(), grep.names)  # grep's output is freed once parsed
            if parsed is None or found is None:
                found = None
                continue
            found.update(parsed)
    except OSError:  # no grep on PATH, or no process or pipe to spare
        found = None
    finally:
        for grep in greps:
            grep.close()
    if found is None:
        _unusable = True
        return None
    return [found[name] for name in names]


MAX_PROCESSES = 4
"""Files are split between up to this many greps (no more than the CPUs), which run at once."""


def _groups(names: list[bytes], count: int) -> list[list[bytes]]:
    """``names`` in ``count`` runs of about equal length, in order."""
    size = -(-len(names) // count)
    return [names[start : start + size] for start in range(0, len(names), size)]


class _Grep:
    """One running ``grep``: its output and its messages a pipe to us, its input ``/dev/null``."""

    def __init__(self, arguments: list[str], names: list[bytes]) -> None:
        self.names = names
        self.pid = 0
        read_end, write_end = os.pipe()
        self.read_end = read_end
        environment = {"LC_ALL": "C", "PATH": os.environ.get("PATH", os.defpath)}
        try:
            self.pid = os.posix_spawnp(
                "grep",
                arguments,
                environment,
                file_actions=[
                    (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                    (os.POSIX_SPAWN_DUP2, write_end, 1),
                    # Its messages go into the same pipe: one breaks the output's format, so a
                    # grep that refuses an option but exits 1 ("no match") is not believed.
                    (os.POSIX_SPAWN_DUP2, write_end, 2),
                ],
                setsigdef=(signal.SIGPIPE,),  # Python ignores it; grep should die of it, as in a shell
            )
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)

    def output(self) -> bytearray | None:
        """All it prints, once it has ended; None if it reported an error (status 2)."""
        output = bytearray()  # grown in place: no list of pieces joined into a second copy
        while piece := os.read(self.read_end, 1 << 20):
            output += piece
        pid, self.pid = self.pid, 0
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:  # SIGCHLD is ignored: the child was reaped, its status is lost
            return None
        return output if os.waitstatus_to_exitcode(status) in (0, 1) else None

    def close(self) -> None:
        """Close our end; a grep that has not ended (we were interrupted) is stopped and reaped."""
        if self.read_end >= 0:
            os.close(self.read_end)
            self.read_end = -1
        if self.pid:
            pid, self.pid = self.pid, 0
            try:
                os.kill(pid, signal.SIGTERM)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):  # already gone, or reaped for us
                pass


def available() -> bool:
    """Whether a search should try the system's grep (it may still turn out unusable)."""
    return not _unusable and not os.environ.get(DISABLE_VARIABLE)


def _parse(output: bytearray | None, names: list[bytes]) -> dict[bytes, list[tuple[int, bytes]]] | None:
    """``name NUL number : line`` records, grouped by file; None if a record is not of that shape.

    Offsets into a view, not ``split``: only the lines are copied out, so a batch of
    candidate lines is held about twice (grep's output and the lines), not four times.
    """
    if output is None:
        return None
    found: dict[bytes, list[tuple[int, bytes]]] = {name: [] for name in names}
    view = memoryview(output)
    position, size = 0, len(output)
    while position < size:  # every record ends with a newline, the last one too
        end = output.find(b"\n", position)
        nul = output.find(b"\0", position, end)
        colon = output.find(b":", nul, end)
        lines = found.get(bytes(view[position:nul])) if nul >= 0 else None
        number = bytes(view[nul + 1 : colon])
        if end < 0 or colon < 0 or lines is None or not number.isdigit():
            return None  # not the grep we know: trust Python instead
        lines.append((int(number), bytes(view[colon + 1 : end])))
        position = end + 1
    return found
