"""What the renderers make of items: the view model, Markdown (via GitHub's cmark-gfm), diff text, HTML.

The hostile corpus (tests/viewer_helpers.py) goes through every renderer: no markup, link or
script from a session may come out, and the text must still be there, literally.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import cmarkgfm  # type: ignore[import-untyped]
import orjson
import pytest
from cmarkgfm.cmark import Options  # type: ignore[import-untyped]
from viewer_helpers import HAND_WRITTEN_BAD_LINES, HOSTILE_TEXTS, conversation, hostile_items

from jsonl_session.render.diff_text import diff_text
from jsonl_session.render.file_io import read_views
from jsonl_session.render.html import script_json, transcript_page
from jsonl_session.render.markdown import markdown
from jsonl_session.render.views import ItemView, ViewBuilder, encode_views, views_of_lines, visible_controls


def lines_of(items: list[dict[str, object]]) -> bytes:
    return b"".join(orjson.dumps(item) + b"\n" for item in items)


def all_views() -> list[ItemView]:
    return views_of_lines(lines_of(hostile_items()) + b"\n".join(HAND_WRITTEN_BAD_LINES) + b"\n")


# -- the view model ---------------------------------------------------------------------------


def test_every_kind_of_item_gets_its_title_kind_and_blocks() -> None:
    views = views_of_lines(lines_of(conversation()))
    assert [(view.number, view.kind, view.title) for view in views] == [
        (1, "system", "system"),
        (2, "user", "user"),
        (3, "reasoning", "reasoning"),
        (4, "function_call", "tool call get_weather"),
        (5, "function_call_output", "tool output"),
        (6, "handoff", "handoff to billing_agent"),
        (7, "handoff", "handoff accepted"),
        (8, "assistant", "assistant"),
        (9, "web_search_call", "web_search_call"),
    ]
    assert views[2].text == "Look up the weather."
    assert views[3].blocks[0].text == '{\n  "city": "Paris"\n}' and views[3].blocks[0].lang == "json"
    assert views[3].ref == views[4].ref == "call_1"
    assert views[4].blocks[0].text == "Sunny, 21°C"
    assert views[7].text == "Sunny and 21°C."
    assert '"ws_1"' in views[8].blocks[0].text


def test_numbers_are_the_file_line_numbers_across_blank_lines_bom_and_crlf() -> None:
    data = (
        b'\xef\xbb\xbf{"role":"user","content":"a"}\r\n\n   \n'
        b'{"role":"assistant","content":"b"}\n\n{"role":"user","content":"c"}'
    )
    assert [(view.number, view.text) for view in views_of_lines(data)] == [(1, "a"), (4, "b"), (6, "c")]


def test_bad_lines_and_a_torn_tail_are_shown_as_they_are_not_dropped() -> None:
    data = b'{"role":"user","content":"ok"}\n<<<<<<< HEAD\n[1,2]\n{"role":"user","content":"half'
    views = views_of_lines(data)
    assert [(view.number, view.kind, view.title) for view in views] == [
        (1, "user", "user"),
        (2, "invalid", "unreadable line: not valid JSON"),
        (3, "invalid", "unreadable line: not a JSON object"),
        (4, "invalid", "unreadable line: incomplete last line (torn tail)"),
    ]
    assert views[1].blocks[0].text == "<<<<<<< HEAD"
    assert views[3].blocks[0].text == '{"role":"user","content":"half'


def test_hand_written_lone_surrogates_and_invalid_utf8_become_replacement_characters() -> None:
    views = views_of_lines(b"\n".join(HAND_WRITTEN_BAD_LINES))
    assert all(view.kind == "invalid" for view in views)
    assert "\\ud800" in views[0].blocks[0].text  # the escape, as written in the file
    assert views[3].blocks[0].text.startswith("\ufffd\ufffd invalid utf-8")
    encode_views(views)  # valid UTF-8 throughout: encoding cannot fail


def test_a_view_survives_items_of_unexpected_shapes() -> None:
    builder = ViewBuilder()
    odd = [
        {"role": 3, "content": {"x": [1]}},
        {"type": None},
        {"type": "function_call", "arguments": [1, 2]},
        {"type": "reasoning", "summary": "plain"},
        {"content": [None, 3, {"type": "input_image"}]},
    ]
    views = [builder.view(item, number) for number, item in enumerate(odd, 1)]
    assert [view.number for view in views] == [1, 2, 3, 4, 5]
    assert views[2].blocks[0].text == "[\n  1,\n  2\n]"
    assert views[4].text == "null 3 [image]"
    encode_views(views)


def test_the_newest_items_keep_their_line_numbers_and_handoffs(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(lines_of(conversation()))
    found = read_views(path, newest=3, lock_timeout=1)
    assert [(view.number, view.kind) for view in found.views] == [
        (7, "handoff"),
        (8, "assistant"),
        (9, "web_search_call"),
    ]
    assert found.meta == f"{path} · the newest 3 of 9 items · {path.stat().st_size} B"


# -- Markdown, rendered by GitHub's cmark-gfm with raw HTML allowed ------------------------------

ALLOWED_TAGS = {"h3", "p", "strong", "blockquote", "br", "details", "summary", "pre", "code"}


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def gfm(text: str) -> _Tags:
    rendered = cmarkgfm.github_flavored_markdown_to_html(text, options=Options.CMARK_OPT_UNSAFE)
    parser = _Tags()
    parser.feed(rendered)
    return parser


def test_markdown_of_the_hostile_corpus_has_only_our_own_markup() -> None:
    parsed = gfm(markdown("<script>x</script>", all_views(), meta="[a](javascript:b)"))
    tags = {tag for tag, _ in parsed.tags}
    assert tags <= ALLOWED_TAGS, tags - ALLOWED_TAGS
    attributes = {(tag, name, value) for tag, attrs in parsed.tags for name, value in attrs}
    assert attributes <= {("details", "open", None), ("pre", "lang", "json")}, attributes


@pytest.mark.parametrize("text", HOSTILE_TEXTS)
def test_markdown_shows_message_text_literally(text: str) -> None:
    view = ViewBuilder().view({"role": "user", "content": text}, 1)
    parsed = gfm(markdown("t", [view]))
    shown = "".join(parsed.text).replace("\xa0", " ")
    expected = visible_controls(text)
    for line in expected.split("\n"):
        assert line.strip() in shown


# Bare URLs, ``www.`` names and e-mail addresses, which GFM's autolink extension turns into links.
LINK_TEXTS = [
    "https://evil.example/x?a=1&b=2#frag",
    "see http://evil.example. or (https://evil.example/path)",
    "ftp://files.example/pub",
    "HTTPS://EVIL.EXAMPLE",
    "www.evil.example",
    "visit www.evil.example/login, now",
    "WWW.evil.example and Www.evil.example",
    "*www.evil.example*",
    "_www.evil.example_",
    "~www.evil.example~",
    "alice@evil.example",
    "a.b+c-d_e@mail.evil.example.",
    "mailto:alice@evil.example",
    "xmpp:alice@evil.example/resource",
    "<alice@evil.example>",
    "<https://evil.example>",
    "x@y.z@evil.example",
    "https://a@evil.example",
    "user@www.evil.example",
    "line one\nhttps://evil.example\nwww.evil.example\nbob@evil.example",
    "   https://evil.example indented",
    "> https://evil.example quoted",
    "- www.evil.example listed",
]


def gfm_autolinked(text: str) -> str:
    """HTML as GitHub renders it: cmark-gfm with its autolink extension on (and raw HTML allowed)."""
    options = Options.CMARK_OPT_UNSAFE
    return str(
        cmarkgfm.markdown_to_html_with_extensions(text, options=options, extensions=["autolink", "tagfilter"])
    )


@pytest.mark.parametrize("text", LINK_TEXTS)
def test_markdown_adds_no_links_for_bare_urls_www_names_or_email_addresses(text: str) -> None:
    views = [
        ViewBuilder().view({"role": "user", "content": text}, 1),
        ViewBuilder().view({"type": "function_call", "call_id": text, "name": text, "arguments": "{}"}, 2),
        ViewBuilder().view({"type": "function_call_output", "call_id": text, "output": text}, 3),
    ]
    document = markdown(text, views, meta=text)
    for rendered in (gfm_autolinked(document), cmarkgfm.github_flavored_markdown_to_html(document)):
        assert "<a " not in rendered and "href" not in rendered, rendered
    parsed = gfm(document)
    shown = "".join(parsed.text).replace("\xa0", " ")
    for line in visible_controls(text).split("\n"):
        assert " ".join(line.split()) in " ".join(shown.split())


def test_markdown_fences_are_longer_than_any_backtick_run_in_tool_output() -> None:
    output = "before\n````\n</details>\n# not a heading\n````````` after"
    view = ViewBuilder().view({"type": "function_call_output", "call_id": "c", "output": output}, 1)
    parsed = gfm(markdown("t", [view]))
    assert {tag for tag, _ in parsed.tags} == {"h3", "p", "strong", "details", "summary", "pre", "code"}
    assert output in "".join(parsed.text)


def test_long_tool_output_is_folded_and_short_output_open() -> None:
    short = ViewBuilder().view({"type": "function_call_output", "call_id": "c", "output": "ok"}, 1)
    long = ViewBuilder().view({"type": "function_call_output", "call_id": "c", "output": "x\n" * 50}, 2)
    text = markdown("t", [short, long])
    assert "<details open><summary>output · 1 line" in text
    assert "<details><summary>output · 51 lines" in text


# -- diff text --------------------------------------------------------------------------------


def test_diff_text_is_stable_full_and_free_of_control_characters() -> None:
    views = all_views()
    text = diff_text(views)
    assert text == diff_text(all_views())
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]", text)
    assert "A" * 1_000_000 in text  # nothing shortened: a diff must show every change
    assert "\\x1b[31mred" in text and "\\u202e" in text


def test_diff_text_of_a_conversation() -> None:
    assert diff_text(views_of_lines(lines_of(conversation()[3:5]))) == (
        "   1  tool call get_weather  [call_1]\n"
        "      arguments:\n"
        "        {\n"
        '          "city": "Paris"\n'
        "        }\n"
        "\n"
        "   2  tool output  [call_1]\n"
        "      output:\n"
        "        Sunny, 21°C\n"
    )


# -- HTML -------------------------------------------------------------------------------------


def test_script_json_escapes_everything_that_could_end_or_bend_a_script_block() -> None:
    data = orjson.dumps(["</script><!--<script>&\u2028\u2029"])
    safe = script_json(data)
    assert re.fullmatch(rb"[^<>&]*", safe) and "\u2028".encode() not in safe and "\u2029".encode() not in safe
    assert json.loads(safe) == json.loads(data)


def test_html_page_of_the_hostile_corpus_holds_no_session_markup(tmp_path: Path) -> None:
    views = all_views()
    page = transcript_page("<script>alert(1)</script>", encode_views(views), meta='"><img src=x>').decode()
    assert page.count("<script") == 2 and page.count("</script") == 2  # the data block and our script
    start = page.index('<script type="application/json" id="session-data">') + len(
        '<script type="application/json" id="session-data">'
    )
    data = json.loads(page[start : page.index("</script>", start)])
    assert data["items"] == json.loads(encode_views(views))  # every character still there
    outside = page[:start] + page[page.index("</script>", start) :]
    assert "alert(1)" not in outside.replace("&lt;script&gt;alert(1)&lt;/script&gt;", "")
    assert "<img" not in outside


def test_html_page_policy_allows_exactly_its_own_script_and_style() -> None:
    page = transcript_page("t", b"[]").decode()
    policy = html.unescape(re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)[1])  # type: ignore[index]
    script = re.search(r"<script>(.*?)</script>", page, re.DOTALL)[1]  # type: ignore[index]
    style = re.search(r"<style>(.*?)</style>", page, re.DOTALL)[1]  # type: ignore[index]

    def digest(text: str) -> str:
        return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()

    assert f"script-src '{digest(script)}'" in policy
    assert f"style-src '{digest(style)}'" in policy
    assert "default-src 'none'" in policy and "connect-src 'none'" in policy
    assert "http" not in page.replace("http-equiv", "")  # no external resource at all


def test_views_of_items_built_in_python_with_lone_surrogates_still_encode() -> None:
    view = ViewBuilder().view({"role": "user\ud800", "content": "a\udc00b", "call_id": "\ud83d"}, 1)
    data = json.loads(encode_views([view]))
    assert data[0]["text"] == "a\ufffdb" and data[0]["kind"] == "user\ufffd"
