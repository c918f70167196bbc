"""What a mirror reports for each session: :class:`MirrorOutcome`."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from .plan import Applied

MirrorStatus = Literal["same", "created", "appended", "rewritten", "deleted", "kept", "failed"]
DIFFERENT: tuple[MirrorStatus, ...] = ("created", "appended", "rewritten", "deleted")
"""The statuses that mean the database differed from the folder (and was, or would be, changed)."""


@dataclass(frozen=True)
class MirrorOutcome:
    """One session compared with the database, and what was done (or, in a dry run, would be).

    ``status``:

    * ``same``: the database already held exactly the file's items;
    * ``created``: it did not hold the session; ``appended`` items were written (an empty
      session is stored as the SDK stores one before its first item);
    * ``appended``: it held a prefix of the file; the ``appended`` missing items were added;
    * ``rewritten``: it differed from item ``at`` on (0-based): its ``removed`` items from there
      were deleted and the file's ``appended`` items from there written, in one transaction;
    * ``deleted``: the file is gone and deletions propagate (``delete=True``): the session and
      its ``removed`` items were deleted from the database;
    * ``kept``: the session is only in the database and deletions do not propagate: left there;
    * ``failed``: ``detail`` says why (a file that cannot be read, a key of another type).

    ``items`` is how many items the file holds.

    Example:
        >>> MirrorOutcome("convo", "rewritten", items=5, at=3, removed=1, appended=2).differs
        True
    """

    session_id: str
    status: MirrorStatus
    items: int = 0
    at: int = 0
    removed: int = 0
    appended: int = 0
    detail: str = ""

    @property
    def differs(self) -> bool:
        """Whether the database differed from the folder (``--verify`` fails on these)."""
        return self.status in DIFFERENT

    def as_json(self) -> dict[str, Any]:
        """A dict for one line of ``--json`` output (empty ``detail`` left out)."""
        value = asdict(self)
        if not value["detail"]:
            del value["detail"]
        return value

    def describe(self, *, dry_run: bool = False) -> str:
        """One line for a person: ``convo: appended 2 items`` (``would append`` in a dry run)."""
        verb = {
            "created": ("created with", "would create with"),
            "appended": ("appended", "would append"),
            "rewritten": ("rewritten from item", "would rewrite from item"),
            "deleted": ("deleted", "would delete"),
        }
        if self.status == "created":
            text = f"{verb['created'][dry_run]} {_items(self.appended)}"
        elif self.status == "appended":
            text = f"{verb['appended'][dry_run]} {_items(self.appended)}"
        elif self.status == "rewritten":
            text = (
                f"{verb['rewritten'][dry_run]} {self.at + 1}: "
                f"{_items(self.removed)} removed, {_items(self.appended)} appended"
            )
        elif self.status == "deleted":
            text = f"{verb['deleted'][dry_run]} from the database ({_items(self.removed)})"
        elif self.status == "same":
            text = "up to date"
        elif self.status == "kept":
            text = "only in the database: kept (deletions do not propagate without --delete)"
        else:
            text = f"failed: {self.detail}"
        return f"{self.session_id}: {text}"


def outcome_of(session_id: str, applied: Applied, items: int) -> MirrorOutcome:
    """The outcome of one ``sync`` of a session whose file holds ``items`` items."""
    change = applied.plan
    status: MirrorStatus
    if not applied.existed:
        status = "created"
    elif not change.changes:
        status = "same"
    elif not change.remove:
        status = "appended"
    else:
        status = "rewritten"
    return MirrorOutcome(session_id, status, items, change.keep, change.remove, len(change.add))


def _items(count: int) -> str:
    return f"{count} item{'' if count == 1 else 's'}"
