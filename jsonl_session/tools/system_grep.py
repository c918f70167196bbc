"""Which lines of some files hold one of a few literal byte strings, found by the system's ``grep -F``.

``jsonl-session grep`` decodes only the lines whose raw bytes may match (``grep.Prefilter``).
Python finds a word in bytes at about 2 GB/s and counts newlines (for line numbers) at about
3 GB/s, one pass after the other, on one CPU: ~50 ms over 60 MB here. ``grep -F`` does both in
one pass (~35 ms in one process), and the files are split between several greps, one per CPU.
So a search asks the system's grep first, and searches in Python what grep could not.

Memory stays bounded on both sides. Each grep's output is read and parsed a piece at a time, as
it comes, and the caller may stop reading (the greps are then stopped). ``grep`` itself holds
the whole line it is reading, even one without the word, so a 300 MB line without a newline
would cost it 600 MB: each grep runs with its data segment limited to :data:`DATA_LIMIT`
(``ulimit -d``), dies of "memory exhausted" on such a line, and its group reports where it
stopped (:attr:`Group.failed`), for the caller to search the rest of those files in Python.

It is spawned with ``os.posix_spawn``, not :mod:`subprocess`, whose import alone costs about
twice the search; ``/bin/sh`` sets the limit, then becomes the grep. ``LC_ALL=C`` makes ``-i``
fold ASCII letters only, as ``bytes.lower`` does, and ``-a`` reads bytes that are not text as
text. Its messages go to a pipe of their own: a grep that refuses an option but exits 1 ("no
match"), as an old busybox does, is not believed.

Example:
    >>> run = start(["sessions/a.jsonl"], [b"zanzibar"], ignore_case=False)  # doctest: +SKIP
    >>> [list(group.records()) for group in run.groups()]  # doctest: +SKIP
    [[(0, 8, 412, b'{"role": "user", "content": "line 7 zanzibar"}')]]
"""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Iterator, Sequence

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from ..core.safe_open import StrPath

DISABLE_VARIABLE = "JSONL_SESSION_PYTHON_GREP"
"""Set (to anything but empty) to search with Python only, for instance to compare the two."""

DATA_LIMIT = 32 << 20
"""Bytes of data one grep may allocate: lines up to ~15 MB are searched by grep, longer ones
(which it would hold whole, twice) by Python, a piece at a time."""

MAX_PROCESSES = 4
"""Files are split between up to this many greps (no more than the CPUs), which run at once."""

_PIECE = 1 << 20  # bytes of a grep's output read at once
# name NUL number : offset : line, as -H -n -b --null print it (one regex match is ~2x faster
# than finding each separator)
_RECORD = re.compile(rb"([^\0\n]*)\0([0-9]+):([0-9]+):([^\n]*)\n")
_OUT_OF_MEMORY = b"memory exhausted"
_SHELL = "/bin/sh"
# "$0" is grep: the limit is set before it starts, so it holds from its first byte
_LIMITED = 'ulimit -d {kib} || exit 2; exec "$0" "$@"'

_unusable = False  # set once grep is missing or misbehaves: later searches go straight to Python


def available() -> bool:
    """Whether a search should try the system's grep (it may still turn out unusable)."""
    return not _unusable and not os.environ.get(DISABLE_VARIABLE)


def start(
    paths: Sequence[StrPath], words: Sequence[bytes], *, ignore_case: bool, extended: bool = False
) -> Run | None:
    """Greps over ``paths`` for the lines holding one of ``words``, started; None when there is
    no usable grep (the caller searches in Python). ``extended``: the words are extended
    regular expressions (``grep -E``), not literals. The caller holds the files' locks until
    it has closed the run, and must close it (``with``)."""
    global _unusable
    if not available() or not paths or not words:
        return None
    # -D skip: a FIFO or device put in a session's place is not read (it could block forever)
    kind = "-E" if extended else "-F"
    arguments = ["grep", kind, "-H", "-n", "-b", "-a", "-D", "skip", "--null", "--color=never"]
    if ignore_case:
        arguments.append("-i")
    for word in words:
        arguments += ["-e", os.fsdecode(word)]
    names = [os.fsencode(path) for path in paths]
    run = Run()
    try:
        for first, end in _groups(len(names), min(os.cpu_count() or 1, MAX_PROCESSES)):
            run.add(Group([*arguments, "--", *map(os.fsdecode, names[first:end])], names, first, end))
    except OSError:  # no shell or grep, or no process or pipe to spare
        run.close()
        _unusable = True
        return None
    return run


