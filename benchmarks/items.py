"""Realistic conversation items for the benchmarks: what the Agents SDK actually stores.

A conversation is a cycle of turns: a user message, sometimes a function call and its
output, then an assistant message. Every item serialises (orjson) to 300-600 bytes, and
about one item in four carries non-ASCII text (accents, CJK, Cyrillic, emoji), so the
codecs pay for UTF-8 as they would in production. Generation is deterministic (seeded).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import orjson

MIN_BYTES = 300
MAX_BYTES = 600

_VOCABULARY = """
the order shipped yesterday and should arrive within two business days please check your
tracking number for updates about weather flights hotels invoice refund account password
reset meeting schedule tomorrow morning summary report budget numbers
"""
_WORDS = _VOCABULARY.split()
_FOREIGN = [
    "Bonjour, combien coûte un café à Paris ?",
    "Grüß Gott! Wie wird das Wetter in München?",
    "東京で一番高いビルはどこですか？",
    "Преобразуй 20 евро в доллары, пожалуйста.",
    "شكرا جزيلا على المساعدة 🙏",
    "¿Dónde está la estación de tren más cercana?",
    "Merci beaucoup 😊 — à bientôt !",
]
_TOOLS = ["get_weather", "lookup_order", "convert_currency", "search_flights", "send_email"]


def _text(rng: random.Random, length: int, foreign: bool) -> str:
    words = [rng.choice(_WORDS) for _ in range(length // 5 + 1)]
    if foreign:
        words.insert(rng.randrange(len(words)), rng.choice(_FOREIGN))
    return " ".join(words)[:length]


def _fit(make: Callable[..., dict[str, Any]], rng: random.Random, *args: Any) -> dict[str, Any]:
    """Build ``make(text, *args)`` with a text that puts its size uniformly in [MIN_BYTES, MAX_BYTES]."""
    target = rng.randint(MIN_BYTES, MAX_BYTES)
    foreign = rng.random() < 0.25
    item = make(_text(rng, 10, foreign), *args)
    overhead = len(orjson.dumps(item)) - 10
    length = max(10, target - overhead)
    for _ in range(5):  # multi-byte characters make the first guess land short
        item = make(_text(rng, length, foreign), *args)
        size = len(orjson.dumps(item))
        if MIN_BYTES <= size <= MAX_BYTES:
            return item
        length += target - size
    return item


def _user(text: str) -> dict[str, Any]:
    return {"content": text, "role": "user"}


def _call(text: str, call_id: str, name: str, number: int) -> dict[str, Any]:
    return {
        "arguments": orjson.dumps({"query": text, "limit": 5}).decode(),
        "call_id": call_id,
        "name": name,
        "type": "function_call",
        "id": f"fc_{number:08d}",
        "status": "completed",
    }


def _output(text: str, call_id: str) -> dict[str, Any]:
    return {"call_id": call_id, "output": text, "type": "function_call_output"}


def _assistant(text: str, number: int) -> dict[str, Any]:
    return {
        "id": f"msg_{number:08d}",
        "content": [{"annotations": [], "text": text, "type": "output_text", "logprobs": []}],
        "role": "assistant",
        "status": "completed",
        "type": "message",
    }


def conversation(seed: int = 0) -> Iterator[dict[str, Any]]:
    """Yield items forever, turn after turn, like a long agent conversation.

    Example:
        >>> items = conversation()
        >>> first = next(items)
        >>> first["role"], 300 <= len(orjson.dumps(first)) <= 600
        ('user', True)
    """
    rng = random.Random(seed)
    number = 0
    while True:
        number += 1
        yield _fit(_user, rng)
        if rng.random() < 0.5:
            call_id = f"call_{number:08d}{rng.getrandbits(40):010x}"
            yield _fit(_call, rng, call_id, rng.choice(_TOOLS), number)
            yield _fit(_output, rng, call_id)
        yield _fit(_assistant, rng, number)


def sample(count: int, seed: int = 0) -> list[dict[str, Any]]:
    """The first ``count`` items of :func:`conversation`."""
    items = conversation(seed)
    return [next(items) for _ in range(count)]
