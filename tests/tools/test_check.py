"""``check_file`` and ``jsonl-session check``: every problem named by file and line; only safe fixes."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from cli_helpers import run, write_lines
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_session import JSONLSession
from jsonl_session.core import codec, reads, scanner
from jsonl_session.tools.check import check_file

CALL = '{"type":"function_call","name":"lookup","arguments":"{}","call_id":"call_1"}'
OUTPUT = '{"type":"function_call_output","call_id":"call_1","output":"ok"}'
ORPHAN_OUTPUT = '{"type":"function_call_output","call_id":"call_9","output":"?"}'
USER = '{"role":"user","content":"hi"}'


def test_a_healthy_file_has_no_problems(sessions_dir: Path) -> None:
    path = write_lines(sessions_dir / "ok.jsonl", [USER, "", CALL, OUTPUT + "\r"])
    assert check_file(path) == []
    # A valid last item without its newline is an item, not a torn tail.
    write_lines(path, [USER, CALL, OUTPUT], end=b"")
    assert check_file(path) == []


def test_every_kind_of_problem_is_reported_with_its_line(sessions_dir: Path) -> None:
    path = write_lines(
        sessions_dir / "bad.jsonl",
        [USER, '{"role": "user", oops}', "[1, 2]", CALL, ORPHAN_OUTPUT, '{"role":"assistant","con'],
        end=b"",
    )
    problems = [(problem.line, problem.reason, problem.fixable) for problem in check_file(path)]
    assert problems[0][0] == 2 and problems[0][1].startswith("not valid JSON (") and "oops" in problems[0][1]
    assert problems[1] == (3, "not a JSON object (a list): '[1, 2]'", False)
    assert problems[2] == (4, "function_call 'call_1' (lookup) has no function_call_output", False)
    assert problems[3] == (5, "function_call_output 'call_9' answers no function_call", False)
    assert problems[4] == (6, "torn tail: 24 bytes after the last newline", True)
    assert str(check_file(path)[1]) == f"{path}:3: not a JSON object (a list): '[1, 2]'"


def test_fix_moves_only_the_torn_tail_to_the_sidecar(sessions_dir: Path) -> None:
    torn = b'{"role":"assistant","con'
    path = write_lines(sessions_dir / "t.jsonl", [USER, "[1]", torn], end=b"")
    problems = check_file(path, fix=True)
    assert [(problem.line, problem.fixed) for problem in problems] == [(2, False), (3, True)]
    assert problems[1].reason.endswith("moved to t.jsonl.torn")
    assert path.read_bytes() == (USER + "\n[1]\n").encode()  # the bad complete line is left for a human
    assert (sessions_dir / "t.jsonl.torn").read_bytes() == torn + b"\n"
    assert [problem.line for problem in check_file(path)] == [2]


def test_a_missing_file_is_a_problem(sessions_dir: Path) -> None:
    assert [problem.reason for problem in check_file(sessions_dir / "nope.jsonl")] == ["no such file"]


def test_check_command_exit_codes_fix_and_json(sessions_dir: Path) -> None:
    JSONLSession("good", sessions_dir).add_items_sync(
        [json.loads(USER), json.loads(CALL), json.loads(OUTPUT)]
    )
    clean = run(sessions_dir, "check")
    assert (clean.code, clean.out, clean.err) == (0, "", "checked 1 file: 0 problems\n")

    bad = write_lines(sessions_dir / "bad.jsonl", [USER, "[1]", CALL, '{"ro'], end=b"")
    found = run(sessions_dir, "check")
    assert found.code == 1
    assert found.out.splitlines() == [
        f"{bad}:2: not a JSON object (a list): '[1]'",
        f"{bad}:3: function_call 'call_1' (lookup) has no function_call_output",
        f"{bad}:4: torn tail: 4 bytes after the last newline",
    ]
    assert found.err == "checked 2 files: 3 problems\n"

    fixed = run(sessions_dir, "check", "bad", "--fix", "--json")
    assert fixed.code == 1  # two problems need a human
    rows = [json.loads(line) for line in fixed.out.splitlines()]
    assert [(row["line"], row["fixed"]) for row in rows] == [(2, False), (3, False), (4, True)]
    assert (sessions_dir / "bad.jsonl.torn").read_bytes() == b'{"ro\n'

    # Only a torn tail: --fix repairs everything, so the exit code is 0.
    write_lines(sessions_dir / "torn.jsonl", [USER, '{"ro'], end=b"")
    assert run(sessions_dir, "check", "torn", "--fix").code == 0
    assert run(sessions_dir, "check", "torn", "good").code == 0

    # Files by path (as pre-commit passes them), and unknown ids.
    by_path = run(None, "check", str(sessions_dir / "good.jsonl"), str(bad))
    assert by_path.code == 1 and by_path.out.count(str(bad)) == 2
    unknown = run(sessions_dir, "check", "nope")
    assert unknown.code == 1 and "nope: no such session" in unknown.err


def test_a_symlink_is_reported_not_followed(sessions_dir: Path, tmp_path: Path) -> None:
    outside = write_lines(tmp_path / "outside.jsonl", [USER])
    sessions_dir.mkdir()
    link = sessions_dir / "link.jsonl"
    link.symlink_to(outside)
    problems = check_file(link, fix=True)
    assert [(problem.line, problem.fixed) for problem in problems] == [(None, False)]
    assert "symlink" in problems[0].reason
    assert outside.read_bytes() == (USER + "\n").encode()


def test_merge_conflict_markers_are_named_with_their_lines(tmp_path: Path) -> None:
    path = tmp_path / "merged.jsonl"
    path.write_bytes(
        b'{"role":"user","content":"hi"}\n<<<<<<< HEAD\n{"role":"assistant","content":"a"}\n'
        b'=======\n{"role":"assistant","content":"b"}\n>>>>>>> other\n'
    )
    reasons = [(p.line, p.reason.split(":")[0]) for p in check_file(path)]
    assert reasons == [
        (2, "git merge conflict marker '<<<<<<<'"),
        (4, "git merge conflict marker '======='"),
        (6, "git merge conflict marker '>>>>>>>'"),
    ]


PIECE_LINES = [
    USER.encode(),
    CALL.encode(),
    OUTPUT.encode(),
    ORPHAN_OUTPUT.encode(),
    b'{"type":"function_call","name":"other","arguments":"{}","call_id":"call_2"}',
    b'{"role": "user", oops}',
    b"[1, 2]",
    b"<<<<<<< HEAD",
    b"   ",
    b"",
    b'{"n": 123456789012345678901234567890}',
    b'{"content": "' + b"x" * 300 + b'"}',
    USER.encode() + b"\r",
]
PIECE_TAILS = [b"", USER.encode(), b'{"role": "us', b"  "]


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(st.sampled_from(PIECE_LINES), max_size=20),
    tail=st.sampled_from(PIECE_TAILS),
    bom=st.booleans(),
    piece=st.sampled_from([1, 2, 7, 64]),
)
def test_checking_in_pieces_finds_what_checking_the_whole_file_finds(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], tail: bytes, bom: bool, piece: int
) -> None:
    """``check`` reads a piece at a time (memory stays flat): tiny pieces cut every line, BOM and CRLF."""
    data = (codec.BOM if bom else b"") + b"".join(line + b"\n" for line in lines) + tail
    path = tmp_path_factory.mktemp("pieces") / "s.jsonl"
    path.write_bytes(data)
    whole = [str(problem) for problem in check_file(path)]  # 1 MB pieces: one scan of everything
    original = reads._SPLIT_PIECE
    reads._SPLIT_PIECE = piece
    try:
        assert [str(problem) for problem in check_file(path)] == whole
        fd = os.open(path, os.O_RDONLY)
        try:
            scans = list(reads.scan_file(fd, len(data)))
        finally:
            os.close(fd)
    finally:
        reads._SPLIT_PIECE = original
    reference = scanner.scan_lines(data)
    found = [(line.number, line.start, line.end, line.data) for scan in scans for line in scan.lines]
    assert found == [(line.number, line.start, line.end, line.data) for line in reference.lines]
    assert sum(scan.newlines for scan in scans) == reference.newlines
    assert (scans[-1].pending, scans[-1].consumed) == (reference.pending, reference.consumed)
    assert path.read_bytes() == data  # checking never changes the file


def test_check_names_orphaned_sidecars_and_their_temporary_files_and_fix_removes_them(
    sessions_dir: Path,
) -> None:
    """``rm sessions/gone.jsonl`` by hand leaves its metadata; a killed sidecar write leaves a copy."""
    from jsonl_session.tools.check import stray_temp_problems

    JSONLSession("kept", sessions_dir).add_items_sync([{"role": "user", "content": "hi"}])
    for name in ("gone.jsonl.run", "gone.jsonl.usage", "gone.jsonl.lineage", "kept.jsonl.usage"):
        (sessions_dir / name).write_text("{}\n")
    killed_run_write = sessions_dir / ".gone.jsonl.run.0badc0de.tmp"
    killed_run_write.write_text("{}\n")
    found = {problem.path.name: problem for problem in stray_temp_problems(sessions_dir)}
    assert sorted(found) == [
        ".gone.jsonl.run.0badc0de.tmp",
        "gone.jsonl.lineage",
        "gone.jsonl.run",
        "gone.jsonl.usage",
    ]
    assert "its session gone.jsonl no longer exists" in found["gone.jsonl.run"].reason
    assert all(problem.fixable and not problem.fixed for problem in found.values())

    result = run(sessions_dir, "check")
    assert result.code == 1 and f"{sessions_dir / 'gone.jsonl.usage'}: " in result.out
    named = [problem.path.name for problem in check_file(sessions_dir / "gone.jsonl")]
    assert named == [
        "gone.jsonl",
        ".gone.jsonl.run.0badc0de.tmp",
        "gone.jsonl.lineage",
        "gone.jsonl.run",
        "gone.jsonl.usage",
    ]
    fixed = run(sessions_dir, "check", "--fix")
    assert fixed.code == 0, fixed.out
    assert sorted(path.name for path in sessions_dir.iterdir()) == [
        "kept.jsonl",
        "kept.jsonl.times",
        "kept.jsonl.usage",
    ]
    assert run(sessions_dir, "check").code == 0


def test_a_torn_tail_is_reported_fixable_and_once_moved_fixed(sessions_dir: Path) -> None:
    """Catches (mutation testing): the moved torn tail reported as not fixable."""
    path = write_lines(sessions_dir / "t.jsonl", ['{"role":"user","content":"hi"}', '{"role":"assi'], end=b"")
    [found] = check_file(path)
    assert (found.line, found.fixable, found.fixed) == (2, True, False)
    [moved] = check_file(path, fix=True)
    assert (moved.line, moved.fixable, moved.fixed) == (2, True, True)
    assert moved.reason.endswith("moved to t.jsonl.torn")
    assert check_file(path) == []


@pytest.mark.parametrize(
    ("item", "reason"),
    [
        ({"type": [1]}, "its type is a JSON array, not a string"),
        ({"type": {"a": 1}}, "its type is a JSON object, not a string"),
        ({"type": 5}, "its type is a int, not a string"),
        (
            {"type": "function_call", "call_id": ["x"], "name": "f", "arguments": "{}"},
            "function_call has a call_id that is a JSON array, not a string",
        ),
    ],
)
def test_a_type_or_call_id_of_the_wrong_kind_is_named_by_its_kind(
    sessions_dir: Path, item: dict[str, object], reason: str
) -> None:
    """Catches (mutation testing): a list named by its Python type (the kind test turned around)."""
    path = write_lines(sessions_dir / "k.jsonl", [json.dumps(item)])
    assert [(problem.line, problem.reason) for problem in check_file(path)] == [(1, reason)]


def test_many_brackets_are_not_a_deep_line_and_a_deep_one_is_named(sessions_dir: Path) -> None:
    """Catches (mutation testing): the depth walk's result ignored once the bracket count passed."""
    wide = {"role": "user", "content": [[] for _ in range(codec.MAX_DEPTH + 50)]}  # many, not deep
    deep: object = "bottom"
    for _ in range(codec.MAX_DEPTH + 1):
        deep = [deep]
    lines = [json.dumps(wide), json.dumps({"role": "user", "content": deep})]
    path = write_lines(sessions_dir / "d.jsonl", lines)
    [problem] = check_file(path)
    assert problem.line == 2 and problem.reason.startswith(f"nested {codec.MAX_DEPTH + 2} levels deep")


