"""``show`` and ``tail`` on a file with a bad line: what can be read is shown, the bad line flagged.

As ``show --html``, ``--markdown`` and ``textconv`` do: one unreadable line must not hide a
whole transcript. The warning names ``check``; conflict markers get ``check``'s merge advice.
"""

from __future__ import annotations

from pathlib import Path

from cli_helpers import run, write_lines

GOOD = ['{"role":"user","content":"hi"}', '{"role":"assistant","content":"yo"}']


def test_show_and_tail_show_the_good_lines_and_flag_the_bad_one(sessions_dir: Path) -> None:
    path = write_lines(sessions_dir / "bad.jsonl", [GOOD[0], "{oops", GOOD[1]])
    shown = run(sessions_dir, "show", "bad")
    assert shown.code == 0, shown
    assert shown.out == (
        "   1  user: hi\n   2  ! unreadable line (not valid JSON): {oops\n   3  assistant: yo\n"
    )
    warning = (
        f"jsonl-session: warning: {path}: 1 unreadable line shown as it is (line 2); "
        "`jsonl-session check` says why\n"
    )
    assert shown.err == warning
    tail = run(sessions_dir, "tail", "bad", "-n", "2")
    assert (tail.code, tail.out, tail.err) == (
        0,
        "! line 2: unreadable line (not valid JSON): {oops\nassistant: yo\n",
        warning,
    )
    assert run(sessions_dir, "tail", "bad", "-n", "1").out == "assistant: yo\n"
    as_json = run(sessions_dir, "show", "bad", "--json")  # JSON Lines cannot carry a bad line
    assert as_json.code == 1 and "bad.jsonl:2: not valid JSON" in as_json.err


def test_conflict_markers_get_the_merge_advice(sessions_dir: Path) -> None:
    path = write_lines(
        sessions_dir / "merged.jsonl",
        [
            GOOD[0],
            "<<<<<<< HEAD",
            GOOD[1],
            "=======",
            '{"role":"assistant","content":"hey"}',
            ">>>>>>> alice",
        ],
    )
    shown = run(sessions_dir, "show", "merged")
    assert (
        shown.code == 0 and "   2  ! unreadable line (git merge conflict marker): <<<<<<< HEAD\n" in shown.out
    )
    assert shown.err == (
        f"jsonl-session: warning: {path}: git merge conflict markers (line 2, 4, 6): resolve the merge, "
        "then edit; `jsonl-session check` lists them\n"
    )
