"""Record an agent's model calls into a session file once, then replay them offline: VCR for agents.

The recording is an ordinary session file holding the conversation as the model saw it:
reviewable in a pull request, greppable, hand-editable. No markers are needed between model
calls, because every call of a run sees the whole conversation so far:

* call *k*'s input is the first ``len(input)`` items of the recording (a prefix), and
* its answer is the run of model-output items that follows that prefix (assistant messages,
  function calls, reasoning, ...), up to the next item the model did not write (a user
  message, a tool's output).

Replay checks the first rule and answers with the second; when the agent's input is not a
prefix of the recording, it fails with a unified diff of the JSON lines. Ids and ``status``
are ignored in that comparison, and string content equals its one-part list form, so a
hand-edited ``{"role": "assistant", "content": "Hi"}`` still matches. System instructions,
tools and model settings are not recorded and not compared.

This needs the agent to carry the conversation from call to call (a session, or
``result.to_input_list()``), which is what a run with a ``JSONLSession`` does. Two
unrelated runs belong in two recordings.

Recording wraps a real model: every call goes to it, and at the end :meth:`Recording.save`
writes the last call's input followed by its answer, which contains every earlier call.
"""

from __future__ import annotations

import difflib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, Literal

import orjson

from ..core import scanner
from ..core.codec import encode_items
from ..core.names import id_for
from ..session.store import JSONLSession

RECORD_HINT = "re-record with --record-agents (or JSONL_SESSION_RECORD=1) if the change is intended"

# Items the model never writes: what users, systems and tools put into the conversation.
_INPUT_ROLES = frozenset({"user", "system", "developer"})
_INPUT_TYPES = frozenset({"item_reference", "mcp_approval_response"})
_IGNORED_KEYS = frozenset({"id", "status"})


class ReplayMismatch(AssertionError):
    """The agent's model input does not match the recording (or the recording has no answer for it).

    An ``AssertionError``, so pytest reports it as a test failure with the diff in its message.
    """


def is_model_output(item: dict[str, Any]) -> bool:
    """True for items a model writes (assistant messages, tool calls, reasoning), False for inputs.

    Example:
        >>> is_model_output({"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"})
        True
        >>> is_model_output({"type": "function_call_output", "call_id": "c1", "output": "42"})
        False
    """
    if item.get("role") in _INPUT_ROLES:
        return False
    kind = item.get("type", "message")
    return not (kind.endswith("_output") or kind in _INPUT_TYPES)


