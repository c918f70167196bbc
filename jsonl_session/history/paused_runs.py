"""A run paused for a tool approval: ``<file>.jsonl.run``, one JSON object, replaced atomically.

The SDK stops a run whose tool ``needs_approval`` and returns ``RunResult.interruptions``;
``result.to_state()`` can resume it later, in another process. The file keeps that state
with what a person deciding needs to see, without the SDK::

    {
      "held": 1,
      "pending": [{"arguments": "{\\"order\\":\\"A1\\"}", "call_id": "call_1", "tool": "refund"}],
      "recorded": {"requests": 1, "input_tokens": 100, ...},
      "saved_at": "2026-12-02T18:40:07Z",
      "state": { ...RunState.to_json()... }
    }

``recorded`` is the usage of this run already in the usage log, so that recording the
resumed run (whose usage includes the part before the pause) adds only what is new.

``held`` counts the items the run holds back from the history: since 0.24 the SDK keeps a turn
that its output guardrails have not yet passed out of the session, in the state
(``pending_session_write``), and writes it on resume. They are in ``state`` here, so a resume
from another process writes them, once; ``ls`` and ``show`` say how many wait.

The file is removed when the run completes (``record_usage`` of a result without
interruptions, or ``clear_run_state``), when the session is deleted, and by ``rewind``
(the turn it belongs to is gone).
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from ..core import sidecar_files
from ..core.errors import SessionFileError

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: ``ls`` marks paused runs, and typing costs start-up
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any


@dataclass(frozen=True)
class PausedRun:
    """What a saved run waits for, readable without the Agents SDK.

    Example:
        >>> PausedRun("2026-12-02T18:40:07Z", [{"tool": "refund", "call_id": "call_1"}]).tools
        ['refund']
    """

    saved_at: str
    pending: list[dict[str, Any]]
    held: int = 0
    """Items of the paused turn not yet in the history (the SDK writes them on resume)."""

    @property
    def tools(self) -> list[str]:
        """Names of the tools waiting for a decision."""
        return [str(entry.get("tool")) for entry in self.pending]


def as_state(state_or_result: Any) -> Any:
    """A ``RunState`` from a state or a run result (anything with ``to_state()``)."""
    if hasattr(state_or_result, "to_json"):
        return state_or_result
    to_state = getattr(state_or_result, "to_state", None)
    if to_state is None:
        raise TypeError(f"expected a RunState or a run result, not {type(state_or_result).__name__}")
    return to_state()


def pending_of(state: Any) -> list[dict[str, Any]]:
    """The approvals a state waits for: tool name, call id, arguments."""
    pending = []
    for item in state.get_interruptions():
        raw = getattr(item, "raw_item", None)
        get = raw.get if isinstance(raw, dict) else lambda name, raw=raw: getattr(raw, name, None)
        entry = {"tool": getattr(item, "tool_name", None) or get("name"), "call_id": get("call_id")}
        arguments = get("arguments")
        if isinstance(arguments, str):
            entry["arguments"] = arguments
        pending.append(entry)
    return pending


def held_of(state_json: dict[str, Any]) -> int:
    """How many items a serialized run holds back from the session (0 before SDK 0.24)."""
    pending = state_json.get("pending_session_write")
    if isinstance(pending, dict) and pending.get("held") and isinstance(pending.get("items"), list):
        return len(pending["items"])
    return 0


def write(session_path: Path, state: Any, *, recorded: dict[str, int] | None, durable: bool) -> None:
    """Save ``state`` (atomically) with its pending approvals and the usage already logged."""
    from .lineage import now

    state_json = state.to_json()
    envelope = {
        "held": held_of(state_json),
        "pending": pending_of(state),
        "recorded": recorded,
        "saved_at": now(),
        "state": state_json,
    }
    sidecar_files.write_json(
        sidecar_files.sidecar(session_path, sidecar_files.RUN), envelope, durable=durable
    )


def read(session_path: Path) -> dict[str, Any] | None:
    """The saved envelope, or None when no run is paused."""
    path = sidecar_files.sidecar(session_path, sidecar_files.RUN)
    envelope = sidecar_files.read_json(path)
    if envelope is None:
        return None
    if not isinstance(envelope, dict) or not isinstance(envelope.get("state"), dict):
        raise SessionFileError(path, 'not a saved run (no "state" object); delete it to discard the run')
    return envelope


SUMMARY_BYTES = 1 << 20
"""How much of a ``.run`` file :func:`info` reads: its summary, never the state after it."""
_STATE_KEY = b'\n  "state": '  # the last top-level key, as write() lays it out (sorted, indented)


def info(session_path: Path) -> PausedRun | None:
    """What the paused run waits for, or None when no run is paused.

    A file bigger than :data:`SUMMARY_BYTES` is read only up to its state: the summary (``held``,
    ``pending``, ``saved_at``) is what ``write`` puts before it. Listings and ``check`` ask this
    of every paused session, and a run's state can be as big as its conversation. A run saved before
    ``held`` was kept counts 0 here; its held items are still in its state and written on resume.

    Raises:
        SessionFileError: the file does not start as :func:`write` lays it out (delete it to
            discard the run).
    """
    path = sidecar_files.sidecar(session_path, sidecar_files.RUN)
    head = sidecar_files.read_head(path, SUMMARY_BYTES + 1)
    if head is None:
        return None
    summary: Any = None
    if len(head) <= SUMMARY_BYTES:  # the whole file: however it is laid out
        try:
            summary = orjson.loads(head)
        except orjson.JSONDecodeError:
            summary = None
        if isinstance(summary, dict) and not isinstance(summary.get("state"), dict):
            summary = None
    elif head.startswith(b"{") and (cut := head.find(_STATE_KEY)) > 0:
        try:
            summary = orjson.loads(head[:cut].rstrip().rstrip(b",") + b"}")
        except orjson.JSONDecodeError:
            summary = None
    if not isinstance(summary, dict):
        raise SessionFileError(
            path,
            f'not a saved run (no "state" object, or none after a summary in its first {SUMMARY_BYTES} '
            "bytes); delete it to discard the run",
        )
    pending = summary.get("pending")
    held = summary.get("held")
    if not isinstance(held, int) or isinstance(held, bool) or held < 0:
        held = 0
    return PausedRun(str(summary.get("saved_at")), pending if isinstance(pending, list) else [], held)


held_items = sidecar_files.held_back


def clear(session_path: Path, *, durable: bool) -> bool:
    """Forget the paused run; True if there was one."""
    return sidecar_files.remove(sidecar_files.sidecar(session_path, sidecar_files.RUN), durable=durable)
