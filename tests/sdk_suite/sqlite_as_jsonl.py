"""pytest plugin: the Agents SDK's own tests, with every ``SQLiteSession`` a ``JSONLSession``.

``.ci/sdk-tests`` runs a pinned release of the SDK's test suite (from its source distribution)
with ``-p sqlite_as_jsonl``. Before any test module is imported, the plugin replaces
``SQLiteSession`` where tests import it from (``agents``, ``agents.memory`` and
``agents.memory.sqlite_session``):

* ``SQLiteSession(id)`` or ``SQLiteSession(id, ":memory:")`` is a plain :class:`JSONLSession`
  in a fresh temporary folder (a new in-memory database is empty and private, so is the folder);
* ``SQLiteSession(id, "some/dir/x.db")`` is a :class:`JSONLSession` in ``some/dir/x.db.jsonl``,
  a folder beside the database, so two objects on one database path share their sessions;
* a test's subclass of ``SQLiteSession`` is a subclass of ``JSONLSession`` (which, like a
  subclass of the SDK's stores, gets no compaction hooks unless it overrides them);
* in the held-write tests (``tests/deferred_session_writes/``, 0.24+), the SDK's in-memory test
  session ``SimpleListSession`` (and the tests' subclasses of it) is a ``JSONLSession`` in a
  fresh folder: those tests build no ``SQLiteSession``, and they are the ones that pin down
  what a store must do with a turn the output guardrails held back. Only while those modules
  are imported: every other test file sees the SDK's own class.

Direct construction returns an object whose type is exactly ``JSONLSession``, the class users
get, so nothing is tested through a wrapper; ``isinstance(obj, SQLiteSession)`` stays true.
The SDK's own modules that imported the real class before the switch keep it (the plugin imports
``EncryptedSession`` first): its "exact ``SQLiteSession``" checks see a JSONL session as they
would in an application.

Tests that depend on SQLite itself are listed, each with a one-line reason, in the file that
``--jsonl-expected-failures`` names (``# reason`` after the test id). They are marked
``xfail(strict=True)``: one that starts passing fails the run, so the list stays exact, and a
listed test that is no longer collected fails it too.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from jsonl_session import JSONLSession

_state: dict[str, Any] = {"root": None, "real": None, "built": 0, "tests_with_sessions": 0, "tests": 0}


def _folder_for(db_path: str | Path) -> Path:
    """Where the sessions of one "database" live: a fresh folder for ``:memory:``, else beside it."""
    if str(db_path) == ":memory:":
        return Path(tempfile.mkdtemp(prefix="memory-", dir=_state["root"]))
    db = Path(db_path)
    return db.with_name(db.name + ".jsonl")


class _SubstituteType(type):
    """Builds a plain ``JSONLSession`` for ``SQLiteSession(...)``, a subclass for subclasses."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls is not SQLiteSession:
            return super().__call__(*args, **kwargs)
        session_id, directory, settings, db_path = _arguments(*args, **kwargs)
        _state["built"] += 1
        session = JSONLSession(session_id, directory, session_settings=settings)
        session.db_path = db_path  # type: ignore[attr-defined]  # what tests read back
        return session

    def __instancecheck__(cls, instance: Any) -> bool:
        if cls is SQLiteSession and type(instance) is JSONLSession:
            return True
        return super().__instancecheck__(instance)


def _arguments(
    session_id: str,
    db_path: str | Path = ":memory:",
    sessions_table: str = "agent_sessions",
    messages_table: str = "agent_messages",
    session_settings: Any = None,
) -> tuple[str, Path, Any, str | Path]:
    """``SQLiteSession.__init__``'s parameters; the table names have no meaning for files."""
    return session_id, _folder_for(db_path), session_settings, db_path


