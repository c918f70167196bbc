"""Start-up stays cheap: ``jsonl-session ls`` and ``import jsonl_session`` load only what they use.

Most of a short command's time is imports. asyncio, filelock (and the logging, socket and
ssl it pulls in), the file watcher, subprocess and tempfile are imported by the commands and
functions that need them, not on the way to ``ls``; orjson waits for the first decode.
Speed itself is measured by ``benchmarks/startup.py``; this test pins *what* is imported,
which does not depend on load. A command line that starts with its command is parsed by that
command's parser alone (the top-level parser is not built): the last tests check it gives the
namespace, help, errors and exit codes the whole grammar gives.
"""

from __future__ import annotations

import argparse
import os
import site
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_helpers import cli_env

import jsonl_session
from jsonl_session import JSONLSession, SessionDirectory
from jsonl_session.cli.parser import DIR_ENV, build_parser, command_parser, parse_arguments
from jsonl_session.session import listing_cache

NOT_FOR_LS = {
    "asyncio",
    "filelock",
    "watchfiles",
    "logging",
    "socket",
    "ssl",
    "subprocess",
    "tempfile",
    "secrets",
    "jsonl_session.watch",
    "jsonl_session.tools.check",
    "jsonl_session.transfer.backends",
    "jsonl_session.tools.secrets",
    # the session class and what it brings (settings, features, turns), fork lineage hashing
    "jsonl_session.session.store",
    "jsonl_session.session.settings",
    "jsonl_session.session.history_methods",
    "jsonl_session.history.turns",
    "jsonl_session.history.usage",
    "jsonl_session.history.lineage",
    # a folder without .meta files reads and imports nothing about metadata
    "jsonl_session.history.metadata",
    "jsonl_session.history.page_data",
    "jsonl_session.cli.meta",
    # the turn and lineage printers: only `ls --tree` prints one (a row's note is in cli.sessions)
    "jsonl_session.cli.history",
    "hashlib",
    # typing and shutil (argparse's help width) were ~7 ms of a 60 ms `ls` in a regular install
    "typing",
    "shutil",
}

PATHS_AND_TIMES = {"pathlib", "urllib.parse", "ipaddress", "datetime"}

NOT_FOR_A_WARM_LS = {
    # with the listing cache warm nothing is counted, decoded or read from a sidecar: the
    # readers, the writers they import, the item renderer and the shared libraries zlib and math
    "jsonl_session.core.reads",
    "jsonl_session.core.storage",
    "jsonl_session.core.sidecar_files",
    "jsonl_session.core.item_times",
    "jsonl_session.core.codec",
    "jsonl_session.render.item_text",
    "jsonl_session.history.titles",
    "zlib",
    "math",
    # nothing is locked either: the lock module's threads, weak references and flock wait
    "threading",
    "weakref",
    "fcntl",
    "jsonl_session.core.flock",
    "jsonl_session.core.fork_safety",
    "jsonl_session.core.transaction",
    # the cache's numbers are read through a memoryview: array (a C extension) only to write it,
    # and the folder's annotations need no collections.abc (~0.4 ms together)
    "array",
    "collections.abc",
}


