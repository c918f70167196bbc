"""The ``jsonl-session`` command line: a thin layer over the library for people in a shell.

Each command is one small function taking the arguments parsed by the grammar in
:mod:`jsonl_session.cli.parser` and returning an exit code: 0 ok, 1 problems found or the
operation failed, 2 usage error. Library errors become one
line on stderr (``jsonl-session: error: ...``), never a traceback. Output meant for scripts
is JSON Lines (``--json``); colour is used only on a terminal and never when ``NO_COLOR``
is set.

Start-up is most of a short command's time, so modules only some commands need (asyncio,
subprocess, tempfile, the checker, the backends) are imported inside those commands;
``tests/project/test_startup.py`` keeps ``ls`` free of them.

Example:
    $ jsonl-session ls
    $ jsonl-session show convo_123 -n 5
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Sequence

from ..core import codec, scanner
from ..core.errors import (
    InvalidBackendURL,
    InvalidSessionId,
    JSONLSessionError,
    SessionFileError,
    UnsafePathError,
)
from ..core.names import filename_for, id_for
from ..render.item_text import Style, heading, label, render, text_of
from ..render.terminal_text import printable
from ..session.folder import SessionDirectory, utc_seconds
from .parser import PROG, build_parser, command_word

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from pathlib import Path
    from typing import IO, Any

    from ..core.safe_open import StrPath
    from ..session.store import JSONLSession
    from ..tools.check import Problem

SNIPPET = 100


class Failure(Exception):
    """The operation could not be done; the message is printed as one line and the exit code is 1."""


class UsageError(Failure):
    """The command line itself is wrong (a bad pattern, say): one line, exit code 2."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return its exit code (the console script passes it to ``sys.exit``).

    Example:
        >>> main(["ls", "--dir", "sessions"])                   # doctest: +SKIP
        0
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(only=command_word(argv))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # -h (0) or a usage error (2): argparse has printed why
        return exc.code if isinstance(exc.code, int) else 2
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    with warnings.catch_warnings():
        warnings.showwarning = _one_line_warning
        try:
            return int(_HANDLERS[args.command](args))
        except (UsageError, InvalidSessionId, InvalidBackendURL) as exc:  # typed wrong, not failed
            _error(_message(exc))
            return 2
        except (Failure, JSONLSessionError, OSError, ValueError) as exc:
            if isinstance(exc, BrokenPipeError):
                return _quiet_broken_pipe()
            _error(_message(exc))
            return 1
        except KeyboardInterrupt:
            print(file=sys.stderr)
            return 130
        except Exception as exc:  # a bug: still one line, the traceback on request
            if os.environ.get("JSONL_SESSION_DEBUG"):
                raise
            _error(
                f"internal error: {type(exc).__name__}: {exc} (set JSONL_SESSION_DEBUG=1 for the traceback)"
            )
            return 1


# -- commands ------------------------------------------------------------------------------


def cmd_ls(args: argparse.Namespace) -> int:
    from .history import mark, print_tree

    if not os.path.isdir(args.dir):
        raise Failure(f"{args.dir}: no such folder")
    skipped: list[Exception] = []
    infos = _directory(args).list(on_error=lambda _path, exc: skipped.append(exc))
    for exc in skipped:  # one unreadable file is named, and the rest listed (exit 1)
        _skip_warning(exc)
    status = 1 if skipped else 0
    out = sys.stdout
    if args.tree and not args.json and infos:
        print_tree(infos)
        return status
    if args.json:
        # The standard json module, not orjson: for these flat records (str, int, bool, None) it
        # writes the same bytes, and loads ~10 ms sooner (tests/cli/test_cli.py, test_startup.py).
        import json

        for info in infos:
            record = {
                "id": info.session_id,
                "items": info.items,
                "size": info.size,
                "modified": _iso_utc(info.mtime),
                "path": str(info.path),
                "paused": info.paused,
                "forked_from": info.forked_from,
            }
            line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
            sys.stdout.buffer.write(line.encode())
        return status
    if not infos:
        _note(f"no sessions in {args.dir}")
        return status
    shown = [printable(info.session_id) for info in infos]
    width = max(2, *(len(session_id) for session_id in shown))
    marks = [printable(mark(info)) for info in infos]
    note = "  NOTE" if any(marks) else ""
    out.write(f"{'ID':<{width}}  {'ITEMS':>6}  {'SIZE':>7}  {'MODIFIED (UTC)':<19}{note}".rstrip() + "\n")
    for info, session_id, marked in zip(infos, shown, marks):
        modified = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(utc_seconds(info.mtime)))
        row = f"{session_id:<{width}}  {info.items:>6}  {_size(info.size):>7}  {modified}  {marked}"
        out.write(row.rstrip() + "\n")
    return status


