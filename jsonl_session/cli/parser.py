"""The ``jsonl-session`` command line's grammar, in one place: every command, its options, help and examples.

Each command is a function below, registered with :func:`command` (its name, summary and
example) in the order the help lists them; it adds the command's own options to its parser.
Then the kit each command's parser is made of: the options every command shares (``--dir``,
``--lock-timeout``), the argument types, and the help layout. Building the parser is part of
every command's start-up, so :func:`parse_arguments` builds as little of it as the command
line needs: the named command's parser alone when the command comes first, else the top level
with that command only (:func:`build_parser` with ``only``), or all of it (help, usage errors).

Example:
    >>> build_parser().parse_args(["show", "convo_123", "-n", "5"]).n
    5
"""

from __future__ import annotations

import argparse
import os
import sys

from ..core.locking import DEFAULT_LOCK_TIMEOUT

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    AddArguments = Callable[[argparse.ArgumentParser], None]

PROG = "jsonl-session"
DIR_ENV = "JSONL_SESSION_DIR"
WINDOW_HELP = "with --turns: flag a session whose context does not fit this many tokens (exit 1)"


def parse_arguments(argv: Sequence[str]) -> argparse.Namespace:
    """``build_parser().parse_args(argv)``, the same namespace, help and exit codes, built faster.

    When the command comes first (``ls --json``, ``show ID``: most command lines), the top-level
    parser would only note the command and hand every later argument to the command's parser, so
    that parser alone parses them, into the top level's defaults: the top-level parser and its
    three ``gettext`` look-ups are not built. An argument the command does not take is reported
    by the top level (its usage), so that command line is parsed again the long way, as is any
    that starts with an option (``--dir X ls``) or names no command. (An ambiguous abbreviation,
    ``ls --=x``, is reported with the command's options and usage instead of the top level's.)
    """
    if argv and argv[0] in _COMMANDS:
        parsed, unknown = command_parser(argv[0]).parse_known_args(argv[1:])
        if not unknown:
            namespace = argparse.Namespace(**top_level_defaults())
            namespace.command = argv[0]
            for key, value in vars(parsed).items():  # as argparse's subcommand action copies them
                setattr(namespace, key, value)
            return namespace
    return build_parser(only=command_word(argv)).parse_args(argv)


def command_word(argv: Sequence[str]) -> str | None:
    """The command a command line runs, if that is plain without parsing it; else None.

    Only the options every command shares may come before it (``--dir X``, ``--lock-timeout=X``);
    any other option first (``-h``, an abbreviation) means "build every command's parser".
    """
    tokens = iter(argv)
    for token in tokens:
        if token in ("--dir", "--lock-timeout"):
            next(tokens, None)
        elif not token.startswith(("--dir=", "--lock-timeout=")):
            return None if token.startswith("-") else token
    return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argparse parser for every command (exposed so tests and docs can walk it).

    With ``only``, the top level and just that command are built; a name that is no command
    builds them all, so the error lists the choices.
    """
    defaults = top_level_defaults()
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Read, follow, fix, search and move Agents SDK sessions stored as JSONL files.",
        epilog=f"Example:\n  {PROG} ls\n  {PROG} show convo_123 -n 5\n\n"
        f"Run `{PROG} COMMAND -h` for a command's options and an example.",
        formatter_class=Formatter,
    )
    add_common(parser, defaults)
    parser.add_argument("--version", action=VersionAction, help="print the installed version and exit")
    parser.set_defaults(command=defaults["command"])
    subcommands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in [only] if only in _COMMANDS else _COMMANDS:
        command_parser(name, subcommands)
    return parser


def top_level_defaults() -> dict[str, Any]:
    """What the top-level parser puts in the namespace before a command's parser runs."""
    return {
        "dir": os.environ.get(DIR_ENV) or "sessions",
        "lock_timeout": DEFAULT_LOCK_TIMEOUT,
        "command": None,
    }


def command_parser(name: str, subcommands: Any = None) -> argparse.ArgumentParser:
    """Command ``name``'s parser: among ``subcommands`` (argparse's subparsers action), or alone.

    Alone it is the parser the subparsers action would make (the same program name,
    description, example and options), for :func:`parse_arguments`.
    """
    summary, example, json, add_arguments = _COMMANDS[name]
    epilog = "Example:\n" + "\n".join(f"  {line}" for line in example.splitlines())
    parser: argparse.ArgumentParser
    if subcommands is None:
        parser = argparse.ArgumentParser(
            prog=f"{PROG} {name}", description=summary, epilog=epilog, formatter_class=Formatter
        )
    else:
        parser = subcommands.add_parser(
            name, help=summary, description=summary, epilog=epilog, formatter_class=Formatter
        )
    add_common(parser)
    if json:
        parser.add_argument("--json", action="store_true", help="machine-readable output: JSON Lines")
    add_arguments(parser)
    return parser