def test_a_sidecar_left_by_a_removed_session_is_fixable_and_once_removed_fixed(sessions_dir: Path) -> None:
    """Catches (mutation testing): the removed sidecar reported as not fixable."""
    sessions_dir.mkdir()
    (sessions_dir / "gone.jsonl.usage").write_text('{"requests": 1}\n')
    [found] = check_file(sessions_dir / "gone.jsonl")[1:]
    assert (found.fixable, found.fixed) == (True, False)
    [removed] = check_file(sessions_dir / "gone.jsonl", fix=True)[1:]
    assert (removed.fixable, removed.fixed) == (True, True)
    assert not (sessions_dir / "gone.jsonl.usage").exists()


def test_an_unreadable_paused_run_does_not_stop_the_check(sessions_dir: Path) -> None:
    """A broken ``.run`` sidecar never stops the check of its session."""
    path = write_lines(sessions_dir / "p.jsonl", ['{"role":"user","content":"hi"}'])
    (sessions_dir / "p.jsonl.run").write_text("{not json")
    assert all(problem.line is None for problem in check_file(path))


def test_a_problem_is_a_value(sessions_dir: Path) -> None:
    """Catches (mutation testing): a problem that could be changed once reported (and not hashed)."""
    [problem] = check_file(sessions_dir / "missing.jsonl")
    with pytest.raises(AttributeError):
        problem.fixed = True  # type: ignore[misc]
    assert {problem} == set(check_file(sessions_dir / "missing.jsonl"))


