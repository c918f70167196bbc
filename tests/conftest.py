"""Fixtures shared by the whole suite. Area-specific helpers live next to their tests."""

from __future__ import annotations

import shutil
import signal
import tempfile
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

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
    """Every hypothesis test tries the same examples on every run, so a failure comes back (issue 29).

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