_COMMANDS: dict[str, tuple[str, str, bool, AddArguments]] = {}
"""Each command's summary, example, whether it has ``--json``, and what adds its own options."""


def command(
    name: str, summary: str, example: str, *, json: bool = False
) -> Callable[[AddArguments], AddArguments]:
    """Register the decorated function as what adds command ``name``'s own options."""

    def register(add_arguments: AddArguments) -> AddArguments:
        _COMMANDS[name] = (summary, example, json, add_arguments)
        return add_arguments

    return register


# The commands, in the order the help lists them.


@command(
    "ls",
    "list sessions: item count, size, last activity, most recent first; marks paused runs and forks",
    f"{PROG} ls --dir sessions\n{PROG} ls --tree\n{PROG} ls --tag bug --user user-42 --json\n"
    f"{PROG} ls --limit 20",
    json=True,
)
def _ls(ls: argparse.ArgumentParser) -> None:
    ls.add_argument("--tree", action="store_true", help="show forks under the session they were forked from")
    ls.add_argument(
        "--tag",
        action="append",
        default=[],
        metavar="TAG",
        help="only sessions tagged TAG (repeat: all of them)",
    )
    ls.add_argument("--user", metavar="OWNER", help="only sessions whose owner is OWNER (see `meta --owner`)")
    ls.add_argument(
        "--limit", type=count_type, metavar="N", help="only the N most recently active (reads only those)"
    )


@command(
    "meta",
    "show or change a session's title, tags, owner and free-form keys (its .meta sidecar)",
    f"{PROG} meta convo_123\n"
    f"{PROG} meta convo_123 --title 'Refund A-1042' --tag billing --owner user-42\n"
    f"{PROG} meta convo_123 --untag billing --set ticket=T-12 --unset channel --json",
    json=True,
)
def _meta(meta: argparse.ArgumentParser) -> None:
    meta.add_argument("id", help="session id")
    title = meta.add_mutually_exclusive_group()
    title.add_argument("--title", metavar="TEXT", help="set the title (one line, at most 200 characters)")
    title.add_argument(
        "--no-title", action="store_true", help="remove the title (the first user message shows instead)"
    )
    meta.add_argument("--tag", action="append", default=[], metavar="TAG", help="add a tag (repeatable)")
    meta.add_argument("--untag", action="append", default=[], metavar="TAG", help="remove a tag (repeatable)")
    owner = meta.add_mutually_exclusive_group()
    owner.add_argument("--owner", metavar="OWNER", help="set the owner (a user id, an email...)")
    owner.add_argument("--no-owner", action="store_true", help="remove the owner")
    meta.add_argument(
        "--set",
        action="append",
        default=[],
        type=key_value_type,
        metavar="KEY=VALUE",
        help="set a free-form key to a string value (repeatable)",
    )
    meta.add_argument("--unset", action="append", default=[], metavar="KEY", help="remove a free-form key")


@command(
    "show",
    "print a session as a readable transcript",
    f"{PROG} show convo_123 -n 20\n{PROG} show convo_123 --json | jq .role\n"
    f"{PROG} show convo_123 --html -o convo_123.html\n{PROG} show convo_123 --markdown > transcript.md",
    json=True,
)
def _show(show: argparse.ArgumentParser) -> None:
    show.add_argument("id", help="session id")
    show.add_argument(
        "-n", type=count_type, metavar="N", help="only the newest N items (with --turns: turns)"
    )
    show.add_argument(
        "--turns",
        action="store_true",
        help="one line per turn: number, items, when it ran, its tokens (if recorded), its bytes, the "
        "context so far (tokens: bytes/4, or the recorded input per request if larger), its largest tool "
        "output, the question",
    )
    show.add_argument("--context-window", type=count_type, metavar="TOKENS", help=WINDOW_HELP)
    formats = show.add_mutually_exclusive_group()
    formats.add_argument(
        "--html", action="store_true", help="a self-contained HTML page (search, filters, folded tool output)"
    )
    formats.add_argument(
        "--markdown", action="store_true", help="GitHub-flavoured Markdown, for a pull request or a README"
    )
    show.add_argument("-o", "--output", metavar="FILE", help="write the --html/--markdown document to FILE")


