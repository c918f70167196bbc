"""pytest plugin for jsonl-session, registered through the ``pytest11`` entry point.

Installed with the package, so these fixtures are available in every test without imports:

* ``jsonl_sessions``: a fresh, empty :class:`~jsonl_session.SessionDirectory` in a temporary folder.
* ``open_session_fixture(path, mode="copy")``: a committed session file as a session. The
  test works on a temporary copy, so the committed file is never modified: ``mode="copy"``
  lets the test write to the copy, ``mode="readonly"`` makes every write raise
  :class:`ReadOnlySessionError`. After the test the committed file is checked to be
  byte-identical.
* ``agent_recording``: record and replay agent runs (see :mod:`jsonl_session.tools.replay`). By
  default it replays ``<test folder>/recordings/<test module>/<test name>.jsonl`` offline;
  with ``--record-agents`` or ``JSONL_SESSION_RECORD=1`` it calls the real model and writes
  that file (only when the test passes).

Example:
    .. code-block:: python

        async def test_answers_follow_up(open_session_fixture, agent_recording):
            session = open_session_fixture("sessions/tool_call.jsonl")
            agent = Agent(name="support", model=agent_recording.model("gpt-4.1"))
            result = await Runner.run(agent, "And when will it arrive?", session=session)
            assert "4 December" in result.final_output
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

from .core.errors import ReadOnlySessionError, SessionNotFoundError
from .core.names import filename_for, id_for
from .session.folder import SessionDirectory
from .session.store import JSONLSession
from .tools.replay import Recording, ReplayMismatch

RECORD_ENV = "JSONL_SESSION_RECORD"
_reports = pytest.StashKey[dict[str, pytest.TestReport]]()


class ReadOnlySession(JSONLSession):
    """A session whose every write raises :class:`ReadOnlySessionError`; reads work as usual.

    Example:
        >>> session = ReadOnlySession("tool_call", "sessions")      # doctest: +SKIP
        >>> session.add_items_sync([{"role": "user", "content": "hi"}])  # doctest: +SKIP
        Traceback (most recent call last):
        jsonl_session.core.errors.ReadOnlySessionError: sessions/tool_call.jsonl is read-only ...
    """

    def _refuse(self, operation: str) -> ReadOnlySessionError:
        return ReadOnlySessionError(
            f"{self.path} is read-only in this test ({operation} would change it); "
            "use open_session_fixture(path, mode='copy') for a writable copy"
        )

    async def add_items(self, items: Any, *, wrapper: Any = None) -> None:
        raise self._refuse("add_items")

    async def pop_item(self, *, wrapper: Any = None) -> Any:
        raise self._refuse("pop_item")

    async def clear_session(self, *, wrapper: Any = None) -> None:
        raise self._refuse("clear_session")

    def add_items_sync(self, items: Any) -> None:
        raise self._refuse("add_items")

    def pop_item_sync(self) -> Any:
        raise self._refuse("pop_item")

    def clear_session_sync(self) -> None:
        raise self._refuse("clear_session")

    def rewrite(self) -> Any:
        raise self._refuse("rewrite")

    def replace_items_sync(self, items: Any) -> None:
        raise self._refuse("replace_items")

    def repair_sync(self) -> bytes | None:
        raise self._refuse("repair")


def pytest_addoption(parser: pytest.Parser) -> None:
    if not _installed("pytest_timeout"):
        # A project's `timeout = ...` (pytest-timeout's setting, in this package's own pytest
        # configuration too) must not warn as unknown where that plugin is not installed.
        parser.addini("timeout", "pytest-timeout's per-test limit; ignored: pytest-timeout is not installed")
    group = parser.getgroup("jsonl-session")
    group.addoption(
        "--record-agents",
        action="store_true",
        default=None,
        help=(
            "agent_recording: run against the real model and (re)write the recordings "
            f"(or set {RECORD_ENV}=1)"
        ),
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """Keep each phase's report so fixtures can tell in teardown whether the test passed."""
    outcome = yield
    report = outcome.get_result()
    item.stash.setdefault(_reports, {})[report.when] = report
    if call.excinfo is not None and call.excinfo.errisinstance(ReplayMismatch):
        # The diff is the whole story; the traceback through the SDK's runner is noise.
        report.longrepr = f"{call.excinfo.typename}: {call.excinfo.value}"