def test_what_cannot_be_read_is_named_with_the_systems_words(sessions_dir: Path) -> None:
    """Catches (mutation testing): the error escaping the check, or shown as its whole repr."""
    (sessions_dir / "d.jsonl").mkdir(parents=True)
    [problem] = check_file(sessions_dir / "d.jsonl")
    assert (problem.line, problem.reason) == (None, "not checked: Is a directory")


def test_an_item_exactly_as_deep_as_can_be_written_passes(sessions_dir: Path) -> None:
    """Catches (mutation testing): the deepest item a rewrite can write reported as too deep."""
    deep: object = "bottom"
    for _ in range(codec.MAX_DEPTH - 1):  # in the item's object: MAX_DEPTH levels
        deep = [deep]
    item = {"role": "user", "content": deep, "extra": []}  # enough brackets to be walked
    assert codec.depth_of(item) == codec.MAX_DEPTH
    JSONLSession("d", sessions_dir).add_items_sync([item])  # the library writes it
    assert check_file(sessions_dir / "d.jsonl") == []


def test_fix_leaves_a_hand_written_file_alone_when_nothing_is_fixable(sessions_dir: Path) -> None:
    """``--fix`` with only problems a person must decide does not rewrite the file: its hand
    formatting stays (a rewrite would write every line in the library's compact form)."""
    path = write_lines(sessions_dir / "h.jsonl", [json.dumps(json.loads(USER)), json.dumps(json.loads(CALL))])
    before = path.read_bytes()
    [problem] = check_file(path, fix=True)
    assert (problem.line, problem.fixed) == (2, False)
    assert path.read_bytes() == before