class Recording:
    """One recorded conversation, replayed offline or recorded against a real model.

    Args:
        path: The recording, an ordinary session file.
        mode: ``"replay"`` (default; the file must exist) or ``"record"`` (calls go to the
            real model; :meth:`save` writes the file).

    Example:
        >>> recording = Recording("tests/recordings/weather.jsonl")     # doctest: +SKIP
        >>> agent = Agent(name="a", model=recording.model("gpt-4.1"))   # doctest: +SKIP
        >>> await Runner.run(agent, "Weather in Paris?")                # doctest: +SKIP
        >>> recording.finish()                                          # doctest: +SKIP
    """

    def __init__(self, path: str | Path, *, mode: Literal["replay", "record"] = "replay") -> None:
        if mode not in ("replay", "record"):
            raise ValueError(f"mode must be 'replay' or 'record', not {mode!r}")
        self.path = Path(path)
        self.label = _shown(self.path)
        self.mode = mode
        self.calls = 0
        session_id = id_for(self.path.name)
        if session_id is None:
            raise ValueError(f"{self.path}: a recording is a session file, named <id>.jsonl")
        self._session = JSONLSession(session_id, self.path.parent, durable=False)
        self._recorded: list[Any] = []
        self._answered_upto = 0
        self._conversation: list[Any] = []  # record mode: the last call's input + its answer
        if mode == "replay":
            if not self.path.exists():
                raise FileNotFoundError(
                    f"{self.label}: no recording; run once with --record-agents (or JSONL_SESSION_RECORD=1) "
                    "to record it against the real model"
                )
            self._recorded = self._session.get_items_sync()

    @property
    def recording(self) -> bool:
        """True in record mode."""
        return self.mode == "record"

    def model(self, real: Any = None) -> Any:
        """An Agents SDK ``Model`` to pass to ``Agent(model=...)``.

        Args:
            real: The real model, used in record mode only: a ``Model`` instance, a model
                name such as ``"gpt-4.1"``, or None for the SDK's default model.

        Every model returned by one recording shares its position, so agents that hand off
        to each other can all use it.
        """
        if self.recording and not _is_model(real):
            from agents.models.multi_provider import MultiProvider

            real = MultiProvider().get_model(real)
        return _model_class()(self, real if self.recording else None)

    def finish(self) -> bool:
        """End the run: in record mode write the file, in replay mode check that every answer was used.

        Returns True when the recording file was (re)written.
        """
        if self.recording:
            return self.save()
        self.assert_complete()
        return False

    def save(self) -> bool:
        """Write the recorded conversation; leave the file untouched when it would not change.

        Re-recording an unchanged conversation therefore produces no git diff (lines are
        serialised the same way every time).
        """
        if not self.recording:
            raise RuntimeError("save() is for record mode; this recording is replaying")
        payload = encode_items(self._conversation)
        if self.path.exists() and self.path.read_bytes() == payload:
            return False
        self._session.replace_items_sync(self._conversation)
        return True

    def assert_complete(self) -> None:
        """Raise :class:`ReplayMismatch` if recorded model answers were never asked for."""
        unused = [
            i for i in range(self._answered_upto, len(self._recorded)) if is_model_output(self._recorded[i])
        ]
        if unused:
            line = self._line_of(unused[0])
            raise ReplayMismatch(
                f"{self.label}:{line}: the agent made {self.calls} model call(s) but the recording has "
                f"more model answers from line {line} on; {RECORD_HINT}"
            )

    # -- called by the model -------------------------------------------------------------

    def _answer(self, model_input: Any) -> list[Any]:
        """Check one call's input against the recording and return the recorded answer items."""
        self.calls += 1
        actual = _as_items(model_input)
        size = len(actual)
        recorded = self._recorded
        if (
            size >= self._answered_upto
            and size < len(recorded)
            and is_model_output(recorded[size])
            and all(_canonical(a) == _canonical(r) for a, r in zip(actual, recorded))
        ):
            end = size
            while end < len(recorded) and is_model_output(recorded[end]):
                end += 1
            self._answered_upto = end
            return recorded[size:end]
        raise self._mismatch(actual)

    def _mismatch(self, actual: list[Any]) -> ReplayMismatch:
        recorded = self._recorded
        end = max(len(actual), self._answered_upto)
        while end < len(recorded) and not is_model_output(recorded[end]):
            end += 1
        expected = recorded[:end]
        expected_lines = [_dumps(item) for item in expected]
        # Items equal but for ids or key order are shown as recorded, so the diff shows real changes only.
        actual_lines = [
            expected_lines[i]
            if i < len(expected) and _canonical(item) == _canonical(expected[i])
            else _dumps(item)
            for i, item in enumerate(actual)
        ]
        diff = "\n".join(
            difflib.unified_diff(
                expected_lines, actual_lines, f"recorded ({self.label})", "actual model input", lineterm=""
            )
        )
        if actual_lines[: len(recorded)] == expected_lines and len(actual) >= len(recorded):
            headline = (
                f"model call {self.calls} has no recorded answer: the recording ends at line "
                f"{self._line_of(len(recorded) - 1)}, "
                "and the agent made more model calls than when it was recorded"
            )
        else:
            headline = (
                f"model call {self.calls}: "
                "the agent's input diverged from the recording (- recorded, + actual)"
            )
        return ReplayMismatch(f"{self.label}: {headline}; {RECORD_HINT}\n{diff}".rstrip())

    def _continue(self, model_input: Any) -> list[Any]:
        """Record mode, before the real call: check the input continues the conversation so far."""
        self.calls += 1
        actual = _as_items(model_input)
        known = self._conversation
        if len(actual) < len(known) or any(_canonical(a) != _canonical(k) for a, k in zip(actual, known)):
            raise ReplayMismatch(
                f"{self.label}: model call {self.calls} does not continue the conversation recorded so far; "
                "a recording holds one conversation, so the agent must carry its history (use a session), "
                "and unrelated runs need their own recordings"
            )
        return actual

    def _record(self, actual: list[Any], answer: list[Any]) -> None:
        self._conversation = [*actual, *answer]

    def _line_of(self, index: int) -> int:
        lines = [line.number for line in scanner.scan_lines(self.path.read_bytes()).lines]
        return lines[index] if 0 <= index < len(lines) else index + 1


# -- helpers -------------------------------------------------------------------------------


def _shown(path: Path) -> str:
    """The path as messages show it: relative to the current directory when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _is_model(value: Any) -> bool:
    from agents.models.interface import Model

    return isinstance(value, Model)


def _as_items(model_input: Any) -> list[Any]:
    """The model's input as plain JSON dicts, the way a session stores them."""
    if isinstance(model_input, str):
        return [{"content": model_input, "role": "user"}]
    return [_plain(item) for item in model_input]