class JSONLListSession(JSONLSession):
    """``SimpleListSession(session_id="test", history=None)`` over a JSONL file in a fresh folder."""

    def __init__(self, session_id: str = "test", history: Any = None) -> None:
        _state["built"] += 1
        super().__init__(session_id, _folder_for(":memory:"))
        self._ignore_ids_for_matching = False  # read by the SDK's helpers, as on SimpleListSession
        if history:
            self.add_items_sync(list(history))

    @property
    def saved_items(self) -> list[Any]:
        """What ``SimpleListSession`` exposes for inspection: the stored items."""
        return self.get_items_sync()


_LIST_SESSION_TESTS = "deferred_session_writes"


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Any:
    """Import the held-write test modules (and their helpers) with ``SimpleListSession`` swapped."""
    if not (isinstance(collector, pytest.Module) and _LIST_SESSION_TESTS in collector.path.parts):
        return (yield)
    from tests.utils import simple_session  # type: ignore[import-not-found]  # the SDK's tests, from its sdist

    real = simple_session.SimpleListSession
    simple_session.SimpleListSession = JSONLListSession
    try:
        return (yield)
    finally:
        simple_session.SimpleListSession = real


class SQLiteSession(JSONLSession, metaclass=_SubstituteType):
    """What a test's ``class Counting(SQLiteSession)`` derives from: a JSONLSession, built as SQLite's."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        session_id, directory, settings, db_path = _arguments(*args, **kwargs)
        _state["built"] += 1
        super().__init__(session_id, directory, session_settings=settings)
        self.db_path = db_path


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--jsonl-expected-failures",
        default=None,
        help="file of test ids (one a line, '# reason' after each) expected to fail on a JSONL session",
    )


def pytest_configure(config: pytest.Config) -> None:
    import agents
    import agents.memory
    from agents.memory import sqlite_session

    try:  # bind the real class where the SDK checks for an exact SQLiteSession
        import agents.extensions.memory.encrypt_session
    except ImportError:  # no cryptography: the encryption tests are skipped anyway
        pass
    _state["root"] = tempfile.mkdtemp(prefix="sdk-suite-sessions-")
    _state["real"] = sqlite_session.SQLiteSession
    for module in (agents, agents.memory, sqlite_session):
        module.SQLiteSession = SQLiteSession  # type: ignore[attr-defined]


def pytest_unconfigure(config: pytest.Config) -> None:
    if _state["root"] is not None:
        shutil.rmtree(_state["root"], ignore_errors=True)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Any:
    """Count the tests that built at least one substitute session (printed at the end)."""
    before = _state["built"]
    try:
        return (yield)
    finally:
        _state["tests"] += 1
        _state["tests_with_sessions"] += _state["built"] > before


def pytest_terminal_summary(terminalreporter: Any) -> None:
    terminalreporter.write_line(
        f"sqlite_as_jsonl: {_state['tests_with_sessions']} of {_state['tests']} tests ran on a JSONL"
        f" session ({_state['built']} SQLiteSession objects were JSONL sessions)"
    )


def read_expected_failures(path: Path) -> dict[str, str]:
    """``{test id: reason}`` from a file of ``test id  # reason`` lines (blank and ``#`` lines skipped)."""
    expected: dict[str, str] = {}
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        test_id, _, reason = line.partition("#")
        if not reason.strip():
            raise pytest.UsageError(f"{path}:{number}: give a reason after '#': {line}")
        expected[test_id.strip()] = reason.strip()
    return expected


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    option = config.getoption("--jsonl-expected-failures")
    if not option:
        return
    expected = read_expected_failures(Path(option))
    seen = set()
    for item in items:
        reason = expected.get(item.nodeid)
        if reason is not None:
            seen.add(item.nodeid)
            item.add_marker(pytest.mark.xfail(reason=f"SQLite internals: {reason}", strict=True))
    missing = sorted(set(expected) - seen)
    if missing:
        raise pytest.UsageError(
            "listed as expected failures but not collected (renamed or removed in this SDK release?): "
            + ", ".join(missing)
        )