def test_a_call_a_paused_run_waits_on_is_not_reported(sessions_dir: Path) -> None:
    """Catches (mutation testing): the paused run's call ids compared with the call's type."""
    path = write_lines(sessions_dir / "p.jsonl", [USER, CALL])
    run_file = sessions_dir / "p.jsonl.run"
    run_file.write_text(json.dumps({"pending": [{"tool": "lookup", "call_id": "call_1"}], "state": {}}))
    assert check_file(path) == []
    run_file.unlink()
    assert [problem.line for problem in check_file(path)] == [2]


def test_a_folder_check_names_kept_edits_of_gone_sessions_only(sessions_dir: Path) -> None:
    """A kept edit of a live session is that session's problem (named once, by its check).
    Catches (mutation testing): the gone-session filter turned around."""
    from jsonl_session.tools.check import stray_temp_problems
    from jsonl_session.tools.leftovers import kept_edit_name

    JSONLSession("live", sessions_dir).add_items_sync([json.loads(USER)])
    live_copy = kept_edit_name(sessions_dir / "live.jsonl")
    gone_copy = kept_edit_name(sessions_dir / "gone.jsonl")
    for copy in (live_copy, gone_copy):
        copy.write_text(USER + "\n")
    assert [problem.path for problem in stray_temp_problems(sessions_dir)] == [gone_copy]
    result = run(sessions_dir, "check")
    assert result.code == 1
    assert (result.out.count(f"{live_copy}: "), result.out.count(f"{gone_copy}: ")) == (1, 1)


