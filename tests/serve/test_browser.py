"""The pages in a real browser: Debian's Chromium driven by Playwright (the pip package, no browser download).

Skipped when Chromium or Playwright is missing, unless ``JSONL_SESSION_REQUIRE_CHROMIUM=1``
(set by ``.ci/run``, which installs ``chromium``): in CI a missing browser is a failure.

Accessibility is checked with axe-core, vendored in ``tests/serve/vendor`` (pinned, hash-checked):
no critical or serious violation on the index, a served session and the static page, light and
dark. Keyboard paths are driven with real key presses.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from browser_helpers import Watched
from cli_helpers import run
from serve_helpers import Server
from viewer_helpers import ATTACK, HAND_WRITTEN_BAD_LINES, conversation, hostile_items, write_session

from jsonl_session import JSONLSession

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

AXE = Path(__file__).parent / "vendor" / "axe.min.js"
AXE_SHA256 = "29348999450cdf2849a8e70b7912fc2da85a849da39c0d0d5394f51d4a9ed95c"  # axe-core 4.14.1


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


@pytest.mark.parametrize("where", ["static page", "served page"])
def test_each_item_shows_when_it_was_added(
    watched: Watched, tmp_path: Path, server_for: Any, where: str
) -> None:
    folder = tmp_path / "s"
    session = JSONLSession("timed", folder)
    items = conversation()
    session.add_items_sync(items[:4])
    with session.path.open("ab") as hand:  # written by hand: no time
        hand.write(b'{"role": "user", "content": "added by hand"}\n')
    session.add_items_sync(items[4:])
    times = {number: when for number, (_, when) in enumerate(session.get_items_with_times_sync(), start=1)}
    if where == "static page":
        page = watched.open(html_file(folder, "timed", tmp_path))
    else:  # serve showed no times at all (the static page did)
        page = watched.open(server_for(folder).url + "session?id=timed")
    assert page.locator("article.item").count() == len(items) + 1
    stamp = page.locator("#L2 header time.at")
    added = times[2]
    assert added is not None
    assert stamp.get_attribute("datetime") == added.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert (stamp.get_attribute("title") or "").startswith("added ")
    assert stamp.locator(".sr").text_content() == "added "  # what a screen reader hears first
    assert page.locator("#L5 header time").count() == 0  # the hand-written line has no time
    assert page.locator("article.item header time.at").count() == len(items)
    assert audit(page) == []  # the label keeps its contrast, and reads as "added <time>"
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


def test_hostile_content_does_not_execute_in_the_file(watched: Watched, tmp_path: Path) -> None:
    write_session(tmp_path / "s" / "evil.jsonl", hostile_items(), extra_lines=HAND_WRITTEN_BAD_LINES)
    page = watched.open(html_file(tmp_path / "s", "evil", tmp_path))
    text = exercise(page, len(hostile_items()) + len(HAND_WRITTEN_BAD_LINES))
    assert page.locator("article.tone-invalid").count() == len(HAND_WRITTEN_BAD_LINES)
    assert f"<script>{ATTACK}</script>" in text
    watched.assert_nothing_ran()


def exercise(page: Page, total: int) -> str:
    """Once the page holds ``total`` items, draw everything (items, folded blocks, long texts, marks)
    and return the text drawn."""
    page.wait_for_function(f"() => document.querySelector('#count').textContent === '{total} items'")
    page.fill("#search", "script")
    page.wait_for_function("() => document.querySelector('#count').textContent.includes('match')")
    page.fill("#search", "")
    page.wait_for_function("() => !document.querySelector('#count').textContent.includes('match')")
    page.click("#wrap")  # wrapping too (but never a huge text: see page.css)
    seen: set[str] = set()
    texts = []
    page.evaluate("scrollTo(0, 0)")
    while True:  # the page draws only what is near the viewport: walk it down
        page.evaluate("document.querySelectorAll('details').forEach((d) => { d.open = true; })")
        page.evaluate(
            "document.querySelectorAll('button.all[aria-expanded=false]').forEach((b) => b.click())"
        )
        seen.update(page.eval_on_selector_all("article.item", "(nodes) => nodes.map((n) => n.id)"))
        texts.append(page.locator("#items").inner_text())
        if page.evaluate("innerHeight + scrollY >= document.documentElement.scrollHeight - 2"):
            break
        page.evaluate("scrollBy(0, innerHeight)")
        page.evaluate("new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    assert len(seen) == total
    return "\n".join(texts)


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
    assert page.locator("#latest").inner_text().endswith("item 10 appended")
    assert page.locator("#latest").get_attribute("aria-live") == "polite"

    assert run(live_folder, "pop", "chat").code == 0
    page.wait_for_selector("#L10", state="detached")
    assert page.locator("#latest").inner_text().endswith("item 10 removed")
    assert page.locator("#changes li").count() == 2  # the older ones fold under "all changes"
    assert len(articles(page)) == 9

    assert run(live_folder, "clear", "chat", "--yes").code == 0
    page.wait_for_function("() => document.querySelectorAll('article.item').length === 0")
    assert "session cleared" in page.locator("#latest").inner_text()
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


# -- broken lines ----------------------------------------------------------------------------------


def test_a_malformed_line_is_flagged_and_hides_nothing_when_served(
    watched: Watched, tmp_path: Path, server_for: Any
) -> None:
    folder = tmp_path / "sessions"
    good = conversation()[:3]
    write_session(
        folder / "broken.jsonl",
        good[:2],
        extra_lines=[b'{"role": "user", "content": "cut', orjson_line(good[2])],
    )
    torn = write_session(folder / "torn.jsonl", good[:2])
    torn.write_bytes(torn.read_bytes() + b'{"role": "user", "cont')  # a write in progress, or cut short
    server: Server = server_for(folder)
    page = watched.open(server.url + "session?id=torn")
    assert articles(page) == ["system", "user"]  # the complete lines show
    page = watched.open(server.url + "session?id=broken")
    assert articles(page) == [
        "system",
        "user",
        "unreadable line: not valid JSON",
        "reasoning",
    ]
    assert page.locator("#L3").get_attribute("class") == "item tone-invalid"
    alert = page.locator("#alert[role=alert]")
    assert alert.is_visible() and "line 3" in alert.inner_text().lower()
    page.wait_for_function("() => document.querySelector('#live').textContent.includes('not live')")
    page.wait_for_timeout(300)  # the event stream is open by now: still no green "live"
    assert page.locator("#live.on").count() == 0 and page.locator("#live.failed").count() == 1

    write_session(folder / "broken.jsonl", good)  # fixed by hand: the watch reads it again
    page.wait_for_selector("#live.on")
    assert alert.is_hidden()
    assert articles(page) == ["system", "user", "reasoning"]
    watched.assert_nothing_ran()


def test_a_malformed_line_is_flagged_in_the_static_page_too(watched: Watched, tmp_path: Path) -> None:
    write_session(tmp_path / "s" / "torn.jsonl", conversation()[:2], extra_lines=[b"{not json"])
    (tmp_path / "s" / "torn.jsonl").write_bytes(
        (tmp_path / "s" / "torn.jsonl").read_bytes() + b'{"role": "us'
    )
    page = watched.open(html_file(tmp_path / "s", "torn", tmp_path))
    assert articles(page) == [
        "system",
        "user",
        "unreadable line: not valid JSON",
        "unreadable line: incomplete last line (torn tail)",
    ]
    assert "lines: 3, 4" in page.locator("#alert").inner_text()
    page.get_by_role("button", name="go to line 3").click()
    assert page.evaluate("document.activeElement.id") == "L3"
    watched.assert_nothing_ran()


def orjson_line(item: dict[str, Any]) -> bytes:
    import orjson

    return orjson.dumps(item)


# -- big sessions ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def big_page(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The static page of a 10,000-item session whose item 9,876 alone says "needle"."""
    folder = tmp_path_factory.mktemp("big")
    items = [
        {
            "role": "user" if number % 2 else "assistant",
            "content": f"message {number} " + "words " * (number % 40),
        }
        for number in range(1, 10_001)
    ]
    items[9_875]["content"] = "the needle is here"
    write_session(folder / "s" / "big.jsonl", items)
    return html_file(folder / "s", "big", folder)


