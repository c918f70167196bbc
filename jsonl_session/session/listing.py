"""The listing: what ``SessionDirectory.list`` and ``ls`` report of each session (``SessionInfo``),
and how a listing shows times and held items.

Kept apart from ``folder`` (which makes the listing), and as cheap to import: ``jsonl-session
ls`` imports this and nothing it does not need (``tests/project/test_startup.py``).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from datetime import datetime
    from pathlib import Path

__all__ = ["SessionInfo", "held_note", "in_datetime_range", "utc_microseconds", "utc_seconds"]


class SessionInfo:
    """One session file as ``SessionDirectory.list()`` reports it; immutable, compared by value.

    ``paused`` is True when a run waits for a tool approval (``<file>.jsonl.run``),
    ``forked_from`` names the session this one was forked from (``<file>.jsonl.lineage``), and
    ``title``, ``tags`` and ``owner`` are what ``set_metadata`` stored (``<file>.jsonl.meta``;
    None, ``()`` and None without one). ``default_title`` is the first user message, shortened,
    of a session without a title (None when a title is set or no user message gives one), as
    ``get_metadata`` and the viewer show it; :attr:`shown_title` is the one to show.
    ``needs_merge`` is True when the file holds git merge conflict marker lines, which ``items``
    does not count (``check`` lists them). ``last_activity`` is when its newest item was added
    (seconds since 1970, from ``<file>.jsonl.times``), or ``mtime`` when that is unknown: what
    ``ls`` shows and orders by, as a pop or an edit changes the file but is not activity.
    ``held`` counts the items a paused run holds back from the history (SDK 0.24's guardrailed
    turns).
    Written out rather than a frozen dataclass: importing ``dataclasses`` (it brings
    ``inspect``) cost ``jsonl-session ls`` about 12 ms, a third of its start-up. It compares,
    hashes, pickles, copies and matches (``case SessionInfo(id, path, items)``) as that
    dataclass did; ``dataclasses.replace`` and ``asdict`` no longer apply.

    A listed session keeps its path as a ``str`` and its time in microseconds until ``path``
    or ``modified`` is first read: ``ls`` prints neither, and pathlib and datetime cost it ~8 ms.
    """

    # the fields in the constructor's order, which __init__, __eq__, __repr__, pickling and match follow
    __match_args__ = (
        "session_id",
        "path",
        "items",
        "size",
        "modified",
        "paused",
        "forked_from",
        "title",
        "tags",
        "owner",
        "last_activity",
        "held",
        "default_title",
        "needs_merge",
    )
    # What each field is stored as: path and modified behind properties. A listed session leaves
    # them None and keeps the file's name and its time in microseconds until they are read.
    _STORED = (
        "session_id",
        "_path",
        "items",
        "size",
        "_modified",
        "paused",
        "forked_from",
        "title",
        "tags",
        "owner",
        "_activity",
        "held",
        "default_title",
        "needs_merge",
    )
    __slots__ = (*_STORED, "_name", "_microseconds", "__weakref__")
    session_id: str
    _path: Path | None
    items: int
    size: int
    _modified: datetime | None
    paused: bool
    forked_from: str | None
    title: str | None
    tags: tuple[str, ...]
    owner: str | None
    _activity: float | None
    held: int
    default_title: str | None
    needs_merge: bool
    _name: str
    _microseconds: int

    def __init__(
        self,
        session_id: str,
        path: Path,
        items: int,
        size: int,
        modified: datetime,
        paused: bool = False,
        forked_from: str | None = None,
        title: str | None = None,
        tags: tuple[str, ...] = (),
        owner: str | None = None,
        last_activity: float | None = None,
        held: int = 0,
        default_title: str | None = None,
        needs_merge: bool = False,
    ) -> None:
        self._set(
            session_id,
            path,
            items,
            size,
            modified,
            paused,
            forked_from,
            title,
            tuple(tags),
            owner,
            last_activity,
            held,
            default_title,
            needs_merge,
        )

    @classmethod
    def _listed(
        cls,
        session_id: str,
        path: str,
        file_stat: os.stat_result,
        items: int,
        paused: bool,
        forked_from: str | None,
        about: tuple[str | None, tuple[str, ...], str | None] = (None, (), None),
        activity: float | None = None,
        held: int = 0,
        default_title: str | None = None,
        needs_merge: bool = False,
    ) -> SessionInfo:
        """A listed session, its ``Path`` and ``datetime`` made on first use; ``about`` is
        (title, tags, owner)."""
        info = cls.__new__(cls)
        info._set(
            session_id,
            None,
            items,
            file_stat.st_size,
            None,
            paused,
            forked_from,
            *about,
            activity,
            held,
            default_title,
            needs_merge,
        )
        object.__setattr__(info, "_name", path)
        object.__setattr__(info, "_microseconds", utc_microseconds(file_stat.st_mtime))
        return info

    def _set(self, *values: object) -> None:
        for name, value in zip(self._STORED, values, strict=True):
            object.__setattr__(self, name, value)

    @property
    def path(self) -> Path:
        """The session file."""
        if self._path is None:
            from pathlib import Path

            object.__setattr__(self, "_path", Path(self._name))
            assert self._path is not None
        return self._path

    @property
    def modified(self) -> datetime:
        """When the file last changed (UTC, to the microsecond)."""
        if self._modified is None:
            from datetime import datetime, timedelta, timezone

            epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
            object.__setattr__(self, "_modified", epoch + timedelta(microseconds=self._microseconds))
            assert self._modified is not None
        return self._modified

    @property
    def shown_title(self) -> str | None:
        """The title, or else the first user message (shortened); None if neither."""
        return self.title if self.title is not None else self.default_title

    @property
    def last_activity(self) -> float:
        """When the newest item was added (seconds since 1970), else :attr:`mtime`."""
        return self.mtime if self._activity is None else self._activity

    @property
    def mtime(self) -> float:
        """``modified`` in seconds since the epoch, to the microsecond."""
        if self._modified is None:
            return self._microseconds / 1_000_000
        return self._modified.timestamp()

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"SessionInfo is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"SessionInfo is immutable: cannot delete {name!r}")

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__match_args__)

    def __reduce__(self) -> tuple[type[SessionInfo], tuple[object, ...]]:
        return type(self), self._values()  # pickle and copy rebuild it through __init__

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, SessionInfo)
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__match_args__)
        return f"SessionInfo({fields})"


def held_note(held: int) -> str:
    """How listings say what a paused run holds back: ``1 item held back`` (empty for none)."""
    return f"{held} item{'' if held == 1 else 's'} held back" if held else ""


def utc_seconds(mtime: float) -> int:
    """The whole second of ``mtime`` as ``datetime.fromtimestamp`` shows it (rounded to the microsecond).

    ``ls`` prints times with ``time.gmtime`` of this, without importing datetime.

    Example:
        >>> utc_seconds(1.9999996), utc_seconds(1.9999994), utc_seconds(-0.5)
        (2, 1, -1)
    """
    return utc_microseconds(mtime) // 1_000_000


def in_datetime_range(mtime: float) -> bool:
    """Whether a ``datetime`` can hold ``mtime`` (the years 1 to 9999); a file can be stamped later."""
    if -6e10 < mtime < 2.5e11:  # far from both ends (years 68 and 9892): no rounding can matter
        return True
    return -62_135_596_800_000_000 <= utc_microseconds(mtime) <= 253_402_300_799_999_999


def utc_microseconds(mtime: float) -> int:
    """``mtime`` rounded to the microsecond as ``datetime.fromtimestamp`` rounds it (half to even)."""
    whole = int(mtime)  # toward zero, as math.modf splits it (math is a shared library to load)
    return whole * 1_000_000 + round((mtime - whole) * 1e6)
