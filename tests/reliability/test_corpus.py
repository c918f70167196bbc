"""Hostile and broken files: documented results, no crash or hang, the file never damaged.

Every file in ``tests/corpus/`` is opened as a session and read whole, read newest-first,
rewritten and popped. The expectations are in ``corpus_manifest.py`` (rendered into
``tests/corpus/README.md``). Files too big to commit are generated here into ``tmp_path``.
"""

from __future__ import annotations

import asyncio
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest

from jsonl_session import JSONLSession, MalformedLineError, TornTailWarning

from .corpus_manifest import CASES, CORPUS, README, Bad, Case, render_readme


def _open_copy(source: Path | bytes, sessions_dir: Path) -> JSONLSession:
    sessions_dir.mkdir(mode=0o700, exist_ok=True)
    session = JSONLSession("case", sessions_dir, durable=False, lock_timeout=5)
    if isinstance(source, Path):
        shutil.copyfile(source, session.path)
    else:
        session.path.write_bytes(source)
    return session


def _expect(session: JSONLSession, expected: Any, call: Any) -> Any:
    """Run ``call``; check it returns ``expected`` or raises the documented error."""
    if isinstance(expected, Bad):
        with pytest.raises(MalformedLineError) as caught:
            call()
        error = caught.value
        assert (error.path, error.line) == (session.path, expected.line)
        assert str(error).startswith(f"{session.path}:{expected.line}: ")
        assert len(str(error)) < 400, "the message quotes a snippet, not the whole line"
        return None
    result = call()
    assert result == expected
    return result


def _check_case(session: JSONLSession, case: Case, *, every_way: bool = True) -> None:
    """Read, rewrite unchanged, pop, then append; ``every_way`` adds the async and limit=1000 reads."""
    original = session.path.read_bytes()

    _expect(session, case.read, session.get_items_sync)
    _expect(session, case.newest, lambda: session.get_items_sync(limit=1))
    if every_way:
        _expect(session, case.read, lambda: asyncio.run(session.get_items()))
        _expect(session, case.read, lambda: session.get_items_sync(limit=1000))
    assert session.path.read_bytes() == original, "reading changed the file"

    def rewrite_unchanged() -> list[Any]:
        with session.rewrite() as draft:
            return list(draft.items)

    _expect(session, case.read, rewrite_unchanged)
    assert session.path.read_bytes() == original, "an unchanged rewrite touched the file"
    assert not session.sidecar_path.exists()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        popped = _expect(session, case.pop, session.pop_item_sync)
    after = session.path.read_bytes()
    kept = original[: len(original) - len(case.torn)] if case.torn is not None else original
    if case.torn is not None:
        assert session.sidecar_path.read_bytes() == case.torn + b"\n"
        assert [w.category for w in caught] == [TornTailWarning]
    else:
        assert not session.sidecar_path.exists()
    if isinstance(case.pop, Bad) or popped is None:
        assert after == kept, "a failed or empty pop changed more than the torn tail"
    else:
        assert kept.startswith(after) and after[-1:] in (b"", b"\n"), "pop must cut whole lines"
        if not isinstance(case.read, Bad):
            assert session.get_items_sync() == case.read[:-1]

    if not isinstance(case.read, Bad):  # later writes work and land on a line of their own
        session.add_items_sync([{"after": "pop"}])
        assert session.get_items_sync() == [*case.read[:-1], {"after": "pop"}]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", sorted(CASES))
def test_corpus_file_gives_its_documented_result(name: str, tmp_path: Path) -> None:
    _check_case(_open_copy(CORPUS / name, tmp_path / "sessions"), CASES[name])


def test_every_corpus_file_is_documented_and_the_readme_is_current() -> None:
    on_disk = {path.name for path in CORPUS.iterdir() if path.name != "README.md"}
    assert on_disk == set(CASES)
    assert len(on_disk) >= 25
    assert README.read_text(encoding="utf-8") == render_readme(), (
        "tests/corpus/README.md is stale: run python tests/reliability/corpus_manifest.py"
    )


_BIG = 50 * 1024 * 1024


@pytest.mark.timeout(90)
def test_a_50_mb_single_line_item_is_read_and_popped_whole(tmp_path: Path) -> None:
    item = {"role": "tool", "output": "x" * (_BIG - 30)}
    data = b'{"role":"user"}\n{"role":"tool","output":"' + item["output"].encode() + b'"}\n'
    assert len(data) > _BIG
    session = _open_copy(data, tmp_path / "sessions")
    del data
    case = Case([{"role": "user"}, item], [item], item, "")
    _check_case(session, case, every_way=False)


@pytest.mark.timeout(90)
def test_a_50_mb_malformed_line_is_refused_with_a_short_message(tmp_path: Path) -> None:
    data = b'{"n":1}\n{"output":"' + b"y" * _BIG + b"\n"  # unterminated string, complete line
    session = _open_copy(data, tmp_path / "sessions")
    del data
    _check_case(session, Case(Bad(2), Bad(2), Bad(2), ""), every_way=False)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("middle", [b"", b"123456789012345678901234567890"], ids=["plain", "long-number"])
def test_10000_deep_nesting_is_refused_not_a_recursion_error(tmp_path: Path, middle: bytes) -> None:
    depth = 10_000
    data = b'{"n":1}\n{"a":' + b"[" * depth + middle + b"]" * depth + b"}\n"
    session = _open_copy(data, tmp_path / "sessions")
    _check_case(session, Case(Bad(2), Bad(2), Bad(2), ""))