def cmd_show(args: argparse.Namespace) -> int:
    if args.html or args.markdown or args.output:
        return _show_document(args)
    session = _existing(args, args.id)
    if args.turns:
        from .history import show_turns

        return show_turns(args, session)
    first = 1
    if args.n is None:
        items = session.get_items_sync()
    else:  # only the newest n are read: `show -n 1` of a 300 MB session peaked near 800 MB
        total = session.count_items_sync()
        items = session.get_items_sync(limit=args.n) if args.n else []
        first = max(1, total - len(items) + 1)
    _print_items(args, items, first=first)
    return 0


def cmd_tail(args: argparse.Namespace) -> int:
    if args.timeout is not None and not args.follow:
        raise UsageError("--timeout only applies to tail -f")
    if args.follow:
        from .follow import follow

        return follow(args, _open(args, args.id))
    session = _existing(args, args.id)
    _print_items(args, session.get_items_sync(limit=args.n))
    return 0


def cmd_add(args: argparse.Namespace) -> int:
    session = _open(args, args.id)
    if args.text == "-":
        items = _parse_items(sys.stdin.buffer.read(), "<stdin>")
    else:
        items = [{"role": args.role, "content": args.text}]
    session.add_items_sync(items)
    _note(f"{args.id}: added {len(items)} item{_s(len(items))}")
    return 0


def cmd_pop(args: argparse.Namespace) -> int:
    item = _existing(args, args.id).pop_item_sync()
    if item is None:
        raise Failure(f"{args.id}: session is empty; nothing to pop")
    _json_line(item)
    return 0


def cmd_clear(args: argparse.Namespace) -> int:
    session = _existing(args, args.id)
    count = session.count_items_sync()
    if not args.yes and not _confirm(f"clear all {count} item{_s(count)} of {args.id}?"):
        raise Failure(f"{args.id}: not cleared")
    session.clear_session_sync()
    _note(f"{args.id}: cleared {count} item{_s(count)}")
    return 0


def cmd_rm(args: argparse.Namespace) -> int:
    session = _existing(args, args.id)
    if not args.yes and not _confirm(f"delete {session.path}?"):
        raise Failure(f"{args.id}: not deleted")
    if not _directory(args).delete(args.id):
        raise Failure(f"{args.id}: no such session in {args.dir}")
    _note(f"{args.id}: deleted {session.path}")
    return 0


def cmd_fork(args: argparse.Namespace) -> int:
    _existing(args, args.source)
    target = _directory(args).fork(args.source, args.target, at=args.at, at_turn=args.at_turn)
    count = target.count_items_sync()
    short = f" (all it has; --at {args.at})" if args.at is not None and args.at > count else ""
    _note(f"{args.target}: forked {count} item{_s(count)} from {args.source}{short}")
    return 0


def cmd_rewind(args: argparse.Namespace) -> int:
    from .history import cmd_rewind as rewind

    return rewind(args)


