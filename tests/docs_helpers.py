"""How each code block of the README and ``docs/*.md`` runs (Sybil parsers and evaluators).

Sybil (https://sybil.readthedocs.io) splits a page into its fenced blocks and ``<!-- skip -->``
directives and runs them in order in one namespace; this module says what running means:

* a page runs in a fresh folder laid out like a fresh clone, a git repository with one commit
  of what the checkout's git tracks in ``examples/``, ``sessions/`` and ``.gitattributes`` (all
  modified at one instant, now, so ``ls`` lists the sessions in the same order on every run);
  the working directory there, ``$JSONL_SESSION_DIR`` its
  ``sessions/`` and ``$HOME`` the folder itself (git reads no user's settings), so no block can
  touch the checkout;
* a ``python`` block runs in this process, in the page's namespace (``__name__`` is
  ``"__main__"``), with what it prints captured; a ``text`` block right after it (blank lines
  between, nothing else) is what it prints, and the two are compared. One starting with ``>>>``
  is a doctest;
* a ``console`` block is ``$ command`` lines, each followed by what it prints. Each command runs
  in ``bash`` in the folder, the venv's ``bin/`` first on ``PATH`` (so ``python`` and
  ``jsonl-session`` are the venv's); its stdout and stderr together are compared with the lines
  shown. In a block marked ``<!-- given: what cat shows -->``, ``$ cat FILE`` of a file that
  does not exist yet first writes the lines shown to FILE: the page shows a file it made by
  hand (a conflicted merge, a broken history), then works on it;
* any other block fails, unless ``<!-- skip: next "why" -->`` (Sybil's directive; the reason
  is eval'd, so it is a string literal) stands before it: one that needs an API key, a network,
  a server that runs until stopped, or that installs packages.

Compared output is normalised on both sides, only where runs must differ: date-times
(``2026-12-02 18:38:51``, ``2026-12-02T18:38:51Z``, ``20260102T030405.123456Z``) and Unix
times in milliseconds (13 digits) become ``<time>``, durations (``3.71s``) ``<duration>``, the
folder's path ``.``; trailing spaces are dropped. A shown line ``...`` stands for any number of
printed lines.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from unittest import SkipTest

from sybil import Document, Example, Region
from sybil.evaluators.doctest import DocTestEvaluator
from sybil.evaluators.skip import Skipper
from sybil.parsers.abstract.doctest import DocTestStringParser
from sybil.parsers.markdown import SkipParser
from sybil.parsers.markdown.lexers import FencedCodeBlockLexer

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

_TIME = re.compile(
    r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d+)?Z?"  # ISO dates, with a space or a T
    r"|\b\d{8}T\d{6}(?:\.\d+)?Z"  # compact stamps (archive names)
    r"|\b1\d{12}\b"  # Unix time in milliseconds (the .times sidecar)
)
GIVEN = "<!-- given: what cat shows -->"
_DURATION = re.compile(r"\b\d+(?:\.\d+)?s\b")


@dataclass
class Block:
    """One fenced block as the parser saw it: its language, text and (for python) shown output."""

    language: str
    source: str
    shown: str | None = None
    given: bool = False


@dataclass
class Counts:
    """What a page's run did, for the test's report: blocks run, outputs compared, blocks skipped."""

    run: int = 0
    compared: int = 0
    skipped: list[tuple[int, str]] = field(default_factory=list)


class Workspace:
    """The fresh folder a page runs in, and the environment its commands see."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        (folder / "sessions").mkdir(parents=True)
        cloned_at = time.time_ns()
        for name in cloned_files():  # all written in one instant: `ls` orders the sessions by id
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / name, folder / name)
            os.utime(folder / name, ns=(cloned_at, cloned_at))
        keep = {"PATH", "LANG", "LC_ALL", "TMPDIR", "TERM", "SYSTEMROOT"}
        self.env = {key: value for key, value in os.environ.items() if key in keep}
        self.env.update(
            PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            HOME=str(folder),
            JSONL_SESSION_DIR="sessions",  # relative to the folder: paths print as a user sees them
            PYTHONPATH=str(ROOT),  # the checkout under test, even if another copy is installed
            GIT_CONFIG_NOSYSTEM="1",
            GIT_AUTHOR_NAME="Docs",
            GIT_AUTHOR_EMAIL="docs@example.com",
            GIT_COMMITTER_NAME="Docs",
            GIT_COMMITTER_EMAIL="docs@example.com",
            TZ="UTC",
            PYTHONUNBUFFERED="1",  # stdout and stderr interleave in the order a terminal shows
        )
        self.counts = Counts()
        for command in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "a fresh clone"]):
            subprocess.run(["git", *command], cwd=folder, env=self.env, check=True, capture_output=True)

    def normalise(self, lines: Iterable[str]) -> list[str]:
        folder = str(self.folder)
        out = []
        for line in lines:
            line = line.replace(folder + os.sep, "").replace(folder, ".")
            line = _DURATION.sub("<duration>", _TIME.sub("<time>", line))
            out.append(line.rstrip())
        return out

    def compare(self, shown: list[str], printed: list[str]) -> str | None:
        """None when the printed lines are the shown ones, else a report of both."""
        self.counts.compared += 1
        want, got = self.normalise(shown), self.normalise(printed)
        if _matches(want, got):
            return None
        return (
            "shown:\n"
            + "\n".join(f"  {line}" for line in want)
            + "\nprinted:\n"
            + "\n".join(f"  {line}" for line in got)
        )

    def run_python(self, example: Example) -> str | None:
        block: Block = example.parsed
        self.counts.run += 1
        source = "\n" * (example.line) + block.source  # tracebacks name the page's lines
        code = compile(source, example.path, "exec", dont_inherit=True)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(code, example.namespace)  # noqa: S102  (the page's own code: running it is the test)
        example.namespace.pop("__builtins__", None)
        if block.shown is None:
            return None
        return self.compare(block.shown.splitlines(), printed.getvalue().splitlines())

    def run_console(self, example: Example) -> str | None:
        block: Block = example.parsed
        self.counts.run += 1
        for command, shown in console_commands(block.source):
            given = block.given and re.fullmatch(r"cat [\w./-]+", command)
            target = self.folder / command[4:].strip()
            if given and not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text("".join(line + "\n" for line in shown), encoding="utf-8")
            done = subprocess.run(
                ["bash", "-c", command],
                cwd=self.folder,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                encoding="utf-8",
                errors="replace",  # a stray byte shows in the report instead of failing the decode
                timeout=60,
                check=False,
            )
            report = self.compare(shown, done.stdout.splitlines())
            if report is not None:
                return f"$ {command}  (exit {done.returncode})\n{report}"
        return None

    def refuse(self, example: Example) -> str:
        block: Block = example.parsed
        return (
            f"a ```{block.language or '(no language)'} block has no runner: make it a python or "
            'console block, or mark it with <!-- skip: next "why it cannot run" --> before it'
        )

    def evaluate(self, example: Example) -> str | None:
        block: Block = example.parsed
        if block.language == "python":
            return self.run_python(example)
        if block.language == "console":
            return self.run_console(example)
        return self.refuse(example)


