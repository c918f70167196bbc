"""Make docs/viewer.md's screenshots of ``jsonl-session serve``: the index and a live session page.

Usage (from the repository root; needs Debian's ``chromium`` and ``pip install -e '.[test]'``)::

    python docs/screenshots.py        # writes docs/viewer-index.png and docs/viewer-session.png

The same way the browser tests work: a real ``serve`` process on a temporary folder of demo
sessions, Chromium driven by Playwright, and one item appended by another process while the
page is open (so the session page shows a live change).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

DOCS = Path(__file__).resolve().parent
SIZE = {"width": 1100, "height": 760}
CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a travel assistant. Use the tools; hand billing questions over."},
    {"role": "user", "content": "I'm in Paris tomorrow. Will I need an umbrella?"},
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [
            {"type": "summary_text", "text": "Check tomorrow's forecast for Paris before answering."}
        ],
    },
    {
        "type": "function_call",
        "name": "get_forecast",
        "call_id": "call_7Qx",
        "arguments": '{"city":"Paris","day":"2026-12-03","units":"metric"}',
    },
    {
        "type": "function_call_output",
        "call_id": "call_7Qx",
        "output": orjson.dumps(
            {
                "city": "Paris",
                "hourly": [
                    {"hour": hour, "rain_mm": round(0.2 * max(0, hour - 13), 1)} for hour in range(24)
                ],
            }
        ).decode(),
    },
    {
        "role": "assistant",
        "type": "message",
        "content": [
            {
                "type": "output_text",
                "text": "Yes: rain from about 2 pm, up to 2 mm an hour by the evening.\n"
                "Morning should stay dry.",
            }
        ],
    },
    {"role": "user", "content": "Thanks! Also, why was I charged twice for my booking?"},
    {"type": "function_call", "name": "transfer_to_billing_agent", "call_id": "call_9Bz", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "call_9Bz", "output": '{"assistant": "Billing agent"}'},
]
LIVE_ITEM = {
    "role": "assistant",
    "content": "Billing agent here: I see two holds of €84; the second is released today.",
}


def write(folder: Path, session_id: str, items: list[dict[str, Any]]) -> None:
    (folder / f"{session_id}.jsonl").write_bytes(b"".join(orjson.dumps(item) + b"\n" for item in items))


def main() -> int:
    from playwright.sync_api import sync_playwright

    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        raise SystemExit("chromium is not installed (Debian: apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="jsonl-session-screenshots-") as scratch:
        folder = Path(scratch) / "sessions"
        folder.mkdir()
        write(folder, "support-42", [{"role": "user", "content": "Where is my order A-1042?"}] * 3)
        write(folder, "quickstart", CONVERSATION[:2])
        write(folder, "trip-paris", CONVERSATION)
        for hours_ago, name in enumerate(["trip-paris", "quickstart", "support-42"]):
            stamp = time.time() - 60 - hours_ago * 3600
            os.utime(folder / f"{name}.jsonl", (stamp, stamp))
        server = subprocess.Popen(  # from the scratch folder, so pages show the path as "sessions/..."
            [sys.executable, "-m", "jsonl_session", "serve", "--dir", "sessions", "--port", "0"],
            cwd=scratch,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert server.stdout is not None
            url = server.stdout.readline().strip()
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
                page = browser.new_page(viewport=SIZE, device_scale_factor=1)  # type: ignore[arg-type]
                page.goto(url)
                page.wait_for_selector("body[data-ready=true]")
                page.screenshot(
                    path=DOCS / "viewer-index.png", clip={"x": 0, "y": 0, "width": 1100, "height": 250}
                )
                page.goto(url + "session?id=trip-paris")
                page.wait_for_selector("#live.on")
                add = [sys.executable, "-m", "jsonl_session", "add", "trip-paris", "-", "--dir", str(folder)]
                subprocess.run(add, input=orjson.dumps(LIVE_ITEM) + b"\n", check=True, capture_output=True)
                page.wait_for_selector("#L10")
                page.evaluate("() => window.scrollTo(0, 0)")
                page.screenshot(path=DOCS / "viewer-session.png", full_page=True)
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=30)
    print("wrote docs/viewer-index.png and docs/viewer-session.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
