"""The kit every command's grammar is built with: shared options, argument types, the help layout.

``parser`` writes the grammar itself; this module holds what each command's parser is made
of, so that reads on its own and the grammar stays a list of commands.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from ..core.locking import DEFAULT_LOCK_TIMEOUT

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from typing import Any

PROG = "jsonl-session"
DIR_ENV = "JSONL_SESSION_DIR"


class NotBuilt:
    """Stands in for the parser of a command that is not on the command line.

    Building a command's arguments costs start-up (each ``add_argument`` makes a help
    formatter), and ``ls`` must stay within 3x a bare Python (``benchmarks/startup.py``), so
    ``build_parser(only=...)`` builds the one command that runs and skips the others' calls.
    """

    def __getattr__(self, name: str) -> Callable[..., NotBuilt]:
        """``add_argument``, ``add_mutually_exclusive_group``, ``set_defaults``...: do nothing."""
        return lambda *args, **kwargs: self


class Commands:
    """The subcommands being built, and which one to build (None: all)."""

    def __init__(self, action: Any, only: str | None) -> None:
        self.action = action
        self.only = only


def command_parser(commands: Commands, name: str, summary: str, example: str, *, json: bool = False) -> Any:
    if commands.only not in (None, name):
        return NotBuilt()
    parser: argparse.ArgumentParser = commands.action.add_parser(
        name,
        help=summary,
        description=summary,
        epilog="Example:\n" + "\n".join(f"  {line}" for line in example.splitlines()),
        formatter_class=Formatter,
    )
    add_common(parser)
    if json:
        parser.add_argument("--json", action="store_true", help="machine-readable output: JSON Lines")
    return parser


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Help text as written (examples keep their lines), as wide as the terminal.

    argparse makes a formatter for every ``add_argument`` (to check the metavar), and its
    default asks ``shutil.get_terminal_size`` for the width: importing ``shutil`` (and the
    compression modules it brings) was ~2.5 ms of every command's start-up. ``COLUMNS``,
    then the terminal, then 80, as ``shutil`` does.
    """

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24) -> None:
        super().__init__(prog, indent_increment, max_help_position, width=_columns() - 2)


def _columns() -> int:
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):  # no stdout (None), or not a terminal
        return 80


class VersionAction(argparse.Action):
    """``--version``: the installed distribution's version, looked up only when asked for.

    ``importlib.metadata`` costs start-up; argparse's own ``version`` action needs the string
    while the parser is built, for every command.
    """

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            installed = version(PROG)
        except PackageNotFoundError:  # run from a source tree that was never installed
            installed = "unknown (not installed)"
        sys.stdout.write(f"{PROG} {installed}\n")
        parser.exit(0)


def add_common(parser: argparse.ArgumentParser, *, defaults: bool = False) -> None:
    """``--dir`` and ``--lock-timeout``, accepted before the command and after it.

    Only the top-level parser has defaults: a command's own copy is SUPPRESSed unless given,
    so ``jsonl-session --dir x ls`` keeps x, and ``ls --dir y`` (after the command) wins.
    Added to each parser rather than shared as a parent parser: each parser built costs start-up.
    """
    parser.add_argument(
        "--dir",
        default=(os.environ.get(DIR_ENV) or "sessions") if defaults else argparse.SUPPRESS,
        help=f"folder of session files (default: ${DIR_ENV} or ./sessions)",
    )
    parser.add_argument(
        "--lock-timeout",
        type=seconds_type,
        default=DEFAULT_LOCK_TIMEOUT if defaults else argparse.SUPPRESS,
        metavar="SECONDS",
        help=f"wait at most this long for another process's lock (default: {DEFAULT_LOCK_TIMEOUT:g})",
    )


def seconds_type(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, not {text}")
    return value


def count_type(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, not {value}")
    return value


WINDOW_HELP = "with --turns: flag a session whose context does not fit this many tokens (exit 1)"
