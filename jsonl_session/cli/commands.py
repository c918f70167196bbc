"""The ``jsonl-session`` command line: a thin layer over the library for people in a shell.

:func:`main` parses the command line with the grammar in :mod:`jsonl_session.cli.parser`,
runs the command's function and returns its exit code: 0 ok, 1 problems found or the
operation failed, 2 usage error. Library errors become one line on stderr
(``jsonl-session: error: ...``), never a traceback.

The commands live in one module per family (``sessions``, ``tools``, ``history``,
``follow``, ``transfer``, ``serve``, ``retention``, ``meta``), and ``main`` imports only the
family of the command it runs: start-up is most of a short command's time, so ``ls`` loads
neither the checker nor the backends (``tests/project/test_startup.py``).

Example:
    $ jsonl-session ls
    $ jsonl-session show convo_123 -n 5
"""

from __future__ import annotations

import os
import sys
import warnings

from .. import InvalidBackendURL, InvalidSessionId, JSONLSessionError, LockTimeout
from .output import Failure, UsageError, error, message, note
from .parser import PROG, build_parser, parse_arguments

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence  # annotations only (session.folder loads it for ls)
    from typing import Any


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return its exit code (the console script passes it to ``sys.exit``).

    Example:
        >>> main(["ls", "--dir", "sessions"])                   # doctest: +SKIP
        0
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args = parse_arguments(argv)
    except SystemExit as exc:  # -h (0) or a usage error (2): argparse has printed why
        return exc.code if isinstance(exc.code, int) else 2
    if args.command is None:
        build_parser().print_help(sys.stderr)
        return 2
    with warnings.catch_warnings():
        warnings.showwarning = _one_line_warning
        try:
            if reads_the_folder(args):
                from .lookup import need_folder

                need_folder(args)
            code = int(handler_for(args.command)(args))
            # What is still buffered goes now, where a reader gone away (``| head``) is handled
            # below, not as Python exits ("Exception ignored ... BrokenPipeError", exit 120).
            sys.stdout.flush()
            return code
        except (UsageError, InvalidSessionId, InvalidBackendURL) as exc:  # typed wrong, not failed
            error(message(exc))
            return 2
        except LockTimeout as exc:  # the library's advice names its parameter; here it is an option
            error(
                f"{exc.path}: lock not acquired within {exc.timeout:g}s; another process is writing or "
                "editing this session (raise --lock-timeout, or find the process holding it)"
            )
            return 1
        except (Failure, JSONLSessionError, OSError, ValueError) as exc:
            if isinstance(exc, BrokenPipeError):
                return _quiet_broken_pipe()
            error(message(exc))
            return 1
        except KeyboardInterrupt:
            print(file=sys.stderr)
            return 130
        except Exception as exc:  # a bug: still one line, the traceback on request
            if os.environ.get("JSONL_SESSION_DEBUG"):
                raise
            error(
                f"internal error: {type(exc).__name__}: {exc} (set JSONL_SESSION_DEBUG=1 for the traceback)"
            )
            return 1


_HANDLERS: dict[str, str] = {
    "ls": "sessions",
    "show": "sessions",
    "tail": "sessions",
    "add": "sessions",
    "pop": "sessions",
    "clear": "sessions",
    "rm": "sessions",
    "fork": "sessions",
    "meta": "meta",
    "textconv": "sessions",
    "git-setup": "tools",
    "rewind": "history",
    "check": "tools",
    "redact": "tools",
    "edit": "tools",
    "grep": "tools",
    "stats": "tools",
    "export": "transfer",
    "import": "transfer",
    "mirror": "mirror",
    "serve": "serve",
    "prune": "retention",
    "restore": "retention",
}
"""Each command of :func:`~jsonl_session.cli.parser.build_parser` and the module of ``cli`` whose
``cmd_<command>`` runs it."""


_FOLDER_OPTIONAL = frozenset({"add", "import", "textconv", "mirror"})
"""Commands that may start without the folder: they create it, take a file, or check it themselves."""


def reads_the_folder(args: argparse.Namespace) -> bool:
    """Whether the command needs ``--dir`` to exist (``check``/``redact`` of file paths do not)."""
    if args.command in _FOLDER_OPTIONAL or (args.command == "tail" and args.follow):
        return False  # tail -f waits for the session, which its first write creates with the folder
    if args.command in ("check", "redact"):
        from .lookup import is_path

        named = args.targets if args.command == "check" else [args.id]
        return not named or not all(is_path(name) for name in named)
    return True


def handler_for(command: str) -> Callable[[argparse.Namespace], int]:
    """The function that runs ``command`` (its module is imported now, not at start-up)."""
    # __import__, not importlib.import_module: an import statement's way in, which `python -X
    # importtime` reports, so tests/project/test_startup.py sees what each command loads.
    module = __import__(f"{__package__}.{_HANDLERS[command]}", fromlist=["cmd"])
    handler: Callable[[argparse.Namespace], int] = getattr(module, f"cmd_{command.replace('-', '_')}")
    return handler


def _one_line_warning(message: Warning | str, category: type[Warning], *_: Any, **__: Any) -> None:
    # named as warnings.showwarning names its parameters, which it replaces
    note(f"{PROG}: warning: {message}")


def _quiet_broken_pipe() -> int:
    """The reader went away (``| head``): stop quietly, without a second error at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 1
