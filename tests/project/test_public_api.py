"""The public API is the root and three documented faces; the docs import only from them.

``jsonl_session`` exports what users call, ``jsonl_session.watch`` and ``jsonl_session.transfer``
are the documented faces, ``jsonl_session.pytest_plugin`` is a pytest plugin (its fixtures);
every other module is internal. The lists below are the API: a name added to or dropped from a
face fails here until it is added or dropped on purpose. Every import in README.md, docs/*.md
and examples/*.py, every ``:::`` entry of the API reference and every call the docs spell with
a module path (```jsonl_session.x.y()```) must name a public module and a name it has, so
nothing documented is reachable only through an internal path.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

import jsonl_session

REPO = Path(__file__).resolve().parents[2]

ROOT = {
    # sessions and folders
    "Draft",
    "JSONLSession",
    "Route",
    "SessionDirectory",
    "SessionInfo",
    "SessionSettings",
    # history
    "Lineage",
    "PausedRun",
    "SessionMetadata",
    "Turn",
    "read_growth",
    # following live, copying (the faces hold the rest)
    "Change",
    "watch_directory",
    "watch_directory_sync",
    "copy_session",
    # record and replay, secrets, checking
    "Recording",
    "ReplayMismatch",
    "SecretFinding",
    "redact_session",
    "scan_file",
    "check_file",
    # retention
    "ArchivedSession",
    "PruneOutcome",
    "RestoreOutcome",
    "archived_usage",
    "list_archives",
    "parse_duration",
    "prune",
    "restore",
    # recall
    "search_sessions",
    "session_search_tool",
    # worker threads
    "wait_for_all",
    # errors and warnings
    "BackendUnavailable",
    "InvalidBackendURL",
    "InvalidSessionId",
    "ItemNotStorableError",
    "JSONLSessionError",
    "LockReentryError",
    "LockTimeout",
    "MalformedLineError",
    "OwnerMismatchError",
    "OwnershipError",
    "ReadOnlySessionError",
    "SessionExistsError",
    "SessionFileError",
    "SessionNotFoundError",
    "SkippedSessionWarning",
    "TornTailWarning",
    "UnsafePathError",
}

FACES = {
    "jsonl_session.watch": {
        "Change",
        "DEFAULT_IDLE_STEP_MS",
        "DEFAULT_POLL_DELAY_MS",
        "DEFAULT_STEP_MS",
        "DirectoryWatch",
        "DirectoryWatchSync",
        "HOT_SECONDS",
        "Kind",
        "SessionWatch",
        "SessionWatchSync",
        "Start",
        "StopFlag",
        "TICK_SECONDS",
        "WatchOptions",
        "WatchedSession",
        "apply",
        "watch_directory",
        "watch_directory_sync",
        "watch_session",
        "watch_session_sync",
    },
    "jsonl_session.transfer": {
        "Backend",
        "Comparison",
        "MirrorOutcome",
        "Outcome",
        "RedisClusterRefused",
        "catch_up_mirror",
        "catch_up_mirror_sync",
        "copy_session",
        "export_all",
        "export_session",
        "import_all",
        "import_session",
        "metadata_left_behind",
        "mirror_folder",
        "mirror_folder_sync",
        "open_backend",
        "open_url",
    },
}
PLUGIN_FIXTURES = {"jsonl_sessions", "open_session_fixture", "agent_recording"}
PUBLIC_MODULES = {"jsonl_session", *FACES, "jsonl_session.pytest_plugin"}

IMPORT = re.compile(r"(?:^\s*|`)from\s+(jsonl_session[\w.]*)\s+import\s+(\([^)]*\)|[^\n`]+)", re.MULTILINE)
PLAIN_IMPORT = re.compile(r"^\s*import\s+(jsonl_session[\w.]*)", re.MULTILINE)
REFERENCE_ENTRY = re.compile(r"^:::\s+(jsonl_session[\w.]*)", re.MULTILINE)
DOTTED_CALL = re.compile(r"`(jsonl_session(?:\.\w+)+)\(")


def documents() -> list[Path]:
    return [
        REPO / "README.md",
        *sorted((REPO / "docs").glob("*.md")),
        *sorted((REPO / "examples").glob("*.py")),
    ]


def documented_names() -> list[tuple[str, str, str]]:
    """(where, module, name) for every import, reference entry and dotted call the docs show."""
    found = []
    for path in documents():
        text = path.read_text(encoding="utf-8")
        where = str(path.relative_to(REPO))
        for module, names in IMPORT.findall(text):
            for name in names.strip("()").split(","):
                name = name.split("#")[0].split(" as ")[0].strip()
                if name:
                    found.append((where, module, name))
        found += [(where, module, "") for module in PLAIN_IMPORT.findall(text)]
        for dotted in REFERENCE_ENTRY.findall(text) + DOTTED_CALL.findall(text):
            if dotted in PUBLIC_MODULES:
                found.append((where, dotted, ""))
            else:
                module, _, name = dotted.rpartition(".")
                found.append((where, module, name))
    return found


def test_the_root_exports_exactly_the_listed_names() -> None:
    assert set(jsonl_session.__all__) == ROOT
    for name in ROOT:
        assert getattr(jsonl_session, name) is not None


@pytest.mark.parametrize("face", sorted(FACES))
def test_each_documented_face_exports_exactly_the_listed_names(face: str) -> None:
    module = importlib.import_module(face)
    assert set(module.__all__) == FACES[face]
    for name in FACES[face]:
        value = getattr(module, name)
        if inspect.isclass(value) or inspect.isfunction(value):  # not the constants and type aliases
            assert value.__doc__, f"{face}.{name} needs a docstring"


def test_the_pytest_plugin_offers_its_fixtures() -> None:
    plugin = importlib.import_module("jsonl_session.pytest_plugin")
    assert {name for name in PLUGIN_FIXTURES if hasattr(plugin, name)} == PLUGIN_FIXTURES


def test_the_root_docstring_and_the_api_reference_name_the_public_modules() -> None:
    reference = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    for text in (jsonl_session.__doc__ or "", reference):
        for module in PUBLIC_MODULES - {"jsonl_session"}:
            assert f"``{module}``" in text or f"`{module}`" in text, module
        assert "internal" in text


def test_the_docs_find_the_documents_they_check() -> None:
    found = documented_names()
    assert len(found) > 30, found  # the patterns still match what the docs write
    assert ("docs/api.md", "jsonl_session.transfer", "") in found
    assert ("docs/retention.md", "jsonl_session", "prune") in found
    assert ("docs/workflows.md", "jsonl_session", "Recording") in found  # `from ... import` in a sentence


def test_everything_the_docs_import_comes_from_a_public_module() -> None:
    private = sorted(
        {f"{where}: {module}" for where, module, _ in documented_names() if module not in PUBLIC_MODULES}
    )
    assert not private, "documented through an internal module (import it from jsonl_session):\n" + "\n".join(
        private
    )
    for where, module, name in documented_names():
        if name:
            assert hasattr(importlib.import_module(module), name), f"{where}: {module} has no {name}"
