"""Edit a session by hand while an agent keeps writing to it: a copy, then a merge under the lock.

Holding the session's write lock for as long as the editor is open would make a running
agent's ``add_items`` fail with ``LockTimeout`` after 10 s (tests/tools/test_edit_concurrent.py),
so the lock is held only for a moment at each end:

1. the session's bytes are read under a shared lock (the *base*) and written to a copy next
   to the session (``core.temp_files.create_edit_copy``: 0600, locked, removed when the edit ends;
   ``check --fix`` removes one a killed edit left);
2. the person edits the copy; agents append meanwhile, without waiting;
3. on save, under the write lock: if the file is still the base, or the base plus appended
   lines, the edited items plus the appended ones replace it. Anything else (a pop, a clear,
   another rewrite) is a real conflict: nothing is saved and the edited copy is kept.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import codec, reads, scanner, storage, temp_files
from ..core.errors import SessionFileError
from ..core.times_log import TimesLog
from ..core.transaction import Transaction
from .check import CALL_PAIRS
from .leftovers import kept_edit_name

if TYPE_CHECKING:
    from ..session.store import JSONLSession

_ANSWER_OF = {answer: call for call, answer in CALL_PAIRS.items()}


@dataclass
class EditCopy:
    """The copy a person edits, and the bytes of the session it was made from.

    Example:
        >>> with edit_copy(session) as copy:                         # doctest: +SKIP
        ...     subprocess.call(["vi", str(copy.path)])
        ...     copy.save(edited_items)
    """

    session: JSONLSession
    path: Path
    base: bytes
    written: bytes
    keep: bool = False

    def unchanged(self) -> bool:
        """True if the copy still holds exactly what was written to it."""
        return self.path.read_bytes() == self.written

    def base_items(self) -> list[Any]:
        """The items of the base (lines that are not items are left out)."""
        return _items_of(line.data for line in scanner.scan_lines(self.base).lines)

    def save(self, items: list[Any]) -> int:
        """Replace the session with ``items`` plus whatever was appended since the copy; return how many were.

        Raises:
            SessionFileError: the session changed otherwise meanwhile (nothing is saved and the
                copy is kept, at :attr:`path`), or it is gone.
            ItemNotStorableError: an item cannot be written (the file is untouched).
        """
        session = self.session
        codec.encode_items(items)  # refuse what cannot be stored before taking the lock
        with Transaction(
            session.path, write=True, timeout=session.lock_timeout, durable=session.durable
        ) as file:
            if not file.exists:
                raise SessionFileError(
                    session.path, f"was deleted while you edited; your edit is kept in {self._kept()}"
                )
            current = reads.read_range(file.fd, 0, file.size)
            appended = self._appended(current)
            payload = codec.encode_items([*items, *appended])
            storage.replace(file.fd, session.path, payload, durable=session.durable)
            if session.timestamps:  # kept items keep their times, edited and new ones get now
                TimesLog(session.path).rewrite(current, payload)
        return len(appended)

    def _kept(self) -> Path:
        """Keep the edited copy out of ``check --fix``'s reach; return where it is now.

        Under its first name the copy says which process edits it, and once that process
        exits ``check --fix`` would remove it as a dead edit's copy: the copy this message has
        just said is kept. A kept edit is renamed ``.#<file>.kept-<hex>.jsonl``, which
        ``check`` names and never removes (``tools.leftovers``).
        """
        self.keep = True
        kept = kept_edit_name(self.session.path)
        try:
            os.rename(self.path, kept)
        except OSError:
            return self.path  # still kept, under its first name
        self.path = kept
        return kept

    def _appended(self, current: bytes) -> list[Any]:
        """Items appended after the base, or a conflict if the base is no longer the file's start."""
        if not current.startswith(self.base):
            raise SessionFileError(
                self.session.path,
                "was changed while you edited (not only appended to: a pop, a clear or another rewrite); "
                f"nothing saved, your edit is kept in {self._kept()}",
            )
        # after the base: whole lines (and an unterminated last one that is an item); a torn
        # tail is left out, and the save moves it aside
        scan = scanner.scan_lines(current[len(self.base) :], offset=len(self.base))
        appended = []
        for line in scan.lines:
            item = scanner.parse_item(line.data)
            if item is None:
                raise SessionFileError(
                    self.session.path,
                    "a line appended while you edited is not an item; nothing saved, "
                    f"your edit is kept in {self._kept()}",
                )
            appended.append(item)
        return appended


