"""A rewrite keeps the session file's owner, or refuses before changing anything.

Run as root, a rewrite would otherwise give the file to root.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_helpers import run
from privilege_helpers import call_as_nobody, needs_root, nobody

from jsonl_session import JSONLSession, OwnershipError

ITEM = {"role": "user", "content": "hi"}


@needs_root
def test_a_rewrite_as_root_keeps_the_owner_group_and_mode(sessions_dir: Path) -> None:
    session = JSONLSession("owned", sessions_dir)
    session.add_items_sync([ITEM, ITEM])
    uid, gid = nobody()
    os.chown(session.path, uid, gid)
    session.path.chmod(0o640)
    with session.rewrite() as draft:
        draft.items = draft.items[:1]
    session.replace_items_sync([ITEM, ITEM, ITEM])
    assert run(sessions_dir, "redact", "owned").code == 0
    after = os.stat(session.path)
    assert (after.st_uid, after.st_gid, after.st_mode & 0o777) == (uid, gid, 0o640)
    assert session.get_items_sync() == [ITEM, ITEM, ITEM]


@needs_root
def test_a_rewrite_that_cannot_keep_the_owner_is_refused(shared_tmp: Path) -> None:
    folder = shared_tmp / "sessions"
    session = JSONLSession("roots", folder)
    session.add_items_sync([ITEM])
    folder.chmod(0o777)  # nobody may create the temporary file and rename it...
    session.path.chmod(0o666)  # ...and may write the file, but not give a new one to root
    before = session.path.read_bytes()

    def rewrite_as_nobody() -> None:
        with JSONLSession("roots", folder).rewrite() as draft:
            draft.items.append(ITEM)

    with pytest.raises(OwnershipError, match=r"is owned by uid 0 .*run this as the file's owner"):
        call_as_nobody(rewrite_as_nobody)
    assert session.path.read_bytes() == before
    assert os.stat(session.path).st_uid == 0
    # no temporary file left (the .times sidecar records when its items were added)
    assert sorted(path.name for path in folder.iterdir() if path.suffix != ".times") == ["roots.jsonl"]