def cmd_check(args: argparse.Namespace) -> int:
    from ..tools.check import check_file, stray_temp_problems

    paths = _targets(args, args.targets)
    if args.secrets:
        return _check_secrets(args, paths)
    found = remaining = 0
    problems: Iterator[Problem] = (
        problem
        for path in paths
        for problem in check_file(path, fix=args.fix, lock_timeout=args.lock_timeout)
    )
    if not args.targets:  # the whole folder: also what rewrites of since-deleted sessions left
        problems = itertools.chain(problems, stray_temp_problems(args.dir, fix=args.fix))
    for problem in problems:
        found += 1
        remaining += not problem.fixed
        if args.json:
            _json_line(
                {
                    "path": str(problem.path),
                    "line": problem.line,
                    "reason": problem.reason,
                    "fixable": problem.fixable,
                    "fixed": problem.fixed,
                }
            )
        else:
            print(("fixed: " if problem.fixed else "") + printable(str(problem)))
    summary = f"checked {len(paths)} file{_s(len(paths))}: {found} problem{_s(found)}"
    if args.fix:
        summary += f", {found - remaining} fixed"
    _note(summary)
    return 1 if remaining else 0


def cmd_redact(args: argparse.Namespace) -> int:
    from ..tools.secrets import redact_session

    findings = redact_session(_session_named(args, args.id))
    for finding in findings:
        where = f"{finding.path}:{finding.line}"
        print(printable(f"{where}: {finding.kind}: {finding.excerpt} -> [REDACTED:{finding.kind}]"))
    _note(f"{args.id}: redacted {len(findings)} secret{_s(len(findings))}")
    return 0


def cmd_edit(args: argparse.Namespace) -> int:
    import shlex
    import subprocess

    from ..tools.edit_copy import edit_copy, new_unanswered_calls

    session = _existing(args, args.id)
    editor = shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi")
    # No lock is held while the editor is open: a running agent keeps appending, and its
    # items are kept on save; only a pop, clear or rewrite meanwhile refuses the save.
    with edit_copy(session) as copy:
        before = len(copy.base_items())
        while True:
            status = subprocess.call([*editor, str(copy.path)])
            if status != 0:
                raise Failure(f"{args.id}: editor exited with status {status}; session left unchanged")
            if copy.unchanged():
                _note(f"{args.id}: no change; session left unchanged")
                return 0
            try:
                items = _parse_items(copy.path.read_bytes(), "line")
            except Failure as exc:
                _error(str(exc))
                if not _confirm("edit again?", default=True):
                    raise Failure(f"{args.id}: edit abandoned; session left unchanged") from None
                continue
            unanswered = new_unanswered_calls(copy.base_items(), items)
            for problem in unanswered:
                _note(f"{PROG}: warning: {problem} (the model API rejects such a history)")
            if not unanswered or _confirm("save anyway?"):
                break
            if not _confirm("edit again?", default=True):
                raise Failure(f"{args.id}: edit abandoned; session left unchanged")
        appended = copy.save(items)
    after = len(items) + appended
    meanwhile = f"; {appended} added meanwhile kept" if appended else ""
    _note(f"{args.id}: saved ({before} -> {after} item{_s(after)}{meanwhile})")
    return 0


def cmd_grep(args: argparse.Namespace) -> int:
    flags = re.IGNORECASE if args.ignore_case else 0
    try:
        pattern = re.compile(args.pattern, flags)
    except re.error as exc:
        raise UsageError(f"bad pattern {args.pattern!r}: {exc}") from None
    from ..tools.grep import matching_items, prefilter_for

    prefilter = prefilter_for(args.pattern, ignore_case=args.ignore_case)
    style = _style(sys.stdout)
    folder = _directory(args)
    ids = args.ids or folder.ids()
    # a folder's ids name regular files already: no session object or pathlib needed (start-up)
    paths: list[StrPath] = (
        [_existing(args, session_id).path for session_id in ids]
        if args.ids
        else [folder._path_of(filename_for(session_id)) for session_id in ids]
    )
    skipped: list[Exception] = []
    # searching the folder: an unreadable file is named and skipped; a named one is an error
    on_error = None if args.ids else (lambda _path, exc: skipped.append(exc))
    matches = 0
    write = sys.stdout.write
    for index, number, item in matching_items(paths, prefilter, args.lock_timeout, on_error):
        role = label(item)
        if args.role is not None and args.role not in (role, heading(item)):
            continue
        text = text_of(item)
        match = pattern.search(text)
        if match is None:
            continue
        matches += 1
        session_id = ids[index]
        if args.json:
            _json_line({"id": session_id, "line": number, "role": role, "text": text})
        else:
            head = style.role(printable(heading(item)))
            write(f"{printable(session_id)}:{number}: {head}: {_snippet(text, match, style)}\n")
    for error in skipped:
        _skip_warning(error)
    return 0 if matches and not skipped else 1