@command(
    "tail",
    "print the newest items; with -f, follow the session live",
    f"{PROG} tail convo_123 -n 5 -f",
    json=True,
)
def _tail(tail: argparse.ArgumentParser) -> None:
    tail.add_argument("id", help="session id")
    tail.add_argument(
        "-n", type=count_type, default=10, metavar="N", help="how many newest items (default 10)"
    )
    tail.add_argument("-f", "--follow", action="store_true", help="keep printing changes (Ctrl-C stops)")
    tail.add_argument(
        "--timeout",
        type=seconds_type,
        metavar="SECONDS",
        help="with -f: stop following after this long (exit 1 if the session never appeared)",
    )


@command(
    "add",
    "append a message, or JSONL items from stdin (all or nothing)",
    f"{PROG} add convo_123 'What about tomorrow?'\n{PROG} add convo_123 - < items.jsonl",
)
def _add(add: argparse.ArgumentParser) -> None:
    add.add_argument("id", help="session id (created if missing)")
    add.add_argument(
        "text",
        metavar="TEXT",
        help='message text, stored as {"role": ROLE, "content": TEXT}; \'-\' reads JSONL items from stdin',
    )
    add.add_argument("--role", default="user", help="role of the message (default: user)")


@command("pop", "remove the newest item and print it as JSON", f"{PROG} pop convo_123")
def _pop(pop: argparse.ArgumentParser) -> None:
    pop.add_argument("id", help="session id")


@command(
    "clear",
    "remove every item (the empty file stays)",
    f"{PROG} clear convo_123 --yes",
)
def _clear(clear: argparse.ArgumentParser) -> None:
    clear.add_argument("id", help="session id")
    clear.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")


@command(
    "rm",
    "delete a session and its metadata (its .torn sidecar is kept)",
    f"{PROG} rm convo_123 --yes",
)
def _rm(rm: argparse.ArgumentParser) -> None:
    rm.add_argument("id", help="session id")
    rm.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")


@command(
    "fork",
    "copy a session (or its first N items or turns) to a new id, recording its lineage",
    f"{PROG} fork convo_123 convo_123-retry --at 4\n{PROG} fork convo_123 convo_123-b --at-turn 2",
)
def _fork(fork: argparse.ArgumentParser) -> None:
    fork.add_argument("source", metavar="SRC", help="session to copy")
    fork.add_argument("target", metavar="DST", help="new session id (must not have items)")
    at = fork.add_mutually_exclusive_group()
    at.add_argument("--at", type=count_type, metavar="N", help="copy only the first N items")
    at.add_argument(
        "--at-turn",
        type=count_type,
        metavar="K",
        help="copy only the first K whole turns (to redo turn K, give K-1)",
    )


@command(
    "rewind",
    "remove whole turns from the end (one locked truncation) and print what was removed",
    f"{PROG} rewind convo_123\n{PROG} rewind convo_123 --turns 2",
    json=True,
)
def _rewind(rewind: argparse.ArgumentParser) -> None:
    rewind.add_argument("id", help="session id")
    rewind.add_argument("--turns", type=count_type, default=1, metavar="N", help="how many turns (default 1)")


@command(
    "check",
    "verify session files: bad lines, torn tails, what the model API refuses when resent (exit 1 if any)",
    f"{PROG} check\n{PROG} check convo_123 --fix\n"
    f"{PROG} check --secrets sessions/*.jsonl   # as a pre-commit hook",
    json=True,
)
def _check(check: argparse.ArgumentParser) -> None:
    check.add_argument(
        "targets", nargs="*", metavar="ID_OR_FILE", help="session ids or .jsonl files (default: all)"
    )
    check.add_argument(
        "--fix",
        action="store_true",
        help="move torn tails to the .torn sidecar, remove temporary files of killed rewrites, drop orphaned "
        "reasoning items and repeated copies of a line; report what needs a human",
    )
    check.add_argument(
        "--secrets",
        action="store_true",
        help="instead, look for API keys and tokens (file:line: kind: masked excerpt)",
    )
    check.add_argument(
        "--max-item-bytes",
        type=count_type,
        default=1024 * 1024,
        metavar="BYTES",
        help="warn about items bigger than this (default 1048576: base64 images, file contents); "
        "a warning, not a problem: the exit code is unchanged",
    )


