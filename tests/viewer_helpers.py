"""Sessions for the viewer tests: an ordinary conversation, and one written by an attacker.

The hostile session puts script, markup-breaking text, ``javascript:`` URLs, quotes, control
characters and a 1 MB line into every field a renderer shows (role, text, tool name, call id,
arguments, output, item type). Every script in it would set ``window.pwned`` or open a dialog:
the browser tests assert that neither happens.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

ATTACK = "window.pwned=1;alert(1)"
HOSTILE_TEXTS = [
    f"<script>{ATTACK}</script>",
    f"</script><script>{ATTACK}</script>",
    f'</textarea></pre></details><img src=x onerror="{ATTACK}">',
    f"<!--<script>{ATTACK}</script>-->",
    f"javascript:{ATTACK}",
    f'[click](javascript:{ATTACK}) <a href="javascript:{ATTACK}">x</a>',
    f"\" onmouseover=\"{ATTACK}\" x=' onfocus='{ATTACK}'",
    "controls: \x00 \x1b[31mred\x1b[0m \x07 \x7f \u2028 \u2029 \u202e",
    f"${{{ATTACK}}} {{{{constructor.constructor('{ATTACK}')()}}}}",
    "``` unclosed fence\n# heading\n<details>\n@octocat",
]


def conversation() -> list[dict[str, Any]]:
    """A short conversation with every kind of item the viewer draws."""
    return [
        {"role": "system", "content": "You are a travel agent."},
        {"role": "user", "content": "What's the weather in Paris?"},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Look up the weather."}],
        },
        {
            "type": "function_call",
            "name": "get_weather",
            "call_id": "call_1",
            "arguments": '{"city":"Paris"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "Sunny, 21°C"},
        {
            "type": "function_call",
            "name": "transfer_to_billing_agent",
            "call_id": "call_2",
            "arguments": "{}",
        },
        {"type": "function_call_output", "call_id": "call_2", "output": '{"assistant": "Billing agent"}'},
        {
            "role": "assistant",
            "type": "message",
            "content": [{"type": "output_text", "text": "Sunny and 21°C."}],
        },
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},
    ]


def hostile_items() -> list[dict[str, Any]]:
    """Items whose every shown field is an attack (valid JSON: they load as a session)."""
    items: list[dict[str, Any]] = []
    for number, text in enumerate(HOSTILE_TEXTS):
        items.append({"role": "user", "content": text})
        items.append({"role": text, "content": text})
        items.append(
            {
                "type": "function_call",
                "name": text,
                "call_id": text,
                "arguments": orjson.dumps({"q": text}).decode(),
            }
        )
        items.append({"type": "function_call_output", "call_id": text, "output": text * 3})
        items.append({"type": "reasoning", "summary": [{"type": "summary_text", "text": text}]})
        items.append({"type": text, "id": f"x{number}", "data": text})
    items.append({"role": "assistant", "content": "<b>" + "A" * 1_000_000 + "</b>"})
    return items


def write_session(path: Path, items: list[dict[str, Any]], *, extra_lines: list[bytes] | None = None) -> Path:
    """Write items one per line (and raw ``extra_lines`` after them), bypassing the library."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [orjson.dumps(item) for item in items] + (extra_lines or [])
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


HAND_WRITTEN_BAD_LINES = [
    b'{"role": "user", "content": "lone \\ud800 surrogate <script>window.pwned=1</script>"}',
    b'{"role": "user", "content": "raw control \x01 char"}',
    b"<script>window.pwned=1</script>",
    b"\xff\xfe invalid utf-8 </script><script>window.pwned=1</script>",
]
"""Lines a hand edit could leave: not valid items, shown as they are."""