def cmd_stats(args: argparse.Namespace) -> int:
    ids = [args.id] if args.id else _directory(args).ids()
    if args.id:
        _existing(args, args.id)
    labels: Counter[str] = Counter()
    tools: Counter[str] = Counter()
    items = characters = 0
    skipped = 0
    per_session: dict[str, dict[str, int]] = {}  # token totals of the sessions with a usage log
    for session_id in ids:
        try:
            session = _open(args, session_id)
            session_items = session.get_items_sync()
            totals = session.get_session_usage_sync()
        except (OSError, JSONLSessionError) as exc:
            if args.id:
                raise
            skipped += 1  # an unreadable or conflicted file or log: named, the rest still counted
            _skip_warning(exc)
            continue
        if totals is not None:
            per_session[session_id] = totals
        for item in session_items:
            items += 1
            labels[label(item)] += 1
            characters += len(text_of(item))
            if item.get("type") == "function_call":
                tools[str(item.get("name", "?"))] += 1
    tool_calls = sum(tools.values())
    from .history import print_usage, usage_overall

    overall = usage_overall(per_session)
    if args.json:
        _json_line(
            {
                "sessions": len(ids) - skipped,
                "items": items,
                "characters": characters,
                "tool_calls": tool_calls,
                "by_role": dict(labels.most_common()),
                "tools": dict(tools.most_common()),
                "tokens": {"total": overall, "by_session": per_session},
            }
        )
        return 1 if skipped else 0
    read = len(ids) - skipped
    scope = printable(args.id) if args.id else f"{read} session{_s(read)}"
    print(
        f"{scope}: {items} item{_s(items)}, {characters} characters, {tool_calls} tool call{_s(tool_calls)}"
    )
    for name, count in labels.most_common():
        print(f"  {printable(name):<24} {count:>7}")
    if tools:
        print("tools:")
        for name, count in tools.most_common():
            print(f"  {printable(name):<24} {count:>7}")
    print_usage(per_session, overall)
    return 1 if skipped else 0


def cmd_textconv(args: argparse.Namespace) -> int:
    from ..render.file_io import file_diff_text

    sys.stdout.buffer.write(file_diff_text(args.file, lock_timeout=args.lock_timeout).encode())
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from ..serve.server import serve

    return serve(args.dir, host=args.host, port=args.port, lock_timeout=args.lock_timeout)


def cmd_export(args: argparse.Namespace) -> int:
    from .transfer import cmd_export as export

    return export(args)


def cmd_import(args: argparse.Namespace) -> int:
    from .transfer import cmd_import as import_

    return import_(args)


# -- helpers -------------------------------------------------------------------------------


def _directory(args: argparse.Namespace) -> SessionDirectory:
    return SessionDirectory(args.dir, lock_timeout=args.lock_timeout)


def _open(args: argparse.Namespace, session_id: str) -> JSONLSession:
    return _directory(args).open(session_id)


def _existing(args: argparse.Namespace, session_id: str) -> JSONLSession:
    session = _open(args, session_id)
    if not _directory(args).exists(session_id):  # lstat: a symlink is not a session
        if os.path.lexists(session.path):
            # `check --secrets ID` read through a symlink out of the folder; every command
            # that takes an id refuses here, as the lock would (tests/core/test_symlinks.py).
            raise UnsafePathError(session.path, "is a symlink or not a regular file; refusing to use it")
        raise Failure(f"{session_id}: no such session in {args.dir}")
    return session