@command(
    "edit",
    "edit a session in $EDITOR; writers go on meanwhile and what they append is kept",
    f"EDITOR=nano {PROG} edit convo_123",
)
def _edit(edit: argparse.ArgumentParser) -> None:
    edit.add_argument("id", help="session id")


@command(
    "grep",
    "search message text across sessions: id:line: role: snippet (exit 1 if nothing found)",
    f"{PROG} grep -i 'golden gate'\n{PROG} grep refund support-42 --role assistant",
    json=True,
)
def _grep(grep: argparse.ArgumentParser) -> None:
    grep.add_argument("pattern", metavar="PATTERN", help="Python regular expression")
    grep.add_argument("ids", nargs="*", metavar="ID", help="sessions to search (default: all)")
    grep.add_argument(
        "--role", help="only items with this role, or as shown (tool call), or this type (function_call)"
    )
    grep.add_argument("-i", "--ignore-case", action="store_true", help="case-insensitive")


@command(
    "stats",
    "count items by role and type, characters and tool calls (one session or all)",
    f"{PROG} stats convo_123\n{PROG} stats convo_123 --turns --context-window 128000",
    json=True,
)
def _stats(stats: argparse.ArgumentParser) -> None:
    stats.add_argument("id", nargs="?", help="session id (default: all sessions)")
    stats.add_argument(
        "--turns",
        action="store_true",
        help="context growth per turn: items, bytes, tokens, biggest tool outputs",
    )
    stats.add_argument("--context-window", type=count_type, metavar="TOKENS", help=WINDOW_HELP)


@command(
    "export",
    "copy a session to another Agents SDK backend",
    f"{PROG} export convo_123 --to sqlite:///chats.db\n"
    f"{PROG} export convo_123 --to redis://localhost:6379/0 --as shared-123\n"
    f"{PROG} export --all --to postgresql://me@db.internal/chats",
)
def _export(export: argparse.ArgumentParser) -> None:
    export.add_argument("id", nargs="?", help="session id (or --all)")
    export.add_argument(
        "--all",
        action="store_true",
        help="every session in the folder, under its own id; re-run to resume or catch up (up to date ones "
        "are skipped, grown ones get their new items appended, different ones reported, never overwritten)",
    )
    export.add_argument(
        "--to",
        required=True,
        metavar="URL",
        help="sqlite:///path.db, postgresql://user@host/db, another SQLAlchemy URL "
        "(sqlite+aiosqlite:///x.db) or redis://host:port/db",
    )
    export.add_argument("--as", dest="as_id", metavar="OTHER_ID", help="session id there (default: the same)")
    export.add_argument(
        "--replace",
        action="store_true",
        help="overwrite a session there that differs (by default it is reported and left alone)",
    )


@command(
    "import",
    "copy a session from another Agents SDK backend into a file",
    f"{PROG} import sqlite:///chats.db --id convo_123 --as convo_123-copy\n"
    f"{PROG} import redis://localhost:6379/0 --all",
)
def _import(imp: argparse.ArgumentParser) -> None:
    imp.add_argument(
        "url",
        metavar="URL",
        nargs="+",
        help="backend URL, as for export; several: the databases a sharded mirror writes (each session "
        "read from the one its id hashes to)",
    )
    imp.add_argument("--id", metavar="SOURCE_ID", help="session id in that backend (or --all)")
    imp.add_argument(
        "--all",
        action="store_true",
        help="every session in that backend, under its own id; re-run to resume (as for export --all)",
    )
    imp.add_argument("--as", dest="as_id", metavar="ID", help="session id here (default: the same)")
    imp.add_argument(
        "--replace",
        action="store_true",
        help="overwrite a session here that differs (by default it is reported and left alone)",
    )


@command(
    "mirror",
    "keep a PostgreSQL or Redis database equal to the folder: catch up, then follow it live",
    f"{PROG} mirror --to postgresql://me@db.internal/chats\n{PROG} mirror --to redis://localhost:6379/0 "
    f"--delete\n{PROG} mirror --to postgresql://me@db.internal/chats --verify --json",
    json=True,
)
def _mirror(mirror: argparse.ArgumentParser) -> None:
    mirror.add_argument(
        "--to",
        required=True,
        action="append",
        metavar="URL",
        help="database URL, as for export; given more than once, each session goes to one of them "
        "by a hash of its id (docs/backends.md, 'More than one database')",
    )
    mirror.add_argument(
        "--delete", action="store_true", help="delete there what is deleted here (default: kept there)"
    )
    mirror.add_argument(
        "--yes",
        action="store_true",
        help="with --delete: let one pass delete more than half of the sessions stored (and more than 3)",
    )
    once = mirror.add_mutually_exclusive_group()
    once.add_argument("--once", action="store_true", help="catch up once and exit, without following")
    once.add_argument("--dry-run", action="store_true", help="say what catching up would change")
    once.add_argument("--verify", action="store_true", help="compare only; exit 1 on any difference")


