"""``grep`` asks the system's ``grep -F`` which lines to decode, and gives the same answer without it.

The answer must never depend on which engine found the candidate lines: a property test runs
both on the same files (escapes, case variants, BOMs, CRLF, torn tails); real processes show
that a missing or misbehaving ``grep`` on PATH falls back to Python and still answers.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path

import pytest
from cli_helpers import cli_env, run, wait_until_at, write_lines
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_session import JSONLSession
from jsonl_session.cli.commands import main
from jsonl_session.core.locking import FileHandle
from jsonl_session.tools import grep as search
from jsonl_session.tools import system_grep

LINES = [
    '{"role": "user", "content": "first"}',
    '{"role": "user", "content": "a needle here"}',
    "not json, but a needle",
    '{"role": "assistant", "content": "NEEDLE again"}',
]
EXPECTED = "many:2: user: a needle here\n"


def _found(paths: list[Path], words: list[bytes], *, ignore_case: bool) -> list[tuple[int, int, bytes]]:
    """``(position, line number, line)`` of what the system's grep found, every group read in turn."""
    run = system_grep.start(paths, words, ignore_case=ignore_case)
    assert run is not None
    with run:
        found = [(at, number, line) for group in run.groups() for at, number, _, line in group.records()]
        assert not any(group.failed for group in run.groups())
    return found


def test_this_machine_has_a_grep_that_the_search_uses(tmp_path: Path) -> None:
    # without this, the tests below could pass on the Python fallback alone
    path = write_lines(tmp_path / "many.jsonl", LINES)
    found = _found([path], [b"needle"], ignore_case=True)
    assert found == [(0, 2, LINES[1].encode()), (0, 3, LINES[2].encode()), (0, 4, LINES[3].encode())]


def test_files_split_between_several_greps_come_back_in_order(tmp_path: Path) -> None:
    paths = [write_lines(tmp_path / f"s{n}.jsonl", ["x"] * n + [f"needle {n}"]) for n in range(9)]
    found = _found(paths, [b"needle"], ignore_case=False)
    assert found == [(n, n + 1, f"needle {n}".encode()) for n in range(9)]


def test_each_line_found_says_where_it_ends(tmp_path: Path) -> None:
    # where a search stopped for memory, it goes on from there in Python
    data = b"\xef\xbb\xbfneedle 1\nx\nneedle 3\nneedle 4"
    (tmp_path / "s.jsonl").write_bytes(data)
    run = system_grep.start([tmp_path / "s.jsonl"], [b"needle"], ignore_case=False)
    assert run is not None
    with run:
        (group,) = run.groups()
        ends = [(number, end) for _, number, end, _ in group.records()]
    assert ends == [(1, data.index(b"\nx") + 1), (3, data.index(b"\nneedle 4") + 1), (4, len(data) + 1)]


def test_a_folder_search_without_grep_on_path_answers_the_same(sessions_dir: Path) -> None:
    write_lines(sessions_dir / "many.jsonl", LINES)
    with_grep = run(sessions_dir, "grep", "needle")
    without = run(sessions_dir, "grep", "needle", env=cli_env(PATH=str(sessions_dir / "no-such-bin")))
    assert (with_grep.code, with_grep.out, with_grep.err) == (0, EXPECTED, "")
    assert (without.code, without.out, without.err) == (0, EXPECTED, "")