def _groups(count: int, processes: int) -> list[tuple[int, int]]:
    """``range(count)`` in ``processes`` runs of about equal length, in order, as (first, end)."""
    size = -(-count // processes)
    return [(first, min(count, first + size)) for first in range(0, count, size)]


class Run:
    """The greps of one search, running at once; read one group after the other, in order."""

    def __init__(self) -> None:
        self._groups: list[Group] = []

    def add(self, group: Group) -> None:
        self._groups.append(group)

    def groups(self) -> Iterator[Group]:
        return iter(self._groups)

    def close(self) -> None:
        """Stop and reap every grep not yet ended (the caller stopped reading), close the pipes."""
        for group in self._groups:
            group.close()

    def __enter__(self) -> Run:  # noqa: PYI034  (Self needs 3.11)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class Group:
    """One running grep over ``names[first:end]``: its output a pipe to us, its messages another."""

    def __init__(self, arguments: list[str], names: list[bytes], first: int, end: int) -> None:
        self.first = first
        self.end = end
        self.failed = False
        """Set once :meth:`records` has ended early: grep failed (or ran out of its memory) after
        the records it gave, which are right; the rest of its files are for the caller to search."""
        # A file named twice is read twice, in turn: each name answers for one reading.
        self._positions: dict[bytes, list[int]] = {}
        for position, name in enumerate(names[first:end], first):
            self._positions.setdefault(name, []).append(position)
        self.pid = 0
        self._out = self._err = -1
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        self._out, self._err = out_read, err_read
        environment = {"LC_ALL": "C", "PATH": os.environ.get("PATH", os.defpath)}
        try:
            self.pid = os.posix_spawn(
                _SHELL,
                [_SHELL, "-c", _LIMITED.format(kib=DATA_LIMIT >> 10), *arguments],
                environment,
                file_actions=[
                    (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                    (os.POSIX_SPAWN_DUP2, out_write, 1),
                    (os.POSIX_SPAWN_DUP2, err_write, 2),
                ],
                setsigdef=(signal.SIGPIPE,),  # Python ignores it; grep should die of it, as in a shell
            )
        except BaseException:
            self.close()
            raise
        finally:
            os.close(out_write)
            os.close(err_write)

    def records(self) -> Iterator[tuple[int, int, int, bytes]]:
        """``(position in names, line number, offset after the line, line)`` of each line found,
        in order, as grep prints them; lines are numbered from 1 as an editor shows them (a last
        line without its newline counts). Ends with :attr:`failed` set if grep did not finish
        well: a message, an error status, or output not of its shape (then it is not trusted
        again)."""
        pending = bytearray()
        position, name, last = -1, b"", 0
        readings: dict[bytes, int] = {}  # how many times each file was begun
        match = _RECORD.match
        while piece := os.read(self._out, _PIECE):
            pending += piece
            if b"\n" not in piece:
                continue  # a long line still coming: parsed once it has ended, not at every piece
            start, size = 0, len(pending)
            while start < size:
                record = match(pending, start)
                if record is None:
                    if pending.find(b"\n", start) >= 0:  # an ended line that is not a record
                        self._fail(misbehaved=True)
                        return
                    break
                file, number, offset, line = record.groups()
                at = int(number)
                # grep reads its files in order: a new one, or the same one named again (its
                # line numbers start over)
                if file != name or at <= last:
                    name, began = file, readings.get(file, 0)
                    positions = self._positions.get(file, ())
                    if began >= len(positions):
                        self._fail(misbehaved=True)
                        return
                    position, readings[file] = positions[began], began + 1
                last = at
                yield position, at, int(offset) + len(line) + 1, line
                start = record.end()
            del pending[:start]  # the record not yet ended stays, even one longer than a piece
        messages = os.read(self._err, 1 << 16)  # a few lines at most: one per file it could not read
        status = self._wait()
        if pending or messages or status not in (0, 1):
            self._fail(misbehaved=_OUT_OF_MEMORY not in messages)

    def _fail(self, *, misbehaved: bool) -> None:
        global _unusable
        self.failed = True
        _unusable = _unusable or misbehaved
        self.close()

    def _wait(self) -> int | None:
        pid, self.pid = self.pid, 0
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:  # SIGCHLD is ignored: the child was reaped, its status is lost
            return None
        return os.waitstatus_to_exitcode(status)

    def close(self) -> None:
        """Close our ends; a grep that has not ended (we stopped reading) is stopped and reaped."""
        for fd in (self._out, self._err):
            if fd >= 0:
                os.close(fd)
        self._out = self._err = -1
        if self.pid:
            pid, self.pid = self.pid, 0
            try:
                os.kill(pid, signal.SIGTERM)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):  # already gone, or reaped for us
                pass
