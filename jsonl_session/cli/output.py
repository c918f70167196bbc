"""What every command prints, and how a command fails: the CLI's shared output.

Output meant for scripts is JSON Lines (``--json``); colour is used only on a terminal and
never when ``NO_COLOR`` is set. Messages for the person at the terminal go to stderr, one line
each, control characters escaped. A command fails by raising :class:`Failure` (exit 1) or
:class:`UsageError` (exit 2); ``commands.main`` prints it as one line.
"""

from __future__ import annotations

import os
import sys

from ..render.terminal_text import printable
from .parser import PROG

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    import argparse
    from typing import IO, Any

    from ..render.item_text import Style

# The item renderer and the codec are imported by the functions that print items: ``ls`` prints
# none, and its start-up is mostly imports (benchmarks/startup.py).


class Failure(Exception):
    """The operation could not be done; the message is printed as one line and the exit code is 1."""


class UsageError(Failure):
    """The command line itself is wrong (a bad pattern, say): one line, exit code 2."""


def print_items(args: argparse.Namespace, items: list[Any], *, first: int | None = None) -> None:
    """Items as a transcript (numbered from ``first``, if given), or as JSON Lines with ``--json``."""
    if args.json:
        from ..core.codec import dumps_any

        sys.stdout.buffer.write(b"".join(dumps_any(item) + b"\n" for item in items))
        sys.stdout.flush()
        return
    from ..render.item_text import render

    style = style_for(sys.stdout)
    for offset, item in enumerate(items):
        number = None if first is None else first + offset
        print(render(item, number=number, style=style))


def print_json(value: Any) -> None:
    """One JSON line on stdout."""
    from ..core.codec import dumps_any

    sys.stdout.buffer.write(dumps_any(value) + b"\n")


def style_for(stream: IO[str]) -> Style:
    """Colour on a terminal, unless ``NO_COLOR`` is set."""
    from ..render.item_text import Style

    return Style(stream.isatty() and "NO_COLOR" not in os.environ)


def note(message: str) -> None:
    """One line for the person at the terminal (stderr), control characters escaped."""
    print(printable(message), file=sys.stderr)


def error(message: str) -> None:
    """``jsonl-session: error: message`` on stderr."""
    note(f"{PROG}: error: {message}")


def skip_warning(exc: BaseException) -> None:
    """A session that could not be read and was left out: ``jsonl-session: warning: ...; skipped``."""
    note(f"{PROG}: warning: {message(exc)}; skipped")


def message(exc: BaseException) -> str:
    """An exception as one line: an OSError as ``file: reason``, never an empty string."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    if isinstance(exc, FileExistsError | FileNotFoundError) and not str(exc):
        return type(exc).__name__
    return str(exc) or type(exc).__name__


def confirm(question: str, *, default: bool = False) -> bool:
    """Ask on stderr and read the answer from stdin: Enter means the default, end of input means no."""
    sys.stderr.write(f"{question} [{'Y/n' if default else 'y/N'}] ")
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:  # nobody to answer (stdin closed or /dev/null): never assume yes
        sys.stderr.write("\n")
        return False
    answer = line.strip().lower()
    return default if not answer else answer in ("y", "yes")


def confirm_or_fail(question: str, refused: str, command: str) -> None:
    """Ask; a no fails (exit 1), and no answer at all (no terminal, stdin at its end) names ``--yes``."""
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:
        sys.stderr.write("\n")
        raise UsageError(f"{refused}: no answer on stdin; add --yes to {command} without a question")
    if line.strip().lower() not in ("y", "yes"):
        raise Failure(refused)


def plural(count: int) -> str:
    """``"s"`` unless ``count`` is 1: ``f"{n} item{plural(n)}"``."""
    return "" if count == 1 else "s"
