"""The resend lint: what the model API refuses when a stored history is sent back as input.

A session's items go back to the model on the next run. A history cut by hand, by an item
limit or by a killed process can hold an item the Responses API refuses (HTTP 400) or that
the Agents SDK silently drops before sending. These rules find them, one line at a time, so
``check`` names each with its file and line (docs/resend-lint.md cites each rule's source):

* ``orphaned reasoning``: a ``reasoning`` item not followed (after any further reasoning
  items) by the item the same response produced: followed by a user, system or developer
  message, by a tool output, by an approval response, or by the end of the history. The API
  refuses it: "Item 'rs_...' of type 'reasoning' was provided without its required following
  item". Dropping it repairs that without guessing: the model's next response reasons again.
* ``unanswered approval``: an ``mcp_approval_request`` with no ``mcp_approval_response``
  whose ``approval_request_id`` is its ``id``, unless a paused run waits on it.
* ``duplicate id``: two items with one ``id`` ("Duplicate item found with id ..."). A copy
  identical to the item right before it is a repeated write: dropping it changes nothing else.
  Other duplicates need a person (which of the two is the right one, and where).

Tool calls without their outputs (and outputs without their calls) are checked by
``tools.check`` over :data:`CALL_PAIRS`, the call types the SDK stores and pairs on
``call_id``.

Pure: a :class:`ResendLint` is fed ``(line number, item)`` pairs in file order and keeps only
line numbers, ids and the previous item, so a session of any size is linted in flat memory.

Example:
    >>> history = [(1, {"role": "user", "content": "hi"}), (2, {"type": "reasoning", "id": "rs_1"})]
    >>> [(problem.line, problem.fixable) for problem in resend_problems(history)]
    [(2, True)]
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

# A call item type -> the type of the item that answers it, matched on ``call_id``: the pairs of
# the SDK's ``run_internal.items._TOOL_CALL_TO_OUTPUT_TYPE`` whose output the client sends.
# Not here: ``tool_search_call`` (a hosted search may be anonymous: the SDK pairs those by
# position) and ``program`` (its nested calls decide whether it is complete).
CALL_PAIRS = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "computer_call": "computer_call_output",
    "local_shell_call": "local_shell_call_output",
    "shell_call": "shell_call_output",
    "apply_patch_call": "apply_patch_call_output",
}

# The SDK's placeholder id for items a non-OpenAI model produced (agents.models.fake_id):
# the SDK ignores it when it deduplicates, and many items share it.
FAKE_ID = "__fake_id__"

# Items that a model response never emits right after its reasoning: what the client sends.
_INPUT_ROLES = frozenset({"user", "system", "developer"})
_INPUT_TYPES = frozenset({*CALL_PAIRS.values(), "mcp_approval_response"})


@dataclass(frozen=True)
class ResendProblem:
    """One item the model API would refuse when the history is sent again, by its line in the file.

    ``fixable``: dropping that line repairs it without deciding what the conversation says.
    """

    line: int
    reason: str
    fixable: bool = False


class ResendLint:
    """The resend rules over one history, fed in file order; :meth:`problems` once it is all fed.

    ``awaiting``: ids a paused run (``.run``) waits on; ``None`` among them stands for an
    approval the run records without an id (the SDK's hosted MCP approvals), so unanswered
    approval requests are then not reported either.
    """

    def __init__(self, awaiting: Iterable[Any] = ()) -> None:
        self.awaiting = frozenset(awaiting)
        self.found: list[ResendProblem] = []
        self._reasoning: list[tuple[int, Any]] = []  # (line, id) waiting for the item they produced
        self._ids: dict[str, int] = {}  # id -> first line
        self._previous: Any = None
        self._requests: dict[str, int] = {}  # mcp approval request id -> line
        self._responses: set[str] = set()

    def take(self, number: int, item: dict[str, Any]) -> None:
        """Lint the item on line ``number``."""
        kind = item.get("type")
        if kind == "reasoning":
            self._reasoning.append((number, item.get("id")))
        elif self._reasoning:
            if _sent_by_client(item):
                self._orphans(f"followed by {_what(item)} on line {number}")
            self._reasoning.clear()
        item_id = item.get("id")
        if isinstance(item_id, str) and item_id and item_id != FAKE_ID:
            first = self._ids.setdefault(item_id, number)
            if first != number:
                repeated = item == self._previous  # the same item written twice in a row
                how = "a repeated copy of the line before it" if repeated else "which item belongs is unknown"
                self.found.append(
                    ResendProblem(number, f"duplicate id {item_id!r} (line {first}): {how}", repeated)
                )
            if kind == "mcp_approval_request":
                self._requests.setdefault(item_id, number)
        if kind == "mcp_approval_response":
            answered = item.get("approval_request_id")
            if isinstance(answered, str):
                self._responses.add(answered)
        self._previous = item

    def problems(self) -> list[ResendProblem]:
        """Every problem found, by line (call once, after the last item)."""
        self._orphans("it ends the history")
        self._reasoning.clear()
        waits_unnamed = None in self.awaiting
        for request_id, number in self._requests.items():
            if request_id in self._responses or request_id in self.awaiting or waits_unnamed:
                continue
            self.found.append(
                ResendProblem(number, f"mcp_approval_request {request_id!r} has no mcp_approval_response")
            )
        return sorted(self.found, key=lambda problem: problem.line)

    def _orphans(self, why: str) -> None:
        for number, reasoning_id in self._reasoning:
            named = f" {reasoning_id!r}" if isinstance(reasoning_id, str) else ""
            self.found.append(
                ResendProblem(
                    number, f"reasoning{named} is not followed by the item it produced ({why})", True
                )
            )


def resend_problems(
    numbered: Iterable[tuple[int, dict[str, Any]]], awaiting: Iterable[Any] = ()
) -> list[ResendProblem]:
    """The resend problems of ``(line number, item)`` pairs in file order (see :class:`ResendLint`)."""
    lint = ResendLint(awaiting)
    for number, item in numbered:
        lint.take(number, item)
    return lint.problems()


def _sent_by_client(item: dict[str, Any]) -> bool:
    """True for an item no model response emits after its reasoning: a message or output the client sends.

    Unknown types count as the model's (no guess: a new item type is not reported).
    """
    if item.get("type") in _INPUT_TYPES:
        return True
    return item.get("role") in _INPUT_ROLES and item.get("type", "message") == "message"


def _what(item: dict[str, Any]) -> str:
    kind = item.get("type")
    if kind in _INPUT_TYPES:
        return f"a {kind}"
    return f"a {item.get('role')} message"
