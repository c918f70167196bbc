"""What each hostile or broken file in ``tests/corpus/`` must do: the single source of truth.

``tests/corpus/README.md`` is rendered from this table (``python tests/reliability/corpus_manifest.py``
rewrites it) and a test checks that the two agree, so the documented
result of every file is the tested one.

For each file: what ``get_items()``, ``get_items(limit=1)`` and ``pop_item()`` return, or
``Bad(n)`` for a :class:`~jsonl_session.MalformedLineError` naming line ``n`` of the file;
and what a writer moves to the ``.torn`` sidecar, if anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
README = CORPUS / "README.md"


@dataclass(frozen=True)
class Bad:
    """A ``MalformedLineError`` naming this 1-based line."""

    line: int

    def __str__(self) -> str:
        return f"MalformedLineError, line {self.line}"


@dataclass(frozen=True)
class Case:
    """The documented behaviour of one corpus file."""

    read: list[dict[str, Any]] | Bad
    newest: list[dict[str, Any]] | Bad
    pop: dict[str, Any] | None | Bad
    why: str
    torn: bytes | None = None
    """The torn tail a writer moves to the sidecar (without the newline added there)."""


_N12 = [{"n": 1}, {"n": 2}]
_PNG = (CORPUS / "png_renamed.jsonl").read_bytes()
_HUGE = [{"id": 123456789012345678901234567890}, {"id": -int("9" * 400)}, {"id": 18446744073709551616}]

CASES: dict[str, Case] = {
    # -- accepted -----------------------------------------------------------------------------
    "empty.jsonl": Case([], [], None, "an empty session"),
    "blank_lines.jsonl": Case([], [], None, "blank lines (spaces, tabs, \\r, \\f) are skipped"),
    "valid_basic.jsonl": Case(
        [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
            {"type": "function_call", "name": "f", "arguments": "{}"},
        ],
        [{"type": "function_call", "name": "f", "arguments": "{}"}],
        {"type": "function_call", "name": "f", "arguments": "{}"},
        "the control: three ordinary items",
    ),
    "bom.jsonl": Case(
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
        [{"role": "assistant", "content": "hello"}],
        {"role": "assistant", "content": "hello"},
        "a UTF-8 BOM at the start of the file (Windows editors) is ignored",
    ),
    "crlf.jsonl": Case(
        [{"n": 1}, {"n": 2}, {"n": 3}], [{"n": 3}], {"n": 3}, "CRLF line endings and a blank CRLF line"
    ),
    "no_final_newline.jsonl": Case(
        _N12, [{"n": 2}], {"n": 2}, "a hand-edited last line without its newline is an item"
    ),
    "torn_tail.jsonl": Case(
        _N12,
        [{"n": 2}],
        {"n": 2},
        "a writer killed mid-line: the partial line is skipped, then moved to the sidecar",
        torn=b'{"role":"assistant","cont',
    ),
    "nul_tail_after_power_loss.jsonl": Case(
        _N12,
        [{"n": 2}],
        {"n": 2},
        "NUL bytes after the last line (ext4 after a power loss) are a torn tail",
        torn=b"\x00" * 64,
    ),
    "cr_only_line_endings.jsonl": Case(
        [],
        [],
        None,
        "old-Mac CR-only endings: no newline at all, so the whole file is one torn line; "
        "nothing is returned and the first writer moves it to the sidecar (not lost)",
        torn=b'{"n":1}\r{"n":2}\r',
    ),
    "duplicate_keys.jsonl": Case(
        [{"role": "system", "content": "x"}],
        [{"role": "system", "content": "x"}],
        {"role": "system", "content": "x"},
        "duplicate keys: the last one wins (as in json.loads and JavaScript)",
    ),
    "huge_integers.jsonl": Case(
        _HUGE, _HUGE[-1:], _HUGE[-1], "integers beyond 64 bits come back exact, not as rounded floats"
    ),
    "line_separator_u2028.jsonl": Case(
        [{"content": "a\u2028b\u2029c\x85d"}, {"content": "😀 naïve"}],
        [{"content": "😀 naïve"}],
        {"content": "😀 naïve"},
        "U+2028/U+2029/U+0085 inside strings are not line breaks (only \\n is)",
    ),
    "bom_before_unterminated_last_line.jsonl": Case(
        [{"n": 1}],
        [{"n": 1}],
        {"n": 1},
        "a BOM mid-file before a last line without newline: torn, not an item (it was once read "
        "as one, and the next append then made the file unreadable; found by fuzzing)",
        torn=b'\xef\xbb\xbf{"n":2}',
    ),
    # -- refused with MalformedLineError (file and line), file untouched ---------------------
    "bom_on_second_line.jsonl": Case(Bad(2), Bad(2), Bad(2), "a BOM anywhere but the file's start"),
    "bom_on_second_line_with_long_number.jsonl": Case(
        Bad(2), Bad(2), Bad(2), "the same, on the exact-integer parser's path (regression)"
    ),
    "nul_in_line.jsonl": Case(
        Bad(2), [{"n": 3}], {"n": 3}, "a NUL byte inside a line; limit=1 and pop only read line 3"
    ),
    "nul_only_line.jsonl": Case(Bad(2), Bad(2), Bad(2), "a line of NUL bytes is not blank"),
    "binary_garbage.jsonl": Case(
        Bad(1),
        Bad(2),
        Bad(2),
        "every byte value twice; the bytes after the last newline are torn",
        torn=bytes(range(11, 256)),
    ),
    "png_renamed.jsonl": Case(
        Bad(1), Bad(2), Bad(2), "a PNG image renamed to .jsonl", torn=_PNG[_PNG.rindex(b"\n") + 1 :]
    ),
    "invalid_utf8.jsonl": Case(Bad(2), Bad(2), Bad(2), "Latin-1 text: invalid UTF-8"),
    "utf8_encoded_surrogate.jsonl": Case(Bad(1), Bad(1), Bad(1), "a surrogate encoded as UTF-8 bytes"),
    "utf16_le.jsonl": Case(
        Bad(1), Bad(2), Bad(2), "a UTF-16 file (Windows 'Unicode'); its last NUL byte is torn", torn=b"\x00"
    ),
    "utf16_with_long_number.jsonl": Case(
        Bad(1), Bad(1), Bad(1), "UTF-16 with a long digit run: once misread as CJK text (regression)"
    ),
    "lone_surrogate_escape.jsonl": Case(Bad(1), Bad(1), Bad(1), "a \\ud800 escape with no low surrogate"),
    "lone_surrogate_with_long_number.jsonl": Case(
        Bad(1), Bad(1), Bad(1), "the same, on the exact-integer path: once accepted (regression)"
    ),
    "nan.jsonl": Case(Bad(2), Bad(2), Bad(2), "NaN is not JSON"),
    "infinity.jsonl": Case(Bad(1), Bad(2), Bad(2), "Infinity and -Infinity are not JSON"),
    "nan_with_long_number.jsonl": Case(Bad(1), Bad(1), Bad(1), "NaN on the exact-integer path"),
    "float_overflow.jsonl": Case(Bad(1), Bad(1), Bad(1), "1e400 would read as infinity"),
    "float_overflow_with_long_number.jsonl": Case(
        Bad(1), Bad(1), Bad(1), "the same, on the exact-integer path: once read as inf (regression)"
    ),
    "integer_beyond_python_limit.jsonl": Case(
        Bad(1), Bad(1), Bad(1), "a 5,000-digit integer exceeds Python's int parsing limit (4,300 digits)"
    ),
    "array_line.jsonl": Case(Bad(2), Bad(2), Bad(2), "a JSON array is not an item"),
    "scalar_lines.jsonl": Case(Bad(1), Bad(4), Bad(4), "strings, numbers, null, true are not items"),
    "merge_conflict.jsonl": Case(
        Bad(2), Bad(6), Bad(6), "git conflict markers: fix the merge by hand, nothing guesses"
    ),
    "glued_objects.jsonl": Case(Bad(1), Bad(1), Bad(1), "two objects on one line"),
    "trailing_garbage.jsonl": Case(Bad(1), Bad(1), Bad(1), "text after the object"),
    "truncated_middle_line.jsonl": Case(
        Bad(1), [{"n": 2}], {"n": 2}, "a cut-off line in the middle (a bad hand edit)"
    ),
    "comments.jsonl": Case(Bad(1), [{"n": 1}], {"n": 1}, "// comments are not JSON"),
    "single_quotes.jsonl": Case(Bad(1), Bad(1), Bad(1), "a Python repr, not JSON"),
    "raw_control_char.jsonl": Case(Bad(1), Bad(1), Bad(1), "a raw tab inside a string"),
    "deep_nesting_2000.jsonl": Case(
        Bad(1), Bad(1), Bad(1), "2,000 nested arrays (the parser stops at 1,024)"
    ),
    "deep_nesting_with_long_number.jsonl": Case(
        Bad(1), Bad(1), Bad(1), "the same with a long number: once a RecursionError (regression)"
    ),
    "malformed_last_line.jsonl": Case(Bad(3), Bad(3), Bad(3), "an unfinished object on a complete line"),
    "malformed_line_then_torn_tail.jsonl": Case(
        Bad(2),
        Bad(2),
        Bad(2),
        "a bad last line under a torn tail: pop fails on line 2, after moving the torn tail "
        "to the sidecar as every writer does",
        torn=b'{"n":3,"cont',
    ),
}


def _result(value: object) -> str:
    if isinstance(value, Bad):
        return f"error, line {value.line}"
    if isinstance(value, list):
        return f"{len(value)} item{'s' if len(value) != 1 else ''}"
    return "None" if value is None else "the item"


def render_readme() -> str:
    """The corpus README, generated from :data:`CASES`."""
    rows = [
        f"| `{name}` | {_result(case.read)} | {_result(case.newest)} | {_result(case.pop)} | "
        f"{'yes' if case.torn is not None else ''} | {case.why} |"
        for name, case in CASES.items()
    ]
    return "\n".join(
        [
            "# Hostile and broken session files",
            "",
            "Each file here is copied into a temporary folder and opened as a session by",
            "`tests/reliability/test_corpus.py`. For every one: reading never crashes or hangs and never",
            "changes the file; a refused file raises `MalformedLineError` naming the file and line; a",
            "failed `pop_item()` leaves the file as it was. The exact expectations live in",
            "`tests/reliability/corpus_manifest.py`; this table is generated from it",
            '(`python tests/reliability/corpus_manifest.py`). "error, line n" is a `MalformedLineError`',
            "for line n. `limit=1` and `pop` read only the newest lines, so they may succeed where a",
            'full read fails. "torn": bytes a writer moves to `<file>.torn`.',
            "",
            "Generated at test time (too big to commit): a 50 MB single-line item, a 50 MB malformed",
            "line, and 10,000-deep nesting with and without a long number.",
            "",
            "| file | `get_items()` | `limit=1` | `pop_item()` | torn | why |",
            "|---|---|---|---|---|---|",
            *rows,
            "",
        ]
    )


if __name__ == "__main__":
    README.write_text(render_readme(), encoding="utf-8")
    print(f"wrote {README}")
