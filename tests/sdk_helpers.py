"""Offline stand-ins for the Agents SDK's tests: a scripted model and a ``responses.compact`` client.

They work on every openai-agents release we support (the SDK's own ``agents.testing`` only
exists in recent ones), so the same integration tests run against the oldest and the newest
SDK (the ``sdk`` marker; ``.ci/run`` runs them in a second venv with the oldest release).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any

from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseOutputMessage, ResponseOutputText


def sdk_version() -> tuple[int, ...]:
    """The installed openai-agents release, e.g. ``(0, 24, 0)``: some hooks are only probed by newer ones."""
    return tuple(int(part) for part in version("openai-agents").split(".")[:3] if part.isdigit())


def reply(text: str, item_id: str) -> ResponseOutputMessage:
    """An assistant message as the Responses API returns it."""
    content = ResponseOutputText(type="output_text", text=text, annotations=[])
    return ResponseOutputMessage(
        id=item_id, type="message", role="assistant", status="completed", content=[content]
    )


class FakeModel(Model):
    """Answers each call with the next scripted reply and records the input it was given."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.inputs: list[Any] = []

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        # The parameters grew over the releases; the model input is always the second one.
        self.inputs.append(kwargs["input"] if "input" in kwargs else args[1])
        n = len(self.inputs)
        return ModelResponse(
            output=[reply(self.replies.pop(0), f"msg_{n}")], usage=Usage(), response_id=f"resp_{n}"
        )

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the wrapper tests run Runner.run and run_sync only")


def texts(model_input: Any) -> list[str]:
    """The plain text of every message in a model call's input, in order."""
    out: list[str] = []
    for item in model_input if isinstance(model_input, list) else [{"role": "user", "content": model_input}]:
        content = item.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.extend(part.get("text", "") for part in content if isinstance(part, dict))
    return out


SUMMARY = {
    "type": "message",
    "role": "user",
    "content": [{"type": "input_text", "text": "summary of it all"}],
}


@dataclass
class Compacted:
    output: list[Any]
    usage: Any = None


@dataclass
class Responses:
    calls: list[dict[str, Any]] = field(default_factory=list)

    async def compact(self, **kwargs: Any) -> Compacted:
        self.calls.append(kwargs)
        return Compacted(output=[dict(SUMMARY)])


@dataclass
class CompactClient:
    """Stands in for ``AsyncOpenAI``: ``responses.compact`` returns one summary message.

    The SDK's own tests do the same with a ``MagicMock``; this one records the calls.
    """

    responses: Responses = field(default_factory=Responses)
