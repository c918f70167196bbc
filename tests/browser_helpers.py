"""A real browser for the viewer's tests: Debian's Chromium driven by Playwright (no browser download).

Skipped when Chromium or Playwright is missing, unless ``JSONL_SESSION_REQUIRE_CHROMIUM=1``
(set by ``.ci/run``, which installs ``chromium``): in CI a missing browser is a failure.
"""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Page

TIMEOUT_MS = 30_000


def chromium_path() -> str:
    """The system Chromium, or a skip (a failure when ``JSONL_SESSION_REQUIRE_CHROMIUM=1``)."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    problem = None
    if path is None:
        problem = "chromium is not installed (Debian: apt-get install chromium)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            problem = "playwright is not installed (pip install -e '.[test]')"
    if problem is not None:
        if os.environ.get("JSONL_SESSION_REQUIRE_CHROMIUM") == "1":
            pytest.fail(problem + " and JSONL_SESSION_REQUIRE_CHROMIUM=1")
        pytest.skip(problem)
    assert path is not None
    return path


class Watched:
    """A page, with every dialog it tried to open and every console error it logged."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        page.on("dialog", self._dialog)
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.on(
            "console", lambda message: self.errors.append(message.text) if message.type == "error" else None
        )
        page.set_default_timeout(TIMEOUT_MS)

    def _console(self, message: Any) -> None:
        if message.type == "error":
            self.errors.append(message.text)

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def open(self, url: str) -> Page:
        self.page.goto(url)
        self.page.wait_for_selector("body[data-ready=true]")
        return self.page

    def assert_nothing_ran(self) -> None:
        assert self.page.evaluate("typeof window.pwned") == "undefined"
        assert self.dialogs == []
        assert self.errors == []
