"""Structural conformance with the Agents SDK, and a core that imports without it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jsonl_session import JSONLSession


@pytest.mark.sdk
def test_is_an_agents_session(sessions_dir: Path) -> None:
    memory = pytest.importorskip("agents.memory")
    session = JSONLSession("s", sessions_dir)
    assert isinstance(session, memory.Session)


@pytest.mark.sdk
def test_sdk_settings_object_is_kept_and_resolves(sessions_dir: Path) -> None:
    settings_module = pytest.importorskip("agents.memory.session_settings")
    sdk_settings = settings_module.SessionSettings(limit=4)
    session = JSONLSession("s", sessions_dir, session_settings=sdk_settings)
    assert session.session_settings is sdk_settings
    assert session.session_settings.resolve(settings_module.SessionSettings(limit=2)).limit == 2


@pytest.mark.sdk
@pytest.mark.parametrize("given", ["none", "dict", "ours", "sdk"])
def test_session_settings_are_the_sdks_type_when_agents_is_loaded(sessions_dir: Path, given: str) -> None:
    memory = pytest.importorskip("agents.memory")
    from jsonl_session import SessionSettings

    value = {"none": None, "dict": {"limit": 3}, "ours": SessionSettings(limit=3)}.get(given)
    value = memory.SessionSettings(limit=3) if given == "sdk" else value
    session = JSONLSession("s", sessions_dir, session_settings=value)
    assert isinstance(session.session_settings, memory.SessionSettings)
    assert session.session_settings is session.session_settings  # converted once, not on every read
    assert session.session_settings.limit == (None if given == "none" else 3)
    session.add_items_sync([{"n": n} for n in range(5)])
    # What the SDK itself does with them since 0.19 (it refused our look-alike with a TypeError).
    util = pytest.importorskip("agents.memory.session_settings")
    if hasattr(util, "resolve_session_limit"):
        assert util.resolve_session_limit(None, session.session_settings) == session.session_settings.limit


@pytest.mark.sdk
def test_settings_become_the_sdks_type_when_agents_is_imported_later(tmp_path: Path) -> None:
    pytest.importorskip("agents")
    script = textwrap.dedent(
        f"""
        import sys
        from jsonl_session import JSONLSession, SessionSettings
        s = JSONLSession("x", {str(tmp_path)!r}, session_settings={{"limit": 2}})
        assert type(s.session_settings) is SessionSettings    # no SDK loaded: ours, and none imported
        assert "agents" not in sys.modules
        import agents.memory
        assert isinstance(s.session_settings, agents.memory.SessionSettings), type(s.session_settings)
        assert s.session_settings.limit == 2
        print("ok")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert (result.returncode, result.stdout.strip()) == (0, "ok"), result.stderr


def test_no_run_compaction_hook() -> None:
    # The Runner calls run_compaction after every write when it exists; we have none.
    assert not hasattr(JSONLSession, "run_compaction")


def test_core_imports_and_works_without_agents(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "agents" or name.startswith("agents."):
                    raise ImportError("agents is blocked in this test")
        sys.meta_path.insert(0, Block())
        import jsonl_session
        from jsonl_session import JSONLSession, SessionDirectory
        s = JSONLSession("x", {str(tmp_path)!r}, session_settings={{"limit": 1}})
        assert type(s.session_settings) is jsonl_session.SessionSettings
        assert s.session_settings.resolve({{"limit": 5}}).limit == 5
        s.add_items_sync([{{"a": 1}}, {{"b": 2}}])
        assert s.get_items_sync() == [{{"b": 2}}], s.get_items_sync()
        assert SessionDirectory({str(tmp_path)!r}).ids() == ["x"]
        assert not any(m == "agents" or m.startswith("agents.") for m in sys.modules)
        print("ok")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
