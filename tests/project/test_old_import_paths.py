"""Import paths that users were told about before the package was layered still work, for now.

``jsonl_session.workers``, ``.bulk``, ``.replay`` and ``.secrets`` are the new (internal) modules
under their old names: each warns once, naming the version that removes it and where its public
names are imported from now; ``.session``, ``.transfer``, ``.watch`` and ``.pytest_plugin``
kept their names; the console script and the pytest11 entry point resolve. Each case runs in a
fresh interpreter, so "once" means the first import of the process.
"""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

import pytest

MOVED = {  # old name: (the module it is now, a name it had, where that name is public, advice)
    "workers": ("jsonl_session.core.worker_threads", "wait_for_all", "jsonl_session", "wait_for_all"),
    "bulk": (
        "jsonl_session.transfer.all_sessions",
        "export_all",
        "jsonl_session.transfer",
        "export_all and import_all",
    ),
    "replay": ("jsonl_session.tools.replay", "Recording", "jsonl_session", "Recording and ReplayMismatch"),
    "secrets": (
        "jsonl_session.tools.secrets",
        "scan_file",
        "jsonl_session",
        "scan_file, redact_session and SecretFinding",
    ),
}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_a_moved_module_is_the_new_one_under_its_old_name_and_warns_with_its_removal(old: str) -> None:
    new, name, public, advice = MOVED[old]
    advised_names = advice.replace(" and ", ", ")
    code = f"""
import warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    import jsonl_session.{old} as moved
    from jsonl_session.{old} import {name}
    import jsonl_session.{old}
import {new} as real
from {public} import {advised_names}
from {public} import {name} as advised
assert moved is real and {name} is real.{name} is advised, (moved, real)
messages = [str(w.message) for w in caught if w.category is DeprecationWarning]
expected = "jsonl_session.{old} is deprecated and removed in 0.3: import {advice} from {public}"
assert messages == [expected], messages
"""
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_packages_that_kept_their_names_export_what_they_did() -> None:
    code = """
import warnings
warnings.simplefilter("error")
from jsonl_session.session import DEFAULT_DIRECTORY, Draft, JSONLSession
from jsonl_session.transfer import copy_session, open_url, open_backend, export_all, import_all
from jsonl_session.watch import Change, apply, watch_session, watch_directory, watch_directory_sync
from jsonl_session.pytest_plugin import jsonl_sessions, open_session_fixture, agent_recording
import jsonl_session
assert jsonl_session.JSONLSession is JSONLSession and jsonl_session.copy_session is copy_session
assert DEFAULT_DIRECTORY == "sessions"
"""
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_console_script_and_the_pytest_plugin_entry_points_resolve() -> None:
    points = metadata.entry_points()
    (script,) = [point for point in points.select(group="console_scripts") if point.name == "jsonl-session"]
    (plugin,) = [point for point in points.select(group="pytest11") if point.name == "jsonl_session"]
    from jsonl_session import pytest_plugin
    from jsonl_session.cli import main

    assert script.load() is main
    assert plugin.load() is pytest_plugin