def _plain(item: Any) -> Any:
    return orjson.loads(orjson.dumps(item, default=_dump_model))


def _dump_model(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(exclude_unset=True, mode="json")
    raise TypeError(f"cannot record a {type(value).__name__} in a model's input")


def _canonical(item: Any) -> Any:
    """The parts of an item that matter to the model (see the module docstring)."""
    if not isinstance(item, dict):
        return item
    result = {key: value for key, value in item.items() if key not in _IGNORED_KEYS}
    if "role" in result:
        result.setdefault("type", "message")
        content = result.get("content")
        part_type = "output_text" if result["role"] == "assistant" else "input_text"
        if isinstance(content, str):
            content = [{"type": part_type, "text": content}]
        if isinstance(content, list):
            result["content"] = [
                {k: v for k, v in part.items() if v != [] or k not in ("annotations", "logprobs")}
                if isinstance(part, dict)
                else part
                for part in content
            ]
    return result


def _dumps(item: Any) -> str:
    return orjson.dumps(item).decode()


def _output_items(items: Sequence[Any], path: Path) -> list[Any]:
    """Recorded dicts back into the SDK's output item objects (the runner dispatches on their types)."""
    from openai.types.responses import ResponseOutputItem, ResponseOutputMessage, ResponseOutputText
    from pydantic import TypeAdapter, ValidationError

    adapter: Any = TypeAdapter(ResponseOutputItem)
    converted = []
    for number, item in enumerate(items):
        if item.get("role") == "assistant" and isinstance(item.get("content"), str):
            converted.append(
                ResponseOutputMessage(
                    id=item.get("id", f"msg_replayed_{number}"),
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[ResponseOutputText(type="output_text", text=item["content"], annotations=[])],
                )
            )
            continue
        if item.get("role") == "assistant":
            item = {"type": "message", "id": f"msg_replayed_{number}", "status": "completed", **item}
        try:
            converted.append(adapter.validate_python(item))
        except ValidationError:
            raise ReplayMismatch(
                f"{_shown(path)}: recorded item {_dumps(item)[:120]} is not a model output item the SDK knows"
            ) from None
    return converted


def _model_class() -> type:
    """The SDK ``Model`` subclass, built on first use so that importing this module needs no ``agents``."""
    from agents.models.interface import Model

    # Keyed by the SDK's Model class: if ``agents`` is ever imported afresh (pytester does
    # that), the subclass must derive from the new Model or the SDK will not accept it.
    if Model not in _model_classes:
        _model_classes[Model] = _build_model_class(Model)
    return _model_classes[Model]


_model_classes: dict[type, type] = {}


def _build_model_class(Model: type) -> type:
    from agents.items import ModelResponse
    from agents.testing import ModelStep, ScriptedModel
    from agents.usage import Usage

    class RecordingModel(Model):  # type: ignore[misc]
        """Replays ``recording`` (``real`` is None) or passes calls to ``real`` and records them."""

        def __init__(self, recording: Recording, real: Any) -> None:
            self.recording = recording
            self.real = real

        def __repr__(self) -> str:
            return f"<{self.recording.mode} model for {self.recording.path}>"

        async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> Any:
            if self.real is not None:
                actual = self.recording._continue(input)
                response = await self.real.get_response(system_instructions, input, *args, **kwargs)
                self.recording._record(actual, response.to_input_items())
                return response
            answer = _output_items(self.recording._answer(input), self.recording.path)
            return ModelResponse(output=answer, usage=Usage(requests=1), response_id=None)

        async def stream_response(
            self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
        ) -> AsyncIterator[Any]:
            if self.real is not None:
                actual = self.recording._continue(input)
                completed = None
                async for event in self.real.stream_response(system_instructions, input, *args, **kwargs):
                    if getattr(event, "type", None) == "response.completed":
                        completed = event.response
                    yield event
                if completed is not None:
                    response = ModelResponse(output=completed.output, usage=Usage(), response_id=None)
                    self.recording._record(actual, response.to_input_items())
                return
            items = _output_items(self.recording._answer(input), self.recording.path)
            # The scripted model turns output items into the same event stream a real model emits.
            scripted = ScriptedModel([ModelStep(output=items, response_id=None)])
            async for event in scripted.stream_response(system_instructions, input, *args, **kwargs):
                yield event

        async def close(self) -> None:
            if self.real is not None:
                await self.real.close()

    return RecordingModel