def imported_by(*args: str, cwd: Path) -> set[str]:
    """Every module a real ``python -X importtime ...`` run imported (from its own report).

    The run skips ``site`` (``-S``) and finds the package and its dependencies on
    ``PYTHONPATH`` instead: an editable install's import hook, which ``site`` loads from a
    ``.pth`` file, imports pathlib itself and would hide whether we do.
    """
    package_root = str(Path(jsonl_session.__file__).parent.parent)
    search_path = os.pathsep.join([package_root, *site.getsitepackages()])
    completed = subprocess.run(
        [sys.executable, "-S", "-X", "importtime", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=cli_env(PYTHONPATH=search_path),
        check=True,
    )
    names = set()
    for line in completed.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    assert "jsonl_session" in names or args[:2] == ("-c", "pass"), completed.stderr[-2000:]
    return names


@pytest.mark.parametrize("json", [False, True], ids=["text", "json"])
def test_ls_imports_nothing_it_does_not_use(
    sessions_dir: Path, json: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    JSONLSession("convo", sessions_dir).add_items_sync([{"role": "user", "content": "hi"}])
    args = ["-m", "jsonl_session", "ls", "--dir", str(sessions_dir)] + (["--json"] if json else [])
    cold = imported_by(*args, cwd=sessions_dir.parent)
    monkeypatch.setattr(listing_cache, "RACY_NS", -(10**18))  # cache the session made just now
    SessionDirectory(sessions_dir).list()
    warm = imported_by(*args, cwd=sessions_dir.parent)
    for loaded in (cold, warm):
        assert "jsonl_session.session.folder" in loaded
        assert not loaded & NOT_FOR_LS, sorted(loaded & NOT_FOR_LS)
        # counting lines decodes nothing: orjson (and the uuid, decimal, dataclasses and inspect it
        # loads, ~14 ms) waits; --json writes its flat records with the standard json module, and
        # a default title is read from the first user message with it too
        heavy = {"orjson", "decimal", "uuid", "dataclasses", "inspect"}
        assert not loaded & heavy, sorted(loaded & heavy)
    assert not warm & NOT_FOR_A_WARM_LS, sorted(warm & NOT_FOR_A_WARM_LS)
    if not json:
        # the default title (the first user message) is read once, then kept in the listing cache
        assert "jsonl_session.history.titles" in cold
        assert "json" not in warm
        # pathlib (with urllib.parse and ipaddress) and datetime were ~8 ms of a 45 ms `ls` in a
        # regular install: the listing works on the names os.scandir gives
        assert not (cold | warm) & PATHS_AND_TIMES, sorted((cold | warm) & PATHS_AND_TIMES)


def test_grep_over_a_folder_imports_no_pathlib(sessions_dir: Path) -> None:
    # grep's start-up is most of a rare word's search (benchmarks/grep_vs_jq.py): it searches
    # the names the folder listing gives
    JSONLSession("convo", sessions_dir).add_items_sync([{"role": "user", "content": "zebra"}])
    loaded = imported_by(
        "-m", "jsonl_session", "grep", "zebra", "--dir", str(sessions_dir), cwd=sessions_dir.parent
    )
    assert "jsonl_session.tools.grep" in loaded
    assert not loaded & (PATHS_AND_TIMES - {"datetime"}), sorted(
        loaded & PATHS_AND_TIMES
    )  # orjson loads datetime


def test_importing_the_package_loads_only_its_errors(tmp_path: Path) -> None:
    loaded = imported_by("-c", "import jsonl_session", cwd=tmp_path)
    ours = {name for name in loaded if name.startswith("jsonl_session")}
    # the package, the layer that holds the errors, the errors, and what defers the rest
    assert ours == {
        "jsonl_session",
        "jsonl_session.core",
        "jsonl_session.core.deferred_imports",
        "jsonl_session.core.errors",
    }
    assert not loaded & PATHS_AND_TIMES, sorted(loaded & PATHS_AND_TIMES)


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = (action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    return dict(action.choices)


def test_a_command_built_alone_parses_and_helps_as_when_all_are_built() -> None:
    everything = subcommands(build_parser())
    assert len(everything) > 10
    for name, full in everything.items():
        alone = subcommands(build_parser(only=name))
        assert list(alone) == [name]
        for parser in (alone[name], command_parser(name)):  # within the top level, and without it
            assert parser.prog == full.prog
            assert parser.format_help() == full.format_help()
            assert parser.format_usage() == full.format_usage()
    not_a_command = build_parser(only="no-such-command")  # the usage error lists every command
    assert list(subcommands(not_a_command)) == list(everything)
    assert not_a_command.format_help() == build_parser().format_help()


COMMAND_LINES = [
    *([name] for name in subcommands(build_parser())),
    *([name, "-h"] for name in subcommands(build_parser())),
    ["ls", "--json", "--tag", "a", "--tag", "b", "--limit", "3", "--dir", "x", "--lock-timeout", "2"],
    ["ls", "--tree", "--user", "u", "--dir=y"],
    ["ls", "--js", "--d", "z"],  # abbreviations of the command's own options
    ["show", "convo", "-n", "5", "--turns", "--context-window", "100"],
    ["show", "convo", "--html", "-o", "page.html"],
    ["tail", "convo", "-f", "--timeout", "1.5"],
    ["add", "convo", "some text", "--role", "assistant"],
    ["add", "convo", "-"],
    ["meta", "convo", "--set", "k=v=w", "--unset", "x", "--no-owner", "--tag", "t"],
    ["grep", "pattern", "a", "b", "-i", "--role", "user"],
    ["grep", "--", "-pattern"],
    ["check", "--fix", "a.jsonl", "--max-item-bytes", "10"],
    ["mirror", "--to", "sqlite:///a.db", "--to", "sqlite:///b.db", "--once"],
    ["import", "sqlite:///a.db", "sqlite:///b.db", "--all"],
    ["export", "--all", "--to", "sqlite:///a.db"],
    ["serve", "--port", "0", "--header-timeout", "2"],
    ["prune", "--older-than", "1d", "-y"],
    ["restore", "--list"],
    ["fork", "a", "b", "--at-turn", "2"],
    ["rewind", "convo", "--turns", "2"],
    ["stats", "convo", "--turns"],
    # usage errors: the command's own (its usage), and the top level's (arguments nobody takes)
    ["ls", "--bogus"],
    ["ls", "extra"],
    ["ls", "--version"],
    ["ls", "--", "x"],
    ["ls", "--limit", "many"],
    ["ls", "--lock-timeout", "-1"],
    ["show", "convo", "--html", "--markdown"],
    ["fork", "a", "b", "--at", "1", "--at-turn", "2"],
    ["mirror", "--to"],
    ["meta", "convo", "--set", "novalue"],
    # not a command first: the top level parses it (and so the same way)
    [],
    ["--dir", "x", "ls", "--json"],
    ["--lock-timeout=3", "show", "convo"],
    ["-h"],
    ["--version"],
    ["no-such-command"],
    ["--di", "x", "ls"],
]


@pytest.mark.parametrize("argv", COMMAND_LINES, ids=" ".join)
@pytest.mark.parametrize("folder_env", [None, "from-env"])
def test_parsing_the_command_alone_is_parsing_the_whole_command_line(
    argv: list[str],
    folder_env: str | None,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # main() parses a command line that starts with its command with that command's parser alone;
    # the namespace (attribute order included), the help, the errors and exit codes are the ones
    # the whole grammar gives
    if folder_env is None:
        monkeypatch.delenv(DIR_ENV, raising=False)
    else:
        monkeypatch.setenv(DIR_ENV, folder_env)
    monkeypatch.setenv("COLUMNS", "100")

    def outcome(parse: Callable[[list[str]], argparse.Namespace]) -> tuple[object, ...]:
        try:
            parsed: object = list(vars(parse(list(argv))).items())
            code: object = None
        except SystemExit as exc:
            parsed, code = None, exc.code
        out, err = capsys.readouterr()
        return parsed, code, out, err

    whole = outcome(lambda argv: build_parser().parse_args(argv))
    assert outcome(parse_arguments) == whole
    assert whole[0] is not None or whole[1] in (0, 2)


@pytest.mark.parametrize("columns", ["50", "120"])
def test_help_is_as_wide_as_columns_says(tmp_path: Path, columns: str) -> None:
    # the help formatter reads the width itself (argparse's default imports shutil for it)
    completed = subprocess.run(
        [sys.executable, "-m", "jsonl_session", "grep", "-h"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=cli_env(COLUMNS=columns),
        check=True,
    )
    options = completed.stdout.split("options:")[1].split("Example:")[0]
    widest = max(len(line) for line in options.splitlines())
    assert int(columns) - 20 < widest <= int(columns) - 2