def drawn(page: Page) -> int:
    return int(page.evaluate("jsonlSession.stats().drawn"))


def below_header(page: Page, selector: str) -> bool:
    """The element's top is in the viewport and not under the (sticky) header."""
    return bool(
        page.evaluate(
            """(selector) => {
                const box = document.querySelector(selector).getBoundingClientRect();
                const header = document.querySelector('header.top').getBoundingClientRect();
                return box.top >= Math.max(0, header.bottom) - 1 && box.top < innerHeight;
            }""",
            selector,
        )
    )


def test_a_big_session_keeps_the_page_small_and_a_deep_link_lands_below_the_header(
    watched: Watched, big_page: str
) -> None:
    page = watched.open(big_page + "#L9999")
    page.wait_for_selector("#L9999")
    assert below_header(page, "#L9999")
    assert page.evaluate("document.activeElement.id") == "L9999"
    assert page.locator("#L9999.target").count() == 1
    assert drawn(page) <= 200 and page.locator("article.item").count() == drawn(page)
    page.evaluate("location.hash = '#L5000'")
    page.wait_for_selector("#L5000")
    assert below_header(page, "#L5000") and drawn(page) <= 200
    for _ in range(20):  # scrolling draws what comes into view, and lets go of the rest
        page.mouse.wheel(0, 2000)
        page.evaluate("new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    assert page.locator("article.item").count() <= 200
    top = page.evaluate(
        "[...document.querySelectorAll('article.item')].find((n) => n.getBoundingClientRect().bottom > 0).id"
    )
    assert int(top[1:]) > 5000
    watched.assert_nothing_ran()


def test_search_and_find_reach_items_that_are_not_drawn(watched: Watched, big_page: str) -> None:
    page = watched.open(big_page)
    assert page.locator("#L9876").count() == 0
    page.keyboard.press("Control+f")  # the browser's find sees only drawn items: ours sees them all
    assert page.evaluate("document.activeElement.id") == "search"
    page.keyboard.type("needle")
    page.wait_for_function("() => document.querySelector('#count').textContent === '1 of 10,000 items match'")
    page.keyboard.press("Enter")
    page.wait_for_selector("#L9876")
    assert below_header(page, "#L9876")
    assert page.locator("#count").inner_text() == "match 1 of 1 (line 9876)"
    assert page.locator("#L9876 mark").inner_text() == "needle"
    assert page.evaluate("document.activeElement.id") == "search"  # typing can go on
    watched.assert_nothing_ran()


# -- keyboard --------------------------------------------------------------------------------------


def focused(page: Page) -> str:
    return str(
        page.evaluate(
            "(() => { const e = document.activeElement;"
            " return e.id || e.dataset.kind || e.getAttribute('aria-label')"
            " || e.textContent.slice(0, 40); })()"
        )
    )


def test_keyboard_jumps_to_the_newest_and_oldest_item_in_one_key(watched: Watched, big_page: str) -> None:
    page = watched.open(big_page)
    page.keyboard.press("End")
    page.wait_for_selector("#L10000")
    assert focused(page) == "L10000" and below_header(page, "#L10000")
    assert page.evaluate("innerHeight + scrollY >= document.documentElement.scrollHeight - 2")
    page.keyboard.press("Home")
    assert focused(page) == "L1" and page.evaluate("scrollY") == 0
    page.get_by_role("button", name="↓ newest").press("Enter")
    assert focused(page) == "L10000"
    page.keyboard.press("Tab")  # Tab goes on from the newest item, not from the top of the page
    assert page.evaluate("document.activeElement.closest('article').id") == "L10000"
    assert drawn(page) <= 200
    watched.assert_nothing_ran()


def test_keyboard_search_filters_and_folds(watched: Watched, tmp_path: Path) -> None:
    items = [*conversation(), {"role": "assistant", "content": "long " * 2000}]
    write_session(tmp_path / "s" / "chat.jsonl", items)
    page = watched.open(html_file(tmp_path / "s", "chat", tmp_path))

    page.keyboard.press("/")
    assert focused(page) == "search"
    page.keyboard.type("paris")
    page.wait_for_function("() => document.querySelector('#count').textContent === '2 of 10 items match'")
    assert page.locator("#count").get_attribute("role") == "status"  # read out
    page.keyboard.press("Enter")
    assert page.locator("#count").inner_text() == "match 1 of 2 (line 2)"
    page.keyboard.press("Enter")
    assert page.locator("#count").inner_text() == "match 2 of 2 (line 4)"
    page.keyboard.press("Shift+Enter")
    assert page.locator("#count").inner_text() == "match 1 of 2 (line 2)"
    page.keyboard.press("Escape")  # the search box's own clear
    page.wait_for_function("() => document.querySelector('#count').textContent === '10 items'")

    # Filters: named with their count, toggled with Space, off state announced (aria-pressed).
    tool_calls = page.get_by_role("button", name="tool call, 1 item")
    assert tool_calls.get_attribute("title") == "type: function_call"
    page.keyboard.press("Tab")
    while focused(page) != "system":
        page.keyboard.press("Tab")
    while focused(page) != "function_call":
        page.keyboard.press("Tab")
    page.keyboard.press("Space")
    assert tool_calls.get_attribute("aria-pressed") == "false"
    assert page.locator("#count").inner_text() == "9 of 10 items match"
    page.keyboard.press("Enter")
    assert tool_calls.get_attribute("aria-pressed") == "true"

    # Fold and unfold a tool call's arguments; "show all" moves focus to the text and folds back.
    summary = page.locator("#L4 summary")
    summary.focus()
    page.keyboard.press("Enter")
    assert page.locator("#L4 details").get_attribute("open") is None
    page.keyboard.press("Enter")
    assert page.locator("#L4 details").get_attribute("open") == ""
    more = page.locator("#L10 button.all")
    assert more.inner_text() == "show all 10,000 characters"
    more.focus()
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.classList.contains('text')")
    assert len(page.locator("#L10 .text").inner_text()) > 9_000
    assert more.inner_text() == "show less" and more.get_attribute("aria-expanded") == "true"
    more.focus()
    page.keyboard.press("Enter")
    assert more.inner_text().startswith("show all") and len(page.locator("#L10 .text").inner_text()) < 4_100
    assert page.evaluate("document.activeElement.classList.contains('all')")
    watched.assert_nothing_ran()


# -- layout: header, wide blocks, words, code ------------------------------------------------------


def test_the_header_clears_focus_and_does_not_stick_on_a_phone(browser: Browser, big_page: str) -> None:
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    try:
        page = Watched(context.new_page()).open(big_page + "#L300")
        assert page.evaluate("getComputedStyle(document.querySelector('header.top')).position") == "sticky"
        header = page.evaluate("document.querySelector('header.top').offsetHeight")
        assert header < 0.15 * 900
        for _ in range(20):  # backwards through the items: no stop hides under the header
            page.keyboard.press("Shift+Tab")
            if page.evaluate("document.querySelector('header.top').contains(document.activeElement)"):
                break
            assert page.evaluate(
                "document.activeElement.getBoundingClientRect().top"
                " >= document.querySelector('header.top').getBoundingClientRect().bottom - 1"
            )
    finally:
        context.close()
    for viewport in ({"width": 375, "height": 700}, {"width": 1100, "height": 450}):  # phone; 200 % zoom
        context = browser.new_context(viewport=viewport)  # type: ignore[arg-type]
        try:
            page = Watched(context.new_page()).open(big_page + "#L300")
            assert (
                page.evaluate("getComputedStyle(document.querySelector('header.top')).position") == "static"
            )
            assert below_header(page, "#L300")
        finally:
            context.close()


def test_wide_blocks_are_labelled_regions_and_can_wrap(watched: Watched, tmp_path: Path) -> None:
    wide = {"type": "function_call_output", "call_id": "c", "output": "x" * 300}
    write_session(tmp_path / "s" / "wide.jsonl", [{"role": "user", "content": "y" * 300}, wide])
    page = watched.open(html_file(tmp_path / "s", "wide", tmp_path))
    page.locator("#L2 details").evaluate("(d) => { d.open = true; }")
    page.wait_for_selector("#L2 pre[role=region]")
    region = page.locator("#L2 pre")
    assert region.get_attribute("aria-label") == "output of line 2"
    assert region.get_attribute("tabindex") == "0"
    assert page.locator("#L1 .text").get_attribute("role") == "region"
    region.focus()
    page.keyboard.press("ArrowRight")  # scrolls sideways from the keyboard
    page.wait_for_function("() => document.querySelector('#L2 pre').scrollLeft > 0")
    wrap = page.get_by_role("button", name="wrap long lines")
    wrap.click()
    assert wrap.get_attribute("aria-pressed") == "true"
    page.wait_for_function("() => !document.querySelector('#L2 pre').hasAttribute('role')")
    assert page.evaluate(
        "document.querySelector('#L1 .text').scrollWidth <= document.querySelector('#L1 .text').clientWidth"
    )


def test_code_fences_in_messages_are_code_blocks_of_text(watched: Watched, tmp_path: Path) -> None:
    text = f"Run this:\n```html\n<script>{ATTACK}</script>\n```\nthen `ls -l` and **done**"
    write_session(tmp_path / "s" / "code.jsonl", [{"role": "assistant", "content": text}])
    page = watched.open(html_file(tmp_path / "s", "code", tmp_path))
    assert page.locator("#L1 pre.code code").inner_text() == f"<script>{ATTACK}</script>"
    assert page.locator("#L1 pre.code .lang").inner_text() == "html"
    assert page.locator("#L1 .text > code").inner_text() == "ls -l"
    assert "`" not in page.locator("#L1 .text").inner_text()
    watched.assert_nothing_ran()


# -- axe-core --------------------------------------------------------------------------------------


def audit(page: Page) -> list[str]:
    """axe-core's critical and serious violations on ``page``, one line each."""
    source = AXE.read_bytes()
    assert hashlib.sha256(source).hexdigest() == AXE_SHA256, "tests/serve/vendor/axe.min.js was changed"
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(source.decode())  # through DevTools: the page's CSP does not apply
    results = page.evaluate("axe.run(document, { resultTypes: ['violations'] })")
    ran = {rule["id"] for kind in ("passes", "violations", "incomplete") for rule in results[kind]}
    assert "color-contrast" in ran  # the checks ran (not an empty or half-loaded page)
    return [
        f"{violation['id']} ({violation['impact']}): {violation['help']}: "
        + "; ".join(
            node["target"][0] if isinstance(node["target"][0], str) else str(node["target"])
            for node in violation["nodes"][:5]
        )
        for violation in results["violations"]
        if violation["impact"] in ("critical", "serious")
    ]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_no_serious_violation(
    browser: Browser, live_folder: Path, server_for: Any, tmp_path: Path, scheme: str
) -> None:
    wide = {"type": "function_call_output", "call_id": "w", "output": "z" * 400}
    write_session(live_folder / "wide.jsonl", [*conversation(), wide], extra_lines=[b"{bad"])
    # a header with title, tags and owner (and, in the index, their columns)
    JSONLSession("chat", live_folder).set_metadata_sync(title="Weather", add_tags=["demo"], owner="user-42")
    server: Server = server_for(live_folder)
    context = browser.new_context(viewport={"width": 1100, "height": 900}, color_scheme=scheme)  # type: ignore[arg-type]
    try:
        watched = Watched(context.new_page())
        page = watched.open(server.url)
        assert audit(page) == []

        page = watched.open(server.url + "session?id=chat")
        page.wait_for_selector("#live.on")
        page.evaluate("document.querySelectorAll('details').forEach((d) => { d.open = true; })")
        page.wait_for_selector("#turns table")  # the turns panel, open
        for kind in ("function_call", "reasoning"):  # switched off
            page.click(f"button.kind[data-kind={kind}]")
        assert run(live_folder, "add", "chat", "a change to list").code == 0
        page.wait_for_selector("#L10")
        assert audit(page) == []

        page = watched.open(html_file(live_folder, "wide", tmp_path))
        page.evaluate("document.querySelectorAll('details').forEach((d) => { d.open = true; })")
        page.wait_for_selector("#turns table")
        page.wait_for_selector("pre[role=region]")
        page.click("button.kind[data-kind=user]")
        assert audit(page) == []
        watched.errors = [error for error in watched.errors if "unreadable" not in error]
        watched.assert_nothing_ran()
    finally:
        context.close()