def cloned_files() -> list[str]:
    """What a fresh clone has of ``examples/``, ``sessions/`` and ``.gitattributes`` (git's list)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "examples", "sessions", ".gitattributes"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    return [name for name in listed if name]


def console_commands(source: str) -> Iterator[tuple[str, list[str]]]:
    """``(command, shown lines)`` for each ``$ command`` of a console block."""
    command: str | None = None
    shown: list[str] = []
    for line in source.splitlines():
        if line.startswith("$ "):
            if command is not None:
                yield command, shown
            command, shown = line[2:], []
        elif command is None:
            raise ValueError(f"a console block must start with `$ command`, not {line!r}")
        else:
            shown.append(line)
    if command is not None:
        yield command, shown


def _matches(want: list[str], got: list[str]) -> bool:
    """Line by line; a shown ``...`` matches any number of lines (smallest match first)."""
    if not want:
        return not got
    if want[0] == "...":
        return any(_matches(want[1:], got[i:]) for i in range(len(got) + 1))
    return bool(got) and want[0] == got[0] and _matches(want[1:], got[1:])


class BlockParser:
    """Every fenced block of a page becomes one example, run by its workspace (see the module)."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.lexer = FencedCodeBlockLexer(language=r"[\w+-]*")
        self.doctests = DocTestStringParser(DocTestEvaluator(doctest.ELLIPSIS))

    def __call__(self, document: Document) -> Iterator[Region]:
        regions = list(self.lexer(document))
        index = 0
        while index < len(regions):
            region = regions[index]
            language, source = str(region.lexemes["language"]), str(region.lexemes["source"])
            if language == "python" and source.startswith(">>>"):
                for test in self.doctests(source, document.path):
                    test.adjust(region, region.lexemes["source"])
                    yield test
                self.workspace.counts.run += 1
                index += 1
                continue
            block = Block(language, source, given=document.text[: region.start].rstrip().endswith(GIVEN))
            end = region.end
            following = regions[index + 1] if index + 1 < len(regions) else None
            if (
                language == "python"
                and following is not None
                and following.lexemes["language"] == "text"
                and not document.text[region.end : following.start].strip()
            ):
                block.shown = str(following.lexemes["source"])
                end = following.end
                index += 1
            yield Region(region.start, end, block, self.workspace.evaluate)
            index += 1


def parse(path: Path, workspace: Workspace) -> Document:
    """The page with its blocks and skip directives, ready to run in order."""
    document = Document.parse(str(path), BlockParser(workspace), SkipParser())
    document.namespace["__name__"] = "__main__"
    return document


def is_directive(example: Example) -> bool:
    return isinstance(example.region.evaluator, Skipper)


def run_page(path: Path, workspace: Workspace) -> list[str]:
    """Run every block of a page in order, in the working directory (the caller's job: the
    workspace's folder); the failures, each with its line. Skipped blocks are counted."""
    failures: list[str] = []
    for example in parse(path, workspace):
        try:
            example.evaluate()
        except SkipTest as skipped:
            workspace.counts.skipped.append((example.line, str(skipped)))
        except Exception as error:  # noqa: BLE001  (every block runs, whatever an earlier one did)
            failures.append(f"line {example.line}: {type(error).__name__}: {error}")
    return failures
