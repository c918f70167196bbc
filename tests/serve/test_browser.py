"""The pages in a real browser: Debian's Chromium driven by Playwright (the pip package, no browser download).

Skipped when Chromium or Playwright is missing, unless ``JSONL_SESSION_REQUIRE_CHROMIUM=1``
(set by ``.ci/run``, which installs ``chromium``): in CI a missing browser is a failure.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from cli_helpers import run
from serve_helpers import Server, server_for
from viewer_helpers import ATTACK, HAND_WRITTEN_BAD_LINES, conversation, hostile_items, write_session

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

__all__ = ["server_for"]  # the fixture

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


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = chromium_path()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


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


@pytest.fixture
def watched(browser: Browser) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    try:
        yield Watched(context.new_page())
    finally:
        context.close()


def html_file(folder: Path, session_id: str, tmp_path: Path) -> str:
    out = tmp_path / f"{session_id}.html"
    result = run(folder, "show", session_id, "--html", "-o", str(out))
    assert result.code == 0, result.err
    return out.as_uri()


def articles(page: Page) -> list[str]:
    return page.locator("article.item header .title").all_inner_texts()


def test_the_transcript_renders_offline(watched: Watched, tmp_path: Path) -> None:
    write_session(tmp_path / "s" / "chat.jsonl", conversation())
    page = watched.open(html_file(tmp_path / "s", "chat", tmp_path))
    assert articles(page) == [
        "system",
        "user",
        "reasoning",
        "tool call get_weather",
        "tool output",
        "handoff to billing_agent",
        "handoff accepted",
        "assistant",
        "web_search_call",
    ]
    assert page.locator("#L4 pre").inner_text() == '{\n  "city": "Paris"\n}'
    assert page.locator("#L4 .ref").inner_text() == "call_1"
    assert page.locator("#count").inner_text() == "9 items"
    watched.assert_nothing_ran()


def test_filters_and_search_narrow_the_transcript(watched: Watched, tmp_path: Path) -> None:
    write_session(tmp_path / "s" / "chat.jsonl", conversation())
    page = watched.open(html_file(tmp_path / "s", "chat", tmp_path))
    page.click("button.kind[data-kind=function_call]")
    page.click("button.kind[data-kind=handoff]")
    assert "tool call get_weather" not in articles(page) and len(articles(page)) == 6
    assert page.locator("#count").inner_text() == "6 of 9 items match"
    page.click("button.kind[data-kind=function_call]")
    page.fill("#search", "PARIS")
    page.wait_for_function("() => document.querySelector('#count').textContent.startsWith('2 of')")
    assert articles(page) == ["user", "tool call get_weather"]
    assert page.locator("mark").all_inner_texts() == ["Paris", "Paris"]
    watched.assert_nothing_ran()


def test_long_sessions_render_lazily_and_line_links_reach_any_item(watched: Watched, tmp_path: Path) -> None:
    items = [{"role": "user", "content": f"message {number}"} for number in range(1, 1001)]
    write_session(tmp_path / "s" / "long.jsonl", items)
    page = watched.open(html_file(tmp_path / "s", "long", tmp_path))
    assert page.locator("article.item").count() < 1000  # only the first screenfuls are drawn
    assert page.locator("#count").inner_text() == "1,000 items"
    page.evaluate("location.hash = '#L900'")
    page.wait_for_selector("#L900")
    assert page.locator("#L900 .text").inner_text() == "message 900"
    watched.assert_nothing_ran()


def test_hostile_content_does_not_execute_in_the_file(watched: Watched, tmp_path: Path) -> None:
    write_session(tmp_path / "s" / "evil.jsonl", hostile_items(), extra_lines=HAND_WRITTEN_BAD_LINES)
    page = watched.open(html_file(tmp_path / "s", "evil", tmp_path))
    exercise(page, len(hostile_items()) + len(HAND_WRITTEN_BAD_LINES))
    assert page.locator("article.tone-invalid").count() == len(HAND_WRITTEN_BAD_LINES)
    assert f"<script>{ATTACK}</script>" in page.locator("#items").inner_text()
    watched.assert_nothing_ran()


def exercise(page: Page, total: int) -> None:
    """Once the page holds ``total`` items, draw everything: items, folded blocks, long texts, marks."""
    page.wait_for_function(f"() => document.querySelector('#count').textContent === '{total} items'")
    page.fill("#search", "script")
    page.wait_for_function("() => document.querySelector('#count').textContent.includes('match')")
    page.fill("#search", "")
    page.wait_for_function("() => !document.querySelector('#count').textContent.includes('match')")
    while (drawn := page.locator("article.item").count()) < total:
        page.evaluate("document.getElementById('more').scrollIntoView()")
        page.wait_for_function(f"() => document.querySelectorAll('article.item').length > {drawn}")
    page.evaluate("document.querySelectorAll('details').forEach((d) => { d.open = true; })")
    page.evaluate("document.querySelectorAll('button.all').forEach((b) => b.click())")


# -- served, live --------------------------------------------------------------------------------


@pytest.fixture
def live_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "sessions"
    write_session(folder / "chat.jsonl", conversation())
    return folder


def test_an_item_appended_by_another_process_appears_and_a_pop_removes_it(
    watched: Watched, live_folder: Path, server_for: Any
) -> None:
    server: Server = server_for(live_folder)
    page = watched.open(server.url + "session?id=chat")
    page.wait_for_selector("#live.on")
    assert run(live_folder, "add", "chat", "Live from another process").code == 0
    page.wait_for_selector("#L10")
    assert page.locator("#L10 .text").inner_text() == "Live from another process"
    assert page.locator("#changes li").first.inner_text().endswith("item 10 appended")

    assert run(live_folder, "pop", "chat").code == 0
    page.wait_for_selector("#L10", state="detached")
    assert page.locator("#changes li").first.inner_text().endswith("item 10 removed")
    assert len(articles(page)) == 9

    assert run(live_folder, "clear", "chat", "--yes").code == 0
    page.wait_for_function("() => document.querySelectorAll('article.item').length === 0")
    assert "session cleared" in page.locator("#changes li").first.inner_text()
    watched.assert_nothing_ran()


def test_the_index_shows_new_sessions_as_they_appear(
    watched: Watched, live_folder: Path, server_for: Any
) -> None:
    server: Server = server_for(live_folder)
    page = watched.open(server.url)
    assert page.locator("#sessions tr").count() == 1
    assert run(live_folder, "add", "a-new-one", "hello").code == 0
    page.wait_for_selector("#sessions tr[data-id=a-new-one]")
    assert page.locator("#sessions tr").first.get_attribute("data-id") == "a-new-one"  # newest first
    page.click("text=a-new-one")
    page.wait_for_selector("body[data-ready=true] #L1")
    assert page.locator("#L1 .text").inner_text() == "hello"
    watched.assert_nothing_ran()


def test_hostile_content_does_not_execute_when_served_live(
    watched: Watched, live_folder: Path, server_for: Any
) -> None:
    write_session(live_folder / "evil.jsonl", hostile_items()[:30])
    server: Server = server_for(live_folder)
    page = watched.open(server.url + "session?id=evil")
    page.wait_for_selector("#live.on")
    assert run(live_folder, "add", "evil", "-", input=_lines(hostile_items()[30:])).code == 0
    exercise(page, len(hostile_items()))
    index = watched.open(server.url)
    assert index.locator("#sessions tr").count() == 2
    watched.assert_nothing_ran()


def _lines(items: list[dict[str, Any]]) -> bytes:
    import orjson

    return b"".join(orjson.dumps(item) + b"\n" for item in items)
