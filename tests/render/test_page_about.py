"""The page's ``about`` data (title, tags, owner, turns) travels as data, never as markup."""

from __future__ import annotations

import json

from jsonl_session.render.html import transcript_page

HOSTILE = "</script><script>alert(1)</script><!--"


def test_about_is_in_the_data_block_and_the_document_title_is_escaped() -> None:
    about = {
        "title": HOSTILE,
        "default_title": None,
        "tags": [HOSTILE],
        "owner": HOSTILE,
        "extra": {HOSTILE: HOSTILE},
        "turns": [{"turn": 1, "first_line": 1, "text": HOSTILE, "largest": []}],
        "context_tokens": 3,
    }
    page = transcript_page("id<1>", b"[]", about=about).decode()
    assert page.count("<script") == 2 and page.count("</script") == 2 and "<!--" not in page
    escaped = "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;!--"
    assert f"<title>{escaped} · id&lt;1&gt; · jsonl-session</title>" in page
    marker = '<script type="application/json" id="session-data">'
    start = page.index(marker) + len(marker)
    data = json.loads(page[start : page.index("</script>", start)])
    assert data["about"] == about and data["items"] == []


def test_without_about_the_page_is_as_before() -> None:
    page = transcript_page("chat", b"[]").decode()
    assert "<title>chat · jsonl-session</title>" in page
    assert '"about":null' in page
