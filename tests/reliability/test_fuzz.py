"""Fuzzing: random operation sequences against an in-memory model, random bytes against the reader.

Short here; ``stress/fuzz.py`` runs the same tests with many more examples
(``JSONL_SESSION_FUZZ_SCALE`` multiplies the example counts).

Seeded: the suite's hypothesis profile (``tests/conftest.py``) derandomizes every
property test, so each run tries the same examples and a failure comes back on the next run;
``pytest --hypothesis-seed=N`` explores other examples, reproducibly. A failure says which.
Before, a planted bug (NaN stored as ``null``) was caught by this file only now and then.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from jsonl_session import ItemNotStorableError, JSONLSession, MalformedLineError, TornTailWarning

SCALE = int(os.environ.get("JSONL_SESSION_FUZZ_SCALE", "1"))
BOM = b"\xef\xbb\xbf"

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
_values = st.recursive(
    _scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
items = st.dictionaries(st.text(max_size=10), _values, max_size=5)


class SessionMachine(RuleBasedStateMachine):
    """Any sequence of operations, through two objects on one file, matches a list in memory.

    Also models crashed writers (a fragment without a newline) and hand edits (a last line
    without its newline), and what the sidecar must then hold.
    """

    def __init__(self) -> None:
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="fuzz-"))
        self.sessions = [JSONLSession("fuzz", self.folder, durable=False) for _ in range(2)]
        self.model: list[dict[str, Any]] = []
        self.torn: bytes | None = None  # a fragment at the end of the file, not yet moved
        self.sidecar = b""

    @initialize()
    def quiet(self) -> None:
        warnings.simplefilter("ignore", TornTailWarning)

    def _written(self) -> None:
        """A writer ran: it moved any torn fragment to the sidecar first."""
        if self.torn is not None:
            self.sidecar += self.torn + b"\n"
            self.torn = None

    @rule(which=st.integers(0, 1), batch=st.lists(items, max_size=5))
    def add(self, which: int, batch: list[dict[str, Any]]) -> None:
        self.sessions[which].add_items_sync(batch)
        if batch:
            self._written()
        self.model.extend(batch)

    @rule(which=st.integers(0, 1), batch=st.lists(items, min_size=1, max_size=3))
    def add_async(self, which: int, batch: list[dict[str, Any]]) -> None:
        asyncio.run(self.sessions[which].add_items(batch))
        self._written()
        self.model.extend(batch)

    @rule(
        which=st.integers(0, 1),
        good=st.lists(items, max_size=2),
        bad=st.sampled_from([{"n": math.nan}, {"n": 2**70}, {"n": (1, 2)}, {1: "key"}, ["not a dict"]]),
    )
    def add_unstorable(self, which: int, good: list[dict[str, Any]], bad: Any) -> None:
        path = self.sessions[which].path
        before = path.read_bytes() if path.exists() else None
        with pytest.raises((ItemNotStorableError, TypeError)):
            self.sessions[which].add_items_sync([*good, bad])
        assert (path.read_bytes() if path.exists() else None) == before, "a refused batch wrote"

    @rule(which=st.integers(0, 1))
    def pop(self, which: int) -> None:
        expected = self.model.pop() if self.model else None
        assert self.sessions[which].pop_item_sync() == expected
        self._written()

    @rule(which=st.integers(0, 1))
    def clear(self, which: int) -> None:
        self.sessions[which].clear_session_sync()
        self.model.clear()
        self._written()  # clearing removes items, not a crashed writer's bytes

    @rule(which=st.integers(0, 1), limit=st.integers(0, 8))
    def get_newest(self, which: int, limit: int) -> None:
        expected = self.model[-limit:] if limit else []
        assert self.sessions[which].get_items_sync(limit=limit) == expected

    @rule(which=st.integers(0, 1), keep=st.integers(0, 5), extra=st.lists(items, max_size=2))
    def rewrite(self, which: int, keep: int, extra: list[dict[str, Any]]) -> None:
        with self.sessions[which].rewrite() as draft:
            assert draft.items == self.model
            draft.items = draft.items[:keep] + extra
        if self.model[:keep] + extra != self.model:
            self._written()
        self.model = self.model[:keep] + extra

    @rule(fragment=st.binary(max_size=30))
    def crash_mid_line(self, fragment: bytes) -> None:
        """A writer died mid-line, leaving bytes without a newline."""
        path = self.sessions[0].path
        data = path.read_bytes() if path.exists() else b""
        if data and not data.endswith(b"\n"):
            return  # the last line already lacks its newline
        torn = b'{"' + fragment.replace(b"\n", b"")
        try:
            whole = type(orjson.loads(torn)) is dict
        except orjson.JSONDecodeError:
            whole = False
        if whole:
            return  # by chance a whole object: that is the hand-edit rule's business
        path.write_bytes(data + torn)
        self.torn = torn

    @rule(item=items)
    def hand_edit_without_newline(self, item: dict[str, Any]) -> None:
        """An editor saved the last line without its newline: still an item."""
        path = self.sessions[0].path
        data = path.read_bytes() if path.exists() else b""
        if data and not data.endswith(b"\n"):
            return
        path.write_bytes(data + orjson.dumps(item))
        self.model.append(item)

    @invariant()
    def file_matches_model(self) -> None:
        assert self.sessions[1].get_items_sync() == self.model
        assert asyncio.run(self.sessions[0].get_items()) == self.model
        sidecar = self.sessions[0].sidecar_path
        assert (sidecar.read_bytes() if sidecar.exists() else b"") == self.sidecar

    def teardown(self) -> None:
        for session in self.sessions:
            session.close()
        shutil.rmtree(self.folder, ignore_errors=True)


SessionMachine.TestCase.settings = settings(
    max_examples=25 * SCALE,
    stateful_step_count=30,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_random_operation_sequences_match_a_list_in_memory = pytest.mark.timeout(120 * SCALE)(
    SessionMachine.TestCase
)


# -- random bytes fed to the reader -------------------------------------------------------------


def reference_items(data: bytes) -> list[Any] | int:
    """The format, written out plainly: the items, or the number of the first bad line."""
    data = data.removeprefix(BOM)
    *lines, tail = data.split(b"\n")
    result = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        value = _strict_json(line)
        if type(value) is not dict:
            return number
        result.append(value)
    if tail.strip():
        value = _strict_json(tail)
        if type(value) is dict:
            result.append(value)
    return result


def _strict_json(line: bytes) -> Any:
    def finite(text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            raise ValueError(text)
        return value

    def constant(name: str) -> Any:
        raise ValueError(name)

    try:
        value = json.loads(line.decode("utf-8"), parse_float=finite, parse_constant=constant)
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except (ValueError, RecursionError):
        return None
    return value


_line_parts = st.one_of(
    items.map(orjson.dumps),
    st.sampled_from(
        [
            b"",
            b"  ",
            b"\r",
            b"\t",
            b"{",
            b"}",
            b"[]",
            b"null",
            b"1",
            b'"s"',
            b"{}",
            b'{"a":NaN}',
            b'{"a":1e999}',
            b'{"a":123456789012345678901234}',
            b'{"a":"\\ud800"}',
            b"\x00",
            b"\xff",
            b"\xef\xbb\xbf",
            b"<<<<<<< HEAD",
            b'{"a":1,"a":2}',
            b'{"a":"\xc3"}',
            b'{"k":"\xe2\x80\xa8"}',
        ]
    ),
    st.binary(max_size=12),
)
file_bytes = st.one_of(
    st.binary(max_size=300),
    st.lists(st.lists(_line_parts, min_size=1, max_size=3).map(b"".join), max_size=8).map(b"\n".join),
    st.tuples(st.sampled_from([b"", BOM]), st.lists(_line_parts, max_size=6).map(b"\n".join)).map(b"".join),
)


@pytest.mark.timeout(120 * SCALE)
@settings(max_examples=300 * SCALE, deadline=None, database=None)
@given(data=file_bytes, limit=st.integers(1, 5))
def test_any_bytes_give_items_or_a_malformed_line_error_and_stay_unchanged(data: bytes, limit: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="fuzz-bytes-"))
    try:
        session = JSONLSession("fuzz", folder, durable=False, lock_timeout=5)
        session.path.write_bytes(data)
        lines = data.count(b"\n") + 1
        expected = reference_items(data)

        try:
            got: list[Any] | int = session.get_items_sync()
        except MalformedLineError as error:
            assert error.path == session.path and 1 <= (error.line or 0) <= lines
            got = error.line or 0
        assert got == expected, "the reader disagrees with the format's plain definition"

        try:
            newest = session.get_items_sync(limit=limit)
            assert isinstance(expected, int) or newest == expected[-limit:]
        except MalformedLineError as error:
            assert 1 <= (error.line or 0) <= lines
        assert session.path.read_bytes() == data, "reading changed the file"

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TornTailWarning)
            try:
                popped = session.pop_item_sync()
            except MalformedLineError:
                popped = "refused"
        after = session.path.read_bytes()
        assert data.startswith(after), "pop did anything but cut the end of the file"
        if popped == "refused":
            tail = data[data.rfind(b"\n") + 1 :]
            assert after in (data, data[: len(data) - len(tail)]), "a refused pop changed the file"
        elif isinstance(expected, list):
            assert popped == (expected[-1] if expected else None)
            assert session.get_items_sync() == expected[:-1]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_the_fuzz_tests_are_seeded(pytestconfig: pytest.Config) -> None:
    """Catches: a property test run with a fresh random seed each time (a failure that may not come back)."""
    read_bytes = test_any_bytes_give_items_or_a_malformed_line_error_and_stay_unchanged
    for each in (SessionMachine.TestCase.settings, read_bytes._hypothesis_internal_use_settings):
        assert each.derandomize == (pytestconfig.getoption("hypothesis_seed", None) is None)
        assert each.database is None