@command(
    "textconv",
    "print a session file as stable transcript text, for git diff (a textconv driver)",
    f"{PROG} textconv sessions/convo_123.jsonl\n{PROG} git-setup   # sets git up to use it",
)
def _textconv(textconv: argparse.ArgumentParser) -> None:
    textconv.add_argument("file", metavar="FILE", help="a session file (any path: git passes a temp copy)")


@command(
    "git-setup",
    "make git keep session files whole on merge and diff them as transcripts: writes --dir's "
    ".gitattributes (every sidecar kind too) and the repository's textconv driver; safe to rerun",
    f"{PROG} git-setup --dir sessions",
)
def _git_setup(parser: argparse.ArgumentParser) -> None:
    """No options but the shared ones."""


@command(
    "serve",
    "a local, read-only web viewer of the folder's sessions, live (Ctrl-C stops it)",
    f"{PROG} serve --dir sessions --port 8765",
)
def _serve(serve: argparse.ArgumentParser) -> None:
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)"
    )
    serve.add_argument("--port", default="8765", help="port (default 8765; 0 picks a free one)")
    serve.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a --host that other machines can reach (every session becomes readable to them)",
    )
    serve.add_argument(
        "--header-timeout",
        type=seconds_type,
        default=10.0,
        metavar="SECONDS",
        help="how long a connection has to send its request line and headers (default 10)",
    )


@command(
    "redact",
    "replace API keys and tokens in a session, in place",
    f"{PROG} redact support-42",
)
def _redact(redact: argparse.ArgumentParser) -> None:
    redact.add_argument(
        "id", metavar="ID_OR_FILE", help="session id, or its .jsonl file (as check prints it)"
    )


@command(
    "prune",
    "archive sessions not written for a while (with their sidecars) and remove them; "
    "prints what it would do unless --yes",
    f"{PROG} prune --older-than 30d\n{PROG} prune --older-than 12h --yes",
    json=True,
)
def _prune(prune: argparse.ArgumentParser) -> None:
    prune.add_argument(
        "--older-than",
        required=True,
        metavar="DURATION",
        help="not written for this long: 90m, 12h, 30d, 2w (units s, m, h, d, w; combined as 1d12h)",
    )
    prune.add_argument(
        "-y", "--yes", action="store_true", help="archive and remove them (default: only show what would go)"
    )


@command(
    "restore",
    "bring an archived session back, byte-identical with its sidecars (never overwrites)",
    f"{PROG} restore --list\n{PROG} restore convo_123",
    json=True,
)
def _restore(restore: argparse.ArgumentParser) -> None:
    restore.add_argument("id", nargs="?", help="session id (the newest archive of it is restored)")
    restore.add_argument("--list", action="store_true", help="list the archived sessions instead")


# The kit: what each command's parser is made of.


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


def add_common(parser: argparse.ArgumentParser, defaults: dict[str, Any] | None = None) -> None:
    """``--dir`` and ``--lock-timeout``, accepted before the command and after it.

    Only the top-level parser has defaults (:func:`top_level_defaults`): a command's own copy
    is SUPPRESSed unless given, so ``jsonl-session --dir x ls`` keeps x, and ``ls --dir y``
    (after the command) wins. Added to each parser rather than shared as a parent parser: each
    parser built costs start-up.
    """
    parser.add_argument(
        "--dir",
        default=defaults["dir"] if defaults else argparse.SUPPRESS,
        help=f"folder of session files (default: ${DIR_ENV} or ./sessions)",
    )
    parser.add_argument(
        "--lock-timeout",
        type=seconds_type,
        default=defaults["lock_timeout"] if defaults else argparse.SUPPRESS,
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


def key_value_type(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` as ``(KEY, VALUE)``; the value may hold ``=`` too, the key may not be empty."""
    key, equals, value = text.partition("=")
    if not equals or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, not {text!r}")
    return key.strip(), value
