"""What a copy (``export``/``import``, one session or ``--all``) decides and says about each session.

:func:`decide` compares a source with its destination and says what to write; :class:`Outcome`
is what the copy then reports. The mirror has its own words for what it does
(``transfer.mirror.outcomes``): it rewrites where a copy refuses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from .compare import compare

__all__ = ["Decision", "Outcome", "Status", "decide"]

Status = Literal["copied", "appended", "skipped", "differs", "replaced", "failed"]


@dataclass(frozen=True)
class Outcome:
    """What happened to one session.

    ``copied`` (the destination had nothing: ``items`` written), ``appended`` (it held the
    first items of the source: the missing ``items`` appended), ``skipped`` (up to date:
    ``items`` is how many both hold), ``differs`` (it holds other items from item ``at + 1``
    on: left alone), ``replaced`` (it differed and ``replace=True`` overwrote it) or ``failed``
    (``detail`` says why). The CLI says ``up to date``, ``appended N`` and ``differs at item K``.
    """

    session_id: str
    status: Status
    items: int = 0
    detail: str = ""
    left_behind: tuple[str, ...] = ()
    """Kept for callers of earlier releases: metadata now travels (see ``transfer.companion``)."""
    at: int | None = None
    """``differs``: the 0-based index of the first item that is not the source's."""

    def describe(self) -> str:
        """The outcome in the words the CLI prints: ``appended 3 items``, ``differs at item 5``.

        Example:
            >>> Outcome("a", "appended", 3).describe(), Outcome("a", "differs", 9, at=4).describe()
            ('appended 3 items', 'differs at item 5')
        """
        plural = "" if self.items == 1 else "s"
        if self.status == "appended":
            return f"appended {self.items} item{plural}"
        if self.status == "copied":
            return f"copied {self.items} item{plural}"
        if self.status == "replaced":
            return f"replaced with {self.items} item{plural}"
        if self.status == "skipped":
            return "up to date"
        if self.status == "differs":
            return f"differs at item {(self.at or 0) + 1}"
        return f"failed: {self.detail}"


@dataclass(frozen=True)
class Decision:
    """What to write to bring a destination up to its source: ``clear`` it first (a replace),
    then append ``source[start:]``; ``write`` False when nothing may be written (differs)."""

    outcome: Outcome
    write: bool
    start: int = 0
    clear: bool = False


def decide(session_id: str, source: list[Any], destination: list[Any], *, replace: bool = False) -> Decision:
    """Decide, by content, what an incremental copy writes (see ``compare``).

    Example:
        >>> decided = decide("a", [{"n": 1}, {"n": 2}], [{"n": 1}])
        >>> decided.outcome.status, decided.outcome.items, decided.start
        ('appended', 1, 1)
    """
    found = compare(source, destination)
    if found.state == "up to date":
        return Decision(Outcome(session_id, "skipped", len(source)), True, len(source))
    if found.state == "behind":
        status: Status = "appended" if found.at else "copied"
        return Decision(Outcome(session_id, status, len(source) - found.at), True, found.at)
    if replace:
        return Decision(Outcome(session_id, "replaced", len(source)), True, 0, clear=True)
    detail = (
        f"the destination holds {len(destination)} items, the source {len(source)}; "
        f"not overwritten (replace to overwrite)"
    )
    return Decision(Outcome(session_id, "differs", len(destination), detail, at=found.at), False)