@pytest.mark.parametrize("command", [["check"], ["redact"], ["check", "--secrets"], ["check", "--fix"]])
@pytest.mark.parametrize("named", ["by id", "by path"])
def test_a_fifo_or_folder_in_a_sessions_place_is_named_for_what_it_is(
    sessions_dir: Path, command: list[str], named: str
) -> None:
    """Not "no such file", and never a wait on the FIFO (nobody writes to it: an open would block)."""
    sessions_dir.mkdir(parents=True, exist_ok=True)
    os.mkfifo(sessions_dir / "pipe.jsonl")
    (sessions_dir / "dir.jsonl").mkdir()
    for name, what in (("pipe", "a FIFO (named pipe)"), ("dir", "a directory")):
        target = name if named == "by id" else str(sessions_dir / f"{name}.jsonl")
        result = run(sessions_dir, *command, target)
        assert result.code == 1 and "internal error" not in result.err
        assert f"{sessions_dir / name}.jsonl: is {what}, not a session file" in result.err + result.out
    assert (sessions_dir / "pipe.jsonl").exists() and (sessions_dir / "dir.jsonl").is_dir()


def test_a_folder_check_names_what_is_named_like_a_session_but_is_not_a_file(sessions_dir: Path) -> None:
    write_lines(sessions_dir / "ok.jsonl", [USER])
    os.mkfifo(sessions_dir / "pipe.jsonl")
    (sessions_dir / "dir.jsonl").mkdir()
    result = run(sessions_dir, "check")
    assert result.code == 1
    assert result.out.splitlines() == [
        f"{sessions_dir / 'dir.jsonl'}: is a directory, not a session file; `check --fix` leaves it",
        f"{sessions_dir / 'pipe.jsonl'}: is a FIFO (named pipe), not a session file; `check --fix` leaves it",
    ]
    assert run(sessions_dir, "check", "--fix").code == 1 and (sessions_dir / "pipe.jsonl").exists()


def test_check_fix_keeps_the_times_of_the_items_it_keeps(sessions_dir: Path) -> None:
    """Dropping an orphaned reasoning item rewrites the session: the others keep when they were added."""
    import zlib
    from datetime import datetime, timezone

    session = JSONLSession("s", sessions_dir)
    session.add_items_sync(
        [
            json.loads(USER),
            {"type": "reasoning", "id": "rs_1", "summary": []},
            json.loads(USER),
            {"role": "assistant", "content": "hello"},
        ]
    )
    days = [1_577_836_800_000 + n * 86_400_000 for n in range(4)]  # each added on its own day of 2020
    lines = session.path.read_bytes().splitlines()
    session.path.with_name("s.jsonl.times").write_bytes(
        b"".join(b"%013d %08x\n" % (ms, zlib.crc32(line)) for ms, line in zip(days, lines))
    )
    assert run(sessions_dir, "check", "--fix").code == 0
    kept = session.get_items_with_times_sync()
    assert [item.get("type") for item, _ in kept] == [None, None, None]
    assert [when for _, when in kept] == [
        datetime.fromtimestamp(days[n] / 1000, timezone.utc) for n in (0, 2, 3)
    ]