@contextmanager
def edit_copy(session: JSONLSession) -> Iterator[EditCopy]:
    """Snapshot the session into an edit copy next to it; remove the copy afterwards (unless kept).

    SIGTERM and SIGHUP end the edit like Ctrl-C, so the copy is removed; after a SIGKILL it is
    left, locked by nobody, for ``check --fix`` to remove.
    """
    base = _snapshot(session)
    path, fd = temp_files.create_edit_copy(session.path)
    copy = EditCopy(session, path, base, b"")
    try:
        with _signals_interrupt():
            text = base.removeprefix(codec.BOM)
            copy.written = text if not text or text.endswith(b"\n") else text + b"\n"
            os.write(fd, copy.written)
            yield copy
    finally:
        os.close(fd)
        if not copy.keep:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass


def new_unanswered_calls(before: list[Any], after: list[Any]) -> list[str]:
    """Tool-call pairs an edit broke, either way: a call left without its output, an output without its call.

    Only pairs that were whole before (or absent) count: an edit is not blamed for what it found.

    Example:
        >>> call = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
        >>> output = {"type": "function_call_output", "call_id": "c1"}
        >>> new_unanswered_calls([call, output], [call])
        ["function_call 'c1' (f) has no function_call_output"]
        >>> new_unanswered_calls([call, output], [output])
        ["function_call_output 'c1' has no function_call"]
    """
    already = set(_broken_pairs(before))
    return [text for key, text in _broken_pairs(after).items() if key not in already]


def _broken_pairs(items: list[Any]) -> dict[tuple[str, str], str]:
    """``(call type, call_id)`` -> what is wrong: a call without its answer, an answer without its call."""
    calls: dict[tuple[str, str], str] = {}
    answers: dict[tuple[str, str], str] = {}  # keyed by the type of the call they answer
    for item in items:
        kind, call_id = item.get("type"), item.get("call_id")
        if not isinstance(kind, str) or not isinstance(call_id, str):
            continue
        if kind in CALL_PAIRS:
            name = f" ({item['name']})" if isinstance(item.get("name"), str) else ""
            calls[(kind, call_id)] = f"{kind} {call_id!r}{name} has no {CALL_PAIRS[kind]}"
        elif kind in _ANSWER_OF:
            answers.setdefault((_ANSWER_OF[kind], call_id), f"{kind} {call_id!r} has no {_ANSWER_OF[kind]}")
    broken = {key: text for key, text in calls.items() if key not in answers}
    broken.update(
        {(kind, call_id): text for (kind, call_id), text in answers.items() if (kind, call_id) not in calls}
    )
    return broken


def _snapshot(session: JSONLSession) -> bytes:
    """The session's bytes under a shared lock, without a torn tail (the next writer moves it aside)."""
    with Transaction(session.path, write=False, timeout=session.lock_timeout) as file:
        if not file.exists:
            raise SessionFileError(session.path, "no such session")
        data = reads.read_range(file.fd, 0, file.size)
    return data[: scanner.settled_end(data)]


def _items_of(lines: Iterable[bytes]) -> list[Any]:
    return [item for item in map(scanner.parse_item, lines) if item is not None]


@contextmanager
def _signals_interrupt() -> Iterator[None]:
    """Turn SIGTERM and SIGHUP into KeyboardInterrupt while the edit runs, so cleanup happens."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    try:
        previous = {number: signal.signal(number, interrupt) for number in (signal.SIGTERM, signal.SIGHUP)}
    except ValueError:  # not the main thread: leave the signals alone
        yield
        return
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