def _session_named(args: argparse.Namespace, name: str) -> JSONLSession:
    """The session ``name`` means: an id in ``--dir``, or a file path like those ``check`` prints."""
    if not _is_path(name):
        return _existing(args, name)
    from pathlib import Path

    path = Path(name)
    session_id = id_for(path.name)
    if session_id is None:
        raise UsageError(f"{name}: not a session file (a session file is named <id>.jsonl)")
    if not path.is_file():
        raise Failure(f"{name}: no such file")
    from ..session.store import JSONLSession

    return JSONLSession(session_id, path.parent, lock_timeout=args.lock_timeout)


def _is_path(name: str) -> bool:
    """A path (as pre-commit passes, and as messages print), not an id: has a folder, or is a file."""
    return name.endswith(".jsonl") and (os.sep in name or os.path.isfile(name))


def _targets(args: argparse.Namespace, names: list[str]) -> list[Path]:
    """Session files named by id, or by path (as pre-commit passes them); all sessions if none."""
    if not names:
        return [_open(args, session_id).path for session_id in _directory(args).ids()]
    paths = []
    for name in names:
        paths.append(_session_named(args, name).path if _is_path(name) else _existing(args, name).path)
    return paths


def _show_document(args: argparse.Namespace) -> int:
    """``show --html`` / ``--markdown``: the whole transcript as one document, to stdout or ``-o FILE``."""
    from pathlib import Path

    from ..render.file_io import session_html, session_markdown

    if args.json or not (args.html or args.markdown):
        _error("show: -o goes with --html or --markdown, and --json with neither")
        return 2
    if args.turns:  # it used to be ignored: the whole transcript came out instead
        _error("show: --turns lists turns as text or --json, not as --html or --markdown")
        return 2
    path = _existing(args, args.id).path
    if args.html:
        data, found = session_html(path, args.id, newest=args.n, lock_timeout=args.lock_timeout)
    else:
        text, found = session_markdown(path, args.id, newest=args.n, lock_timeout=args.lock_timeout)
        data = text.encode()
    if found.unreadable:
        lines = found.unreadable
        shown = ", ".join(map(str, lines[:5])) + (", ..." if len(lines) > 5 else "")
        print(
            f"{PROG}: warning: {path}: {len(lines)} unreadable line{_s(len(lines))} shown as they are "
            f"(line {shown}); `{PROG} check` says why",
            file=sys.stderr,
        )
    if args.output:
        Path(args.output).write_bytes(data)
        count = len(found.views)
        print(f"{args.id}: wrote {args.output} ({count} item{_s(count)})", file=sys.stderr)
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    return 0


def _print_items(args: argparse.Namespace, items: list[Any], *, first: int | None = None) -> None:
    if args.json:
        sys.stdout.buffer.write(b"".join(codec.dumps_any(item) + b"\n" for item in items))
        sys.stdout.flush()
        return
    style = _style(sys.stdout)
    for offset, item in enumerate(items):
        number = None if first is None else first + offset
        print(render(item, number=number, style=style))


def _parse_items(data: bytes, source: str) -> list[Any]:
    """Every non-blank line as an item, or a Failure naming the first bad line (nothing half-done)."""
    data = data.removeprefix(codec.BOM)
    items = []
    for number, line in enumerate(data.split(b"\n"), 1):
        if codec.is_blank(line):
            continue
        reason = scanner.describe_bad_line(line)
        if reason is None:
            item = codec.decode_line(line)
            try:
                codec.encode_items([item])
            except ValueError as exc:
                reason = str(getattr(exc, "reason", exc))
            else:
                items.append(item)
                continue
        where = f"line {number}" if source == "line" else f"{source}:{number}"
        raise Failure(f"{where}: {reason}")
    return items