@pytest.mark.parametrize(
    "script",
    [
        "echo 'not what grep prints'",  # status 0, output of another shape
        "echo 'grep: out of memory' >&2; exit 2",  # an error
        'printf "%s\\000%s\\n" "$PWD/elsewhere.jsonl" "1:{}"',  # a file it was not asked about
        "echo 'grep: unrecognized option --null' >&2; exit 1",  # an old busybox: says 'no match'
    ],
    ids=["garbage", "error", "other-file", "option-refused-as-no-match"],
)
def test_a_grep_that_misbehaves_is_not_trusted(sessions_dir: Path, tmp_path: Path, script: str) -> None:
    write_lines(sessions_dir / "many.jsonl", LINES)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "grep"
    fake.write_text(f"#!/bin/sh\n{script}\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    result = run(sessions_dir, "grep", "needle", env=cli_env(PATH=path))
    assert (result.code, result.out, result.err) == (0, EXPECTED, "")


# Pieces that make the pre-filter's hard cases: the word whole and split, case variants, the
# characters -i folds to ASCII letters, quotes and backslashes that JSON escapes.
PIECES = [
    "zanzibar",
    "zan",
    "zibar",
    "ZANZIBAR",
    "Zanzi",
    "ſ",
    "\u212a",
    "ı",
    "İ",
    "é",
    " ",
    '"',
    "\\",
    "bar",
]


def _json_line(text: str, escape_mask: int) -> str:
    """An item whose content is ``text``, some characters written as ``\\uXXXX`` as other tools may."""
    chars = [
        f"\\u{ord(char):04x}"
        if escape_mask >> (n % 31) & 1 and ord(char) < 0x10000
        else json.dumps(char)[1:-1]
        for n, char in enumerate(text)
    ]
    return '{"role": "user", "content": "' + "".join(chars) + '"}'


def _grep_output(directory: Path, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["grep", *args, "--dir", str(directory)])
    return code, out.getvalue()


@settings(max_examples=150, deadline=None)
@given(
    texts=st.lists(
        st.tuples(st.lists(st.sampled_from(PIECES), max_size=8), st.integers(0, 2**31 - 1)), max_size=6
    ),
    term=st.sampled_from(["zanzibar", "bar", "is", "k", "zan zibar"]),
    ignore_case=st.booleans(),
    newline=st.sampled_from(["\n", "\r\n"]),
    bom=st.booleans(),
    torn=st.booleans(),
)
def test_both_engines_give_the_same_answer(
    texts: list[tuple[list[str], int]], term: str, ignore_case: bool, newline: str, bom: bool, torn: bool
) -> None:
    lines = [_json_line("".join(pieces), mask) for pieces, mask in texts]
    data = ("\ufeff" if bom else "") + newline.join(lines) + (newline if lines and not torn else "")
    args = [term, *(["-i"] if ignore_case else [])]
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        (directory / "s.jsonl").write_bytes(data.encode())
        system = _grep_output(directory, *args)
        os.environ[system_grep.DISABLE_VARIABLE] = "1"
        try:
            python = _grep_output(directory, *args)
        finally:
            del os.environ[system_grep.DISABLE_VARIABLE]
    assert system == python
    assert not system_grep._unusable


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["system grep", "python"])
@pytest.mark.parametrize("files", [1, 12])
def test_a_search_holds_a_bounded_part_of_its_hits_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str, files: int
) -> None:
    # 22 MB in which every line matches, in one session or in twelve: memory is flat in the hits
    line = json.dumps({"role": "user", "content": "weather " + "x" * 200}).encode()
    for n in range(files):
        (tmp_path / f"s{n}.jsonl").write_bytes((line + b"\n") * (96_000 // files))
    if engine == "python":
        monkeypatch.setenv(system_grep.DISABLE_VARIABLE, "1")
    out = io.StringIO()
    tracemalloc.start()
    try:
        with contextlib.redirect_stdout(out):
            hits = sum(
                1
                for _ in search.search([(f"s{n}", tmp_path / f"s{n}.jsonl") for n in range(files)], "weather")
            )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert hits == 96_000 // files * files
    # the candidate lines held at once (HELD_BYTES, 4 MB, as bytes objects in a list) and a
    # piece or two of the file or of grep's output: not the 22 MB
    assert peak < search.HELD_BYTES * 3, peak


# Pieces of lines where a phrase may be: as it is, joined from parts of a list, escaped, folded.
PHRASE_PIECES = [
    "sunny",
    "weather",
    "sunny weather",
    "ſunny",
    "SUNNY",
    " ",
    "x",
    "[",
    "]",
    r"\u0020",
    '"',
    ",",
]


@settings(max_examples=150, deadline=None)
@given(
    texts=st.lists(st.lists(st.sampled_from(PHRASE_PIECES), max_size=8), max_size=8),
    ignore_case=st.booleans(),
)
def test_the_lines_the_system_grep_hands_back_for_a_phrase_may_hold_it(
    texts: list[list[str]], ignore_case: bool
) -> None:
    # they are not looked at again in Python: grep's patterns must keep exactly what
    # may_hold_phrase keeps, and never less than Python's own search keeps
    prefilter = search.prefilter_for("sunny weather", ignore_case=ignore_case)
    assert prefilter is not None
    lines = ["".join(pieces).encode() for pieces in texts]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.jsonl"
        path.write_bytes(b"\n".join(lines) + b"\n")
        words, extended = prefilter.grep_patterns()
        run = system_grep.start([path], words, ignore_case=ignore_case, extended=extended)
        assert run is not None
        with run:
            by_grep = [number for group in run.groups() for _, number, _, _ in group.records()]
    data = b"\n".join(lines) + b"\n"
    by_python = [number for number, _, _ in prefilter.lines(data)]
    assert all(prefilter.may_hold_phrase(lines[number - 1]) for number in by_grep)
    assert set(by_python) <= set(by_grep)
    assert set(by_grep) - set(by_python) <= {
        number for number, line in enumerate(lines, 1) if prefilter.may_match(line) is False
    }  # grep's extra lines hold a character -i folds, without the word: decoded for nothing


def _needle_in_a_b_and_c(sessions_dir: Path) -> None:
    for name in ("a", "b", "c"):
        JSONLSession(name, sessions_dir).add_items_sync([{"role": "user", "content": f"needle in {name}"}])


@pytest.mark.parametrize("engine", [{}, {system_grep.DISABLE_VARIABLE: "1"}], ids=["system grep", "python"])
def test_waiting_for_one_busy_session_holds_no_other_session_locked(
    sessions_dir: Path, engine: dict[str, str]
) -> None:
    # A grep waiting (up to --lock-timeout) for a session another process writes must not keep
    # the sessions before it locked meanwhile: their writers would time out.
    _needle_in_a_b_and_c(sessions_dir)
    busy = sessions_dir / "b.jsonl"
    holder = FileHandle(busy)
    with holder.locked(write=True, create=False):
        command = [sys.executable, "-m", "jsonl_session", "grep", "needle", "--dir", str(sessions_dir)]
        grep = subprocess.Popen(
            [*command, "--lock-timeout", "5"], env=cli_env(**engine), stdout=subprocess.PIPE, text=True
        )
        try:
            wait_until_at(grep, busy, done_with=sessions_dir / "a.jsonl")  # waits for b from now on
            JSONLSession("a", sessions_dir, lock_timeout=2).add_items_sync(
                [{"role": "user", "content": "more"}]
            )
            JSONLSession("c", sessions_dir, lock_timeout=2).add_items_sync(
                [{"role": "user", "content": "more"}]
            )
        finally:
            grep.kill()
            grep.communicate()
    holder.close()


@pytest.mark.parametrize("engine", [{}, {system_grep.DISABLE_VARIABLE: "1"}], ids=["system grep", "python"])
def test_named_sessions_print_what_they_found_before_the_one_that_fails(
    sessions_dir: Path, engine: dict[str, str]
) -> None:
    _needle_in_a_b_and_c(sessions_dir)
    holder = FileHandle(sessions_dir / "b.jsonl")
    with holder.locked(write=True, create=False):
        result = run(
            sessions_dir, "grep", "needle", "a", "b", "c", "--lock-timeout", "0.2", env=cli_env(**engine)
        )
    holder.close()
    assert result.out == "a:1: user: needle in a\n"
    assert result.code == 1 and "b.jsonl: lock not acquired within 0.2s" in result.err


@pytest.mark.parametrize("engine", [{}, {system_grep.DISABLE_VARIABLE: "1"}], ids=["system grep", "python"])
def test_a_named_session_deleted_while_grep_waits_for_it_is_an_error_not_a_silent_skip(
    sessions_dir: Path, engine: dict[str, str]
) -> None:
    """Catches: ``grep needle a b c`` with ``b`` deleted by the process that held its lock while
    grep waited for it: ``b`` was skipped without a word, and grep said 0 (found)."""
    out, err, code = _grep_while_b_is_deleted(sessions_dir, engine, "a", "b", "c")
    assert out == "a:1: user: needle in a\n"
    assert code == 1
    assert err.count("\n") == 1 and "b.jsonl: no such session (deleted while grep ran)" in err


@pytest.mark.parametrize("engine", [{}, {system_grep.DISABLE_VARIABLE: "1"}], ids=["system grep", "python"])
def test_a_session_deleted_while_a_folder_grep_waits_for_it_is_simply_gone(
    sessions_dir: Path, engine: dict[str, str]
) -> None:
    out, err, code = _grep_while_b_is_deleted(sessions_dir, engine)
    assert (out, err, code) == ("a:1: user: needle in a\nc:1: user: needle in c\n", "", 0)


def _grep_while_b_is_deleted(sessions_dir: Path, engine: dict[str, str], *ids: str) -> tuple[str, str, int]:
    """``grep needle [IDS]``, ``b`` deleted by the process holding its lock once grep waits for it."""
    _needle_in_a_b_and_c(sessions_dir)
    busy = sessions_dir / "b.jsonl"
    holder = FileHandle(busy)
    command = [sys.executable, "-m", "jsonl_session", "grep", "needle", *ids, "--dir", str(sessions_dir)]
    with holder.locked(write=True, create=False):
        grep = subprocess.Popen(
            [*command, "--lock-timeout", "30"],
            env=cli_env(**engine),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        # The system grep's first batch tries b without waiting, and keeps it open while it reads a.
        wait_until_at(grep, busy, done_with=sessions_dir / "a.jsonl")
        busy.unlink()  # under its lock, as ``rm`` deletes a session
    holder.close()
    out, err = grep.communicate(timeout=60)
    return out, err, grep.returncode


def test_a_grep_run_with_sigchld_ignored_still_answers(sessions_dir: Path) -> None:
    # SIGCHLD ignored (inherited from a parent that set it) makes waitpid fail with ECHILD
    write_lines(sessions_dir / "many.jsonl", LINES)
    result = subprocess.run(
        [sys.executable, "-m", "jsonl_session", "grep", "needle", "--dir", str(sessions_dir)],
        capture_output=True,
        text=True,
        env=cli_env(),
        preexec_fn=lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN),
        check=False,
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, EXPECTED, "")


def test_only_the_first_bom_of_a_file_is_skipped_by_either_engine(sessions_dir: Path) -> None:
    line = json.dumps({"role": "user", "content": "needle after two BOMs"}).encode()
    bom = b"\xef\xbb\xbf"
    write_lines(sessions_dir / "boms.jsonl", [bom + bom + line, line])
    for engine in ({}, {system_grep.DISABLE_VARIABLE: "1"}):
        result = run(sessions_dir, "grep", "needle", env=cli_env(**engine))
        assert (result.code, result.out) == (0, "boms:2: user: needle after two BOMs\n"), engine
