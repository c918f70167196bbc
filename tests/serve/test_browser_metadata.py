"""Titles, tags, owner and the turns panel in a real browser.

The same Chromium, Playwright and axe-core as ``test_browser.py`` (its fixtures and helpers):
the page's header shows the session's metadata, a collapsible "Turns" panel lists each turn's
size and largest tool outputs with links that land on the item, the ``serve`` index has
labelled title, owner and tags columns, and hostile metadata stays text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browser_helpers import Watched
from serve_helpers import Server
from test_browser import audit, html_file
from viewer_helpers import ATTACK, conversation, write_session

from jsonl_session import JSONLSession

SECOND_TURN = [
    {"role": "user", "content": "And in Oslo?"},
    {"type": "function_call", "name": "get_forecast", "call_id": "call_9", "arguments": '{"city":"Oslo"}'},
    {"type": "function_call_output", "call_id": "call_9", "output": "snow " * 2000},
    {"role": "assistant", "content": "Snow in Oslo."},
]


def two_turns(folder: Path, session_id: str = "trip") -> JSONLSession:
    write_session(folder / f"{session_id}.jsonl", [*conversation(), *SECOND_TURN])
    return JSONLSession(session_id, folder)


def test_the_page_header_shows_title_tags_and_owner(watched: Watched, tmp_path: Path) -> None:
    folder = tmp_path / "s"
    two_turns(folder).set_metadata_sync(
        title="Paris then Oslo", add_tags=["travel", "weather"], owner="user-42", extra={"ticket": "T-9"}
    )
    page = watched.open(html_file(folder, "trip", tmp_path))
    about = page.locator("#about")
    assert about.is_visible()
    assert about.locator(".about-title").inner_text() == "Paris then Oslo"
    assert about.locator(".tag").all_inner_texts() == ["travel", "weather"]
    assert about.locator(".owner").inner_text() == "owner user-42"
    assert about.locator(".extra").inner_text() == "ticket T-9"
    assert page.title() == "Paris then Oslo · trip · jsonl-session"
    watched.assert_nothing_ran()


def test_without_a_title_the_header_shows_the_first_user_message(watched: Watched, tmp_path: Path) -> None:
    two_turns(tmp_path / "s")
    page = watched.open(html_file(tmp_path / "s", "trip", tmp_path))
    shown = page.locator("#about .about-title.default")
    assert shown.inner_text().endswith("What's the weather in Paris?")
    assert shown.get_attribute("title") == "No title set: the first user message"
    watched.assert_nothing_ran()


def test_the_turns_panel_lists_each_turn_and_its_links_land_on_the_items(
    watched: Watched, tmp_path: Path
) -> None:
    two_turns(tmp_path / "s")
    page = watched.open(html_file(tmp_path / "s", "trip", tmp_path))
    panel = page.locator("details#turns")
    summary = panel.locator("summary")
    assert summary.inner_text().startswith("Turns: 2, context ~")
    assert panel.locator("table").count() == 0  # built when first opened
    summary.click()
    page.wait_for_selector("#turns table")  # built on the toggle event
    headers = panel.locator("th").all_inner_texts()
    assert headers == ["turn", "items", "size", "context", "input tokens", "largest tool outputs", "question"]
    rows = panel.locator("tbody tr")
    assert rows.count() == 2
    first = rows.nth(0).locator("td").all_inner_texts()
    assert first[0] == "turn 1" and first[1] == "8" and first[6] == "What's the weather in Paris?"
    second = rows.nth(1).locator("td").all_inner_texts()
    assert second[0] == "turn 2" and second[1] == "4" and second[5].startswith("get_forecast 9.8 KB")
    assert second[4] == "–"  # no usage recorded
    rows.nth(1).get_by_role("link", name="turn 2").click()
    page.wait_for_function("() => location.hash === '#L10'")
    page.wait_for_selector("#L10.target")
    assert page.evaluate("document.activeElement.id") == "L10"
    page.locator("#turns").get_by_role("link", name="get_forecast 9.8 KB").click()
    page.wait_for_selector("#L12.target")
    page.locator("#turns").get_by_role("link", name="get_forecast 9.8 KB").click()  # the same link again
    page.wait_for_function("() => document.activeElement.id === 'L12'")
    watched.assert_nothing_ran()


def test_a_page_of_the_newest_items_has_no_turns_panel(watched: Watched, tmp_path: Path) -> None:
    two_turns(tmp_path / "s").set_metadata_sync(owner="user-42")
    out = tmp_path / "newest.html"
    from cli_helpers import run

    assert run(tmp_path / "s", "show", "trip", "-n", "3", "--html", "-o", str(out)).code == 0
    page = watched.open(out.as_uri())
    assert page.locator("details#turns").is_hidden()
    assert page.locator("#about .owner").inner_text() == "owner user-42"
    watched.assert_nothing_ran()


def test_hostile_metadata_stays_text_in_the_page_and_the_index(
    watched: Watched, tmp_path: Path, server_for: Any
) -> None:
    folder = tmp_path / "sessions"
    hostile = f"</script><script>{ATTACK}</script>"
    two_turns(folder).set_metadata_sync(
        title=hostile, add_tags=[hostile], owner=hostile, extra={hostile: hostile}
    )
    page = watched.open(html_file(folder, "trip", tmp_path))
    assert page.locator("#about .about-title").inner_text() == hostile
    assert page.locator("#about .tag").inner_text() == hostile
    server: Server = server_for(folder)
    page = watched.open(server.url + "session?id=trip")
    assert page.locator("#about .owner").inner_text() == "owner " + hostile
    index = watched.open(server.url)
    assert index.locator("#sessions td.session-title").inner_text() == hostile
    watched.assert_nothing_ran()


def test_the_index_has_title_owner_and_tags_columns_and_the_served_page_its_panel(
    watched: Watched, tmp_path: Path, server_for: Any
) -> None:
    folder = tmp_path / "sessions"
    two_turns(folder, "titled").set_metadata_sync(title="Paris then Oslo", add_tags=["travel"], owner="ana")
    two_turns(folder, "untitled")
    server: Server = server_for(folder)
    page = watched.open(server.url)
    headers = page.locator("thead th").all_inner_texts()
    assert headers == ["session", "title", "owner", "tags", "items", "size", "last activity", "notes"]
    titled = page.locator("#sessions tr[data-id=titled] td").all_inner_texts()
    assert titled[1:4] == ["Paris then Oslo", "ana", "travel"]
    untitled = page.locator("#sessions tr[data-id=untitled] td.session-title")
    assert untitled.inner_text() == "What's the weather in Paris?"
    assert untitled.get_attribute("class") == "session-title default"
    page = watched.open(server.url + "session?id=titled")
    page.wait_for_selector("#live.on")
    page.locator("#turns summary").click()
    page.wait_for_selector("#turns table")
    assert page.locator("#turns tbody tr").count() == 2
    assert audit(page) == []
    from cli_helpers import run

    assert run(folder, "add", "titled", "A third question").code == 0
    page.wait_for_selector("#L14")
    assert "reload for the newest turns" in page.locator("#turns summary").inner_text()
    watched.assert_nothing_ran()


def test_no_cell_of_the_size_or_activity_columns_wraps_at_1100_px(
    watched: Watched, tmp_path: Path, server_for: Any
) -> None:
    folder = tmp_path / "sessions"
    long = "Refund for order A-1042 after the courier lost the parcel between Lyon and Paris, twice"
    for n in range(3):
        session = two_turns(folder, f"support-ticket-{n:04d}-escalated")
        session.set_metadata_sync(title=long, add_tags=["billing", "refund", "escalated"], owner="agent-42")
        session.add_items_sync([{"role": "user", "content": "x" * 12_000 * (n + 1)}])
    server: Server = server_for(folder)
    page = watched.open(server.url)  # 1100 px wide
    lines = page.evaluate(
        """() => [...document.querySelectorAll('#sessions tr')].flatMap((row) => [5, 6].map((column) => {
            const range = document.createRange();
            range.selectNodeContents(row.children[column]);
            const tops = new Set([...range.getClientRects()].map((rect) => rect.top));
            return [row.children[column].textContent, tops.size];
        }))"""
    )
    assert len(lines) == 6 and all(text for text, _ in lines)
    assert [count for _, count in lines] == [1] * 6, lines  # one line each
    watched.assert_nothing_ran()


def test_a_hand_broken_meta_file_is_named_in_the_header(watched: Watched, tmp_path: Path) -> None:
    two_turns(tmp_path / "s")
    (tmp_path / "s" / "trip.jsonl.meta").write_text('{"owner": 7}')
    page = watched.open(html_file(tmp_path / "s", "trip", tmp_path))
    assert "title, tags and owner unreadable" in page.locator("#about").inner_text()
    assert "trip.jsonl.meta" in page.locator("#about").inner_text()
    assert page.locator("#turns summary").inner_text().startswith("Turns: 2")
    watched.assert_nothing_ran()
