"""Every fixture of the suite, in one place pytest finds without an import.

Plain helpers stay in the ``*_helpers.py`` modules. The test folders are not packages, so a
second ``conftest.py`` would be a second module named ``conftest`` to mypy; fixtures of one folder
(the databases of ``transfer/``) therefore live here too, under a heading of their own.
"""

from __future__ import annotations

import shutil
import signal
import tempfile
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from browser_helpers import Watched, chromium_path
from cli_helpers import flush_redis, start_redis_server, stop_process
from pg_helpers import new_postgres_database, postgres_server, recreate_database
from serve_helpers import TIMEOUT, Server, start_server

if TYPE_CHECKING:
    from playwright.sync_api import Browser

from jsonl_session import JSONLSession


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C tests need SIGINT to be Ctrl-C, whoever started the run.

    A background job of a non-interactive shell (and some CI runners) starts with SIGINT
    ignored; Python then installs no KeyboardInterrupt handler, and children inherit the
    ignore, so every test that presses Ctrl-C on a child hung until its timeout. A caught
    signal is reset to the default in a child at exec, so this restores them too.
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    _seed_property_tests(config)


def _seed_property_tests(config: pytest.Config) -> None:
    """Every hypothesis test tries the same examples on every run, so a failure comes back.

    By default each test's examples derive from the test itself (``derandomize``). To explore
    others, give a seed: ``pytest --hypothesis-seed=N`` (``stress/fuzz.py`` runs many more
    examples); that run is reproduced by the same seed. A failure prints which it was (below).
    An explicit ``--hypothesis-profile`` is left alone.
    """
    from hypothesis import settings

    if config.getoption("hypothesis_profile", None) is not None:
        return
    seed = config.getoption("hypothesis_seed", None)
    settings.register_profile("jsonl-session", derandomize=seed is None, database=None, print_blob=True)
    settings.load_profile("jsonl-session")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failed property test says how to run the very same examples again."""
    report: pytest.TestReport = yield
    stateful = getattr(getattr(item, "cls", None), "__name__", "").endswith("StateMachineTestCase")
    if report.failed and (stateful or getattr(getattr(item, "obj", None), "is_hypothesis_test", False)):
        seed = item.config.getoption("hypothesis_seed", None)
        how = (
            f"--hypothesis-seed={seed}: run with it again to reproduce"
            if seed is not None
            else "derandomized (no seed given): every run tries the same examples, so rerunning reproduces it"
        )
        report.sections.append(("hypothesis seed", how))
    return report


@pytest.fixture
def sessions_dir(tmp_path: Path) -> Path:
    """An empty folder for session files (not yet created: the first write creates it)."""
    return tmp_path / "sessions"


@pytest.fixture
def session(sessions_dir: Path) -> JSONLSession:
    """A fresh durable session in a temporary folder."""
    return JSONLSession("test", sessions_dir)


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A folder every user can enter (0755, ours); removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="jsonl-session-perm-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def server_for() -> Iterator[Any]:
    """``server_for(directory)`` starts a real ``serve`` process; every one is stopped after the test."""
    servers: list[Server] = []

    def start(directory: Path, *extra: str, max_files: int | None = None) -> Server:
        server = start_server(directory, *extra, max_files=max_files)
        servers.append(server)
        return server

    yield start
    for server in servers:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait(timeout=TIMEOUT)
        for stream in (server.process.stdout, server.process.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = chromium_path()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def watched(browser: Browser) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    try:
        yield Watched(context.new_page())
    finally:
        context.close()


# -- real database servers, and the databases the transfer tests copy to ---------------------------


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real redis-server on a free loopback port, in a temp dir, no persistence; stopped afterwards.

    Skipped when redis-server is not installed, unless ``JSONL_SESSION_REQUIRE_REDIS=1``
    (set by ``.ci/run``), in which case the missing server is a failure.
    """
    process, port = start_redis_server(tmp_path_factory.mktemp("redis"))
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop_process(process)


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    """``postgresql+asyncpg://postgres@127.0.0.1:<port>/postgres`` on a fresh, throw-away cluster.

    Skipped when PostgreSQL is not installed, unless ``JSONL_SESSION_REQUIRE_POSTGRES=1``
    (set by ``.ci/run``), in which case the missing server is a failure.
    """
    with postgres_server() as url:
        yield url


@pytest.fixture(params=["sqlite", "sqlite+aiosqlite", "redis", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database of each kind a folder copy reaches (SQLite file, Redis, PostgreSQL)."""
    if request.param.startswith("sqlite"):
        if request.param == "sqlite+aiosqlite":
            pytest.importorskip("aiosqlite")
        return f"{request.param}:///{tmp_path / 'grow.db'}"
    if request.param == "redis":
        found: str = request.getfixturevalue("redis_url")
        flush_redis(found)
        return found
    found = request.getfixturevalue("postgres_url").replace("postgresql+asyncpg", "postgresql")
    recreate_database(found, "incremental")
    return found.rsplit("/", 1)[0] + "/incremental"


@pytest.fixture(params=["postgresql", "redis"])
def database(request: pytest.FixtureRequest) -> str:
    """The URL of an empty database a mirror keeps: a new PostgreSQL database, or a flushed Redis."""
    if request.param == "redis":
        found: str = request.getfixturevalue("redis_url")
        flush_redis(found)
        return found
    return new_postgres_database(request.getfixturevalue("postgres_url"))