def _check_secrets(args: argparse.Namespace, paths: list[Path]) -> int:
    from ..tools.secrets import scan_file

    findings = []
    refused = 0
    for path in paths:
        try:
            findings.extend(scan_file(path))
        except SessionFileError as exc:  # a symlink or FIFO named by path: report it, go on
            refused += 1
            _error(str(exc))
    for finding in findings:
        if args.json:
            _json_line(
                {
                    "path": str(finding.path),
                    "line": finding.line,
                    "kind": finding.kind,
                    "excerpt": finding.excerpt,
                }
            )
        else:
            print(printable(f"{finding.path}:{finding.line}: {finding.kind}: {finding.excerpt}"))
    summary = f"checked {len(paths)} file{_s(len(paths))}: {len(findings)} secret{_s(len(findings))}"
    _note(summary + (f"; `{PROG} redact ID` replaces them" if findings else ""))
    return 1 if findings or refused else 0


def _skip_warning(exc: BaseException) -> None:
    _note(f"{PROG}: warning: {_message(exc)}; skipped")


def _snippet(text: str, match: re.Match[str], style: Style) -> str:
    """About SNIPPET characters around the match, on one line, the match highlighted."""
    start = max(0, match.start() - SNIPPET // 3)
    end = min(len(text), max(match.end(), start + SNIPPET))
    window = (
        printable(text[start : match.start()])
        + style.match(printable(match.group()))
        + printable(text[match.end() : end])
    )
    # split/join squashes newlines and runs of spaces 4x faster than a regex (colour codes have no spaces)
    return ("…" if start else "") + " ".join(window.split()) + ("…" if end < len(text) else "")


def _confirm(question: str, *, default: bool = False) -> bool:
    """Ask on stderr and read the answer from stdin: Enter means the default, end of input means no."""
    sys.stderr.write(f"{question} [{'Y/n' if default else 'y/N'}] ")
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:  # nobody to answer (stdin closed or /dev/null): never assume yes
        sys.stderr.write("\n")
        return False
    answer = line.strip().lower()
    return default if not answer else answer in ("y", "yes")


def _style(stream: IO[str]) -> Style:
    return Style(stream.isatty() and "NO_COLOR" not in os.environ)


def _json_line(value: Any) -> None:
    sys.stdout.buffer.write(codec.dumps_any(value) + b"\n")


def _iso_utc(mtime: float) -> str:
    """``datetime.fromtimestamp(mtime, timezone.utc).isoformat(timespec="seconds")``, without datetime."""
    when = time.gmtime(utc_seconds(mtime))
    return (
        f"{when.tm_year:04d}-{when.tm_mon:02d}-{when.tm_mday:02d}"
        f"T{when.tm_hour:02d}:{when.tm_min:02d}:{when.tm_sec:02d}+00:00"
    )


def _size(size: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024  # type: ignore[assignment]
    raise AssertionError("unreachable")


def _s(count: int) -> str:
    return "" if count == 1 else "s"


def _message(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    if isinstance(exc, FileExistsError | FileNotFoundError) and not str(exc):
        return type(exc).__name__
    return str(exc) or type(exc).__name__


def _note(message: str) -> None:
    """One line for the person at the terminal (stderr), control characters escaped."""
    print(printable(message), file=sys.stderr)


def _error(message: str) -> None:
    _note(f"{PROG}: error: {message}")


def _one_line_warning(message: Warning | str, category: type[Warning], *_: Any, **__: Any) -> None:
    _note(f"{PROG}: warning: {message}")


def _quiet_broken_pipe() -> int:
    """The reader went away (``| head``): stop quietly, without a second error at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 1


_HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "ls": cmd_ls,
    "show": cmd_show,
    "tail": cmd_tail,
    "add": cmd_add,
    "pop": cmd_pop,
    "clear": cmd_clear,
    "rm": cmd_rm,
    "fork": cmd_fork,
    "rewind": cmd_rewind,
    "check": cmd_check,
    "redact": cmd_redact,
    "edit": cmd_edit,
    "grep": cmd_grep,
    "stats": cmd_stats,
    "export": cmd_export,
    "import": cmd_import,
    "textconv": cmd_textconv,
    "serve": cmd_serve,
}
"""Each command of :func:`~jsonl_session.cli.parser.build_parser` and the function that runs it."""