@pytest.fixture
def jsonl_sessions(tmp_path: Path) -> SessionDirectory:
    """A fresh, empty session directory in a temporary folder (not durable: tests need no fsync).

    Example:
        >>> def test_remembers(jsonl_sessions):                      # doctest: +SKIP
        ...     session = jsonl_sessions.open("chat")
    """
    return SessionDirectory(tmp_path / "sessions", durable=False)


@pytest.fixture
def open_session_fixture(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[..., JSONLSession]]:
    """Open a committed session file on a temporary copy; the committed file is never modified.

    Call it with a path (relative paths are resolved against pytest's rootdir) and
    ``mode="copy"`` (writes go to the copy) or ``mode="readonly"`` (writes raise).

    Example:
        >>> def test_summary(open_session_fixture):                   # doctest: +SKIP
        ...     session = open_session_fixture("sessions/tool_call.jsonl", mode="readonly")
        ...     assert session.get_items_sync()[0]["role"] == "user"
    """
    originals: list[tuple[Path, str]] = []

    def open_fixture(
        path: str | os.PathLike[str], mode: Literal["copy", "readonly"] = "copy"
    ) -> JSONLSession:
        if mode not in ("copy", "readonly"):
            raise ValueError(f"mode must be 'copy' or 'readonly', not {mode!r}")
        source = Path(path)
        if not source.is_absolute():
            source = request.config.rootpath / source
        if not source.is_file():
            raise SessionNotFoundError(source, "no such session file")
        session_id = id_for(source.name)
        if session_id is None:
            raise ValueError(f"{source}: a session file is named <id>.jsonl")
        content = source.read_bytes()  # one read: the copy is exactly what the check compares with
        copy_dir = tmp_path / "session_fixtures" / str(len(originals))
        copy_dir.mkdir(parents=True)
        (copy_dir / source.name).write_bytes(content)
        originals.append((source, hashlib.sha256(content).hexdigest()))
        session_class = ReadOnlySession if mode == "readonly" else JSONLSession
        return session_class(session_id, copy_dir, durable=False)

    yield open_fixture
    changed = [str(source) for source, digest in originals if _digest(source) != digest]
    if changed:
        pytest.fail(f"committed session file(s) changed during the test: {', '.join(changed)}", pytrace=False)


@pytest.fixture
def agent_recording(request: pytest.FixtureRequest) -> Iterator[Recording]:
    """Record this test's agent run once, replay it offline afterwards.

    The recording is ``<test folder>/recordings/<test module>/<test name>.jsonl``, an
    ordinary session file. Pass ``agent_recording.model(real)`` to your ``Agent``; ``real``
    (a ``Model``, a model name, or None for the SDK default) is used only when recording.

    Example:
        >>> async def test_weather(agent_recording, jsonl_sessions):  # doctest: +SKIP
        ...     agent = Agent(name="w", model=agent_recording.model("gpt-4.1"), tools=[get_weather])
        ...     result = await Runner.run(agent, "Paris?", session=jsonl_sessions.open("w"))
    """
    if not _installed("agents"):
        pytest.fail(
            "agent_recording needs the OpenAI Agents SDK: pip install 'jsonl-session[agents]'", pytrace=False
        )
    mode: Literal["replay", "record"] = "record" if _record_mode(request.config) else "replay"
    try:
        recording = Recording(recording_path(request.node), mode=mode)
    except FileNotFoundError as error:
        missing: str | None = str(error)  # failed outside the handler: else pytest prints it twice
    else:
        missing = None
    if missing is not None:
        pytest.fail(missing, pytrace=False)
    yield recording
    reports = request.node.stash.get(_reports, {})
    if "call" in reports and reports["call"].passed:
        try:
            recording.finish()
        except ReplayMismatch as error:
            pytest.fail(str(error), pytrace=False)


def recording_path(node: pytest.Item) -> Path:
    """Where a test's recording lives: ``<test folder>/recordings/<module>/<test name>.jsonl``."""
    test_file = Path(node.path)
    name = ".".join(node.nodeid.split("::")[1:]) or node.name
    return test_file.parent / "recordings" / test_file.stem / filename_for(name)


def _record_mode(config: pytest.Config) -> bool:
    option = config.getoption("record_agents")
    if option is not None:
        return bool(option)
    return os.environ.get(RECORD_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def _installed(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # ValueError: a module set to None in sys.modules
        return False


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


__all__ = ["ReadOnlySession", "ReadOnlySessionError", "recording_path"]
