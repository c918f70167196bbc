"""A session deleted while the live mirror looks for empty files stays deleted in the database.

The mirror adopts the folder's empty files itself (a watch delivers nothing for a file without
items). A file deleted between that pass's listing and its read reads as empty too: adopted
anyway, the deleted session came back, empty, in the database, and nothing deleted it again
(seen once as the kill -9 test's ``churn-0`` still stored 30 s after the writers stopped). The
listing is held here with events, so the deletion lands in that window every time.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from cli_helpers import flush_redis
from process_helpers import wait_until
from test_mirror import Running, equal_soon, sdk_view, session, turn

from jsonl_session import SessionDirectory

pytestmark = pytest.mark.sdk


class HeldListing(SessionDirectory):
    """A folder whose next listing, once ``arm``-ed, is taken and then held until ``go`` is set."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory, durable=False)
        self.armed = False
        self.listed = threading.Event()
        self.go = threading.Event()

    def arm(self) -> None:
        self.listed.clear()
        self.go.clear()
        self.armed = True

    def ids(self) -> list[str]:
        found = super().ids()
        if self.armed:
            self.armed = False
            self.listed.set()
            assert self.go.wait(30)
        return found


def test_a_session_deleted_during_the_empty_file_pass_is_not_stored_again(
    tmp_path: Path, redis_url: str
) -> None:
    directory = tmp_path / "sessions"
    flush_redis(redis_url)
    session(directory, "kept").add_items_sync([turn(1)])
    session(directory, "doomed").add_items_sync([turn(2)])
    folder = HeldListing(directory)
    with Running(folder, redis_url, delete=True) as mirror:
        equal_soon(directory, redis_url)
        folder.arm()
        assert folder.listed.wait(30)  # the pass has listed "doomed"
        folder.delete("doomed")
        wait_until(lambda: ("doomed", "deleted") in [(o.session_id, o.status) for o in mirror.outcomes])
        reported = len(mirror.outcomes)
        folder.go.set()  # the pass goes on with its listing, "doomed" in it
        folder.arm()  # the next pass starts only once that one has ended
        assert folder.listed.wait(30)
        folder.go.set()
        assert [o for o in mirror.outcomes[reported:] if o.session_id == "doomed"] == []
        assert sorted(sdk_view(redis_url)) == ["kept"]
