"""Set up a git repository for a sessions folder: how git merges and diffs every file kind in it.

Two things, both idempotent (running again changes nothing):

* ``<folder>/.gitattributes``: a line for the session files and one for every sidecar kind
  (``core.names.KINDS``) and their ``.torn`` fragments. Every kind is kept whole on merge
  (``-merge``): a text merge of two histories, or of their sidecars, writes conflict markers
  into a file whose readers cannot tell them from data. Git then reports the conflict and keeps
  one side's valid file. The usage log is the exception: its lines are independent records,
  so ``merge=union`` keeps the runs both sides paid for.
* the repository's ``diff.jsonl-session.textconv``: this interpreter's absolute path with
  ``-m jsonl_session textconv``, so ``git diff`` works without the virtual environment on
  ``PATH`` (a bare ``jsonl-session`` there aborted every diff when it was not).

Example:
    >>> setup_git("sessions")                                   # doctest: +SKIP
    ['sessions/.gitattributes: added 15 lines', 'git config diff.jsonl-session.textconv ...']
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from ..core.names import KINDS, SUFFIX, TORN_SUFFIX, USAGE

DRIVER = "jsonl-session"
"""The diff driver's name, as ``.gitattributes`` and ``git config`` spell it."""

_HEADING = "# jsonl-session git-setup: how git merges and diffs session files (run it again to update)"
_WHOLE = "text eol=lf -merge"


class NotARepository(Exception):
    """The folder is not inside a git work tree (or git is not installed)."""


def gitattributes_lines() -> list[str]:
    """The lines ``<folder>/.gitattributes`` needs, patterns relative to the folder.

    Example:
        >>> gitattributes_lines()[1]
        '*.jsonl text eol=lf -merge diff=jsonl-session'
    """
    lines = [_HEADING, f"*{SUFFIX} {_WHOLE} diff={DRIVER}", f"*{SUFFIX}{TORN_SUFFIX} {_WHOLE}"]
    for kind in KINDS:
        merge = "merge=union" if kind == USAGE else "-merge"
        lines.append(f"*{SUFFIX}{kind} text eol=lf {merge}")
        lines.append(f"*{SUFFIX}{kind}{TORN_SUFFIX} {_WHOLE}")
    return lines


def textconv_command() -> str:
    """The diff driver's command: this interpreter by absolute path, quoted for git's shell."""
    return f"{shlex.quote(os.path.abspath(sys.executable))} -m jsonl_session textconv"


def setup_git(folder: str | os.PathLike[str]) -> list[str]:
    """Write what is missing (the attributes, the driver's config); return what changed, one line each.

    Lines already in ``.gitattributes`` are kept as they are, and only missing ones appended,
    so a hand-written line stays. Raises :class:`NotARepository` outside a git work tree.
    """
    folder = Path(folder)
    _git(folder, "rev-parse", "--show-toplevel")
    changes = []
    attributes = folder / ".gitattributes"
    try:
        present = attributes.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        present = []
    missing = [line for line in gitattributes_lines() if line not in present]
    if missing:
        before = attributes.read_bytes() if present else b""
        with open(attributes, "a", encoding="utf-8") as out:
            out.write("" if not before or before.endswith(b"\n") else "\n")
            out.write("".join(line + "\n" for line in missing))
        changes.append(f"{attributes}: added {len(missing)} line{'' if len(missing) == 1 else 's'}")
    key, command = f"diff.{DRIVER}.textconv", textconv_command()
    current = subprocess.run(
        ["git", "-C", str(folder), "config", "--local", "--get", key],
        check=False,
        capture_output=True,
        text=True,
    ).stdout.rstrip("\n")
    if current != command:
        _git(folder, "config", "--local", key, command)
        changes.append(f"git config {key} {command!r}")
    return changes


def _git(folder: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", "-C", str(folder), *args], check=False, capture_output=True, text=True)
    except FileNotFoundError:
        raise NotARepository("git is not installed (or not on PATH)") from None
    if done.returncode != 0:
        reason = done.stderr.strip().splitlines()[-1:] or [f"git {args[0]} failed"]
        raise NotARepository(f"{folder}: {reason[0].removeprefix('fatal: ')}")
    return done.stdout
