"""Git conflict markers wherever a merge can leave them: the session file and every sidecar kind.

A text merge of two branches that each added to a session writes markers into the ``.times``
sidecar (and any other) as well; ``check`` must name every marker line, in every file, with
the same advice, and exit 1, where it said ``0 problems`` for a sidecar.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import run

from jsonl_session import JSONLSession
from jsonl_session.core.names import KINDS, TORN_SUFFIX

CONFLICTED = b"<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> alice\n"


@pytest.mark.parametrize("kind", [*KINDS, TORN_SUFFIX])
def test_check_names_conflict_markers_in_every_sidecar(sessions_dir: Path, kind: str) -> None:
    session = JSONLSession("chat", sessions_dir)
    session.add_items_sync([{"role": "user", "content": "hi"}])
    sidecar = sessions_dir / ("chat.jsonl" + kind)
    sidecar.write_bytes(b"kept line\n" + CONFLICTED)
    for argv in (["check"], ["check", "chat"], ["check", "--fix"]):
        result = run(sessions_dir, *argv)
        assert result.code == 1, (argv, result)
        for line, marker in ((2, "<<<<<<<"), (4, "======="), (6, ">>>>>>>")):
            assert (
                f"{sidecar}:{line}: git merge conflict marker '{marker}': resolve the merge, then edit\n"
            ) in result.out, (argv, result)
    assert sidecar.read_bytes() == b"kept line\n" + CONFLICTED  # --fix leaves a merge to a person