def test_check_fix_keeps_what_it_drops_in_the_dropped_sidecar_which_rm_removes_and_prune_archives(
    sessions_dir: Path,
) -> None:
    """An orphaned reasoning item (its summary, its encrypted content) is the model's only record
    of that thinking: ``check --fix`` moves it to ``<file>.jsonl.dropped``, as torn tails go to
    ``.torn``, never just deletes it."""
    reasoning = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "The refund left on Monday."}],
        "encrypted_content": "gAAAAB" + "x" * 64,
    }
    session = JSONLSession("s", sessions_dir)
    session.add_items_sync([json.loads(USER), reasoning, json.loads(USER)])
    fixed = run(sessions_dir, "check", "--fix")
    dropped = sessions_dir / "s.jsonl.dropped"
    assert fixed.code == 0 and f"dropped; kept in {dropped.name}" in fixed.out
    [record] = [json.loads(line) for line in dropped.read_bytes().splitlines()]
    assert (record["line"], record["item"]) == (2, reasoning)
    assert record["reason"].startswith("reasoning 'rs_1' is not followed")
    assert record["dropped_at"].endswith("Z") and dropped.stat().st_mode & 0o777 == 0o600
    assert [item.get("type") for item in session.get_items_sync()] == [None, None]

    # append-only: a second drop adds its line, the first stays
    session.add_items_sync([{**reasoning, "id": "rs_2"}])
    assert run(sessions_dir, "check", "--fix").code == 0
    assert [json.loads(line)["item"]["id"] for line in dropped.read_bytes().splitlines()] == ["rs_1", "rs_2"]
    assert run(sessions_dir, "check").code == 0  # the sidecar is not a problem

    # prune archives it with the session, restore brings it back, rm removes it
    old = 1_577_836_800  # 2020
    for written in (session.path, session.path.with_name("s.jsonl.times"), dropped):
        os.utime(written, (old, old))
    kept = dropped.read_bytes()
    assert run(sessions_dir, "prune", "--older-than", "30d", "--yes").code == 0
    assert not dropped.exists() and not session.path.exists()
    assert run(sessions_dir, "restore", "s").code == 0
    assert dropped.read_bytes() == kept
    assert run(sessions_dir, "rm", "s", "--yes").code == 0
    assert not dropped.exists()


def test_a_dropped_sidecar_left_by_a_session_deleted_by_hand_is_named_and_never_removed(
    sessions_dir: Path,
) -> None:
    """``check --fix`` removes a gone session's other sidecars, but not the copies it made itself."""
    session = JSONLSession("s", sessions_dir)
    session.add_items_sync([json.loads(USER), {"type": "reasoning", "id": "rs_1", "summary": []}])
    assert run(sessions_dir, "check", "--fix").code == 0
    dropped = sessions_dir / "s.jsonl.dropped"
    kept = dropped.read_bytes()
    session.path.unlink()  # by hand, not `rm`
    result = run(sessions_dir, "check", "--fix")
    assert result.code == 1
    assert f"{dropped}: dropped sidecar left behind: its session s.jsonl no longer exists; " in result.out
    assert "`check --fix` leaves it" in result.out and dropped.read_bytes() == kept
    assert not (sessions_dir / "s.jsonl.times").exists()  # the others go


def test_the_library_names_a_fifo_or_folder_in_a_sessions_place_too(sessions_dir: Path) -> None:
    from jsonl_session import UnsafePathError
    from jsonl_session.tools.secrets import scan_file

    sessions_dir.mkdir(parents=True, exist_ok=True)
    os.mkfifo(sessions_dir / "pipe.jsonl")
    (sessions_dir / "dir.jsonl").mkdir()
    reasons = {"pipe": "is a FIFO (named pipe), not a session file", "dir": "not checked: Is a directory"}
    for name, what in (("pipe", "a FIFO (named pipe)"), ("dir", "a directory")):
        path = sessions_dir / f"{name}.jsonl"
        assert [problem.reason for problem in check_file(path)] == [reasons[name]]
        with pytest.raises(UnsafePathError, match=re.escape(f"is {what}, not a session file")):
            scan_file(path)
