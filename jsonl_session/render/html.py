"""Self-contained HTML pages: a session's transcript (``show --html``, ``serve``) and a folder's index.

One file, no external resource (CSS and JavaScript inline), so it works offline and as a CI
artifact. The items travel as JSON in a ``<script type="application/json">`` block and the
page's script draws them lazily, a screenful at a time: a 100,000-item session is written in
about the time it takes to read it, and opens in a browser as fast as a short one.

Session content is untrusted, and is kept out of markup at every step:

* in the JSON block, ``<``, ``>``, ``&`` and U+2028/U+2029 are written as ``\\uXXXX`` escapes
  (:func:`script_json`), so no ``</script>`` or ``<!--`` can end or bend the block, and the
  JSON stays valid JavaScript too;
* the script only ever puts text in the page with ``textContent`` (never ``innerHTML``) and
  makes no links from session text;
* the few strings written into the HTML itself (title, file name) are HTML-escaped;
* a Content-Security-Policy allows only this page's own script and style (by hash), so even
  a mistake in the above could not run injected script.

Example:
    >>> from jsonl_session.render.views import ViewBuilder, encode_views
    >>> views = [ViewBuilder().view({"role": "user", "content": "<b>"}, 1)]
    >>> page = transcript_page("demo", encode_views(views))
    >>> b"<b>" in page, b"\\\\u003cb\\\\u003e" in page
    (False, True)
"""

from __future__ import annotations

import base64
import hashlib
import html
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import orjson

_UNSAFE_IN_SCRIPT = (
    (b"<", b"\\u003c"),
    (b">", b"\\u003e"),
    (b"&", b"\\u0026"),
    ("\u2028".encode(), b"\\u2028"),
    ("\u2029".encode(), b"\\u2029"),
)


PIECE_BYTES = 256 * 1024
"""About how much of a page :func:`transcript_parts` makes at a time."""


@dataclass(frozen=True)
class Live:
    """Where a served page gets its changes: the events URL and the version the page shows.

    ``problem`` says why the session cannot be read now (then the page shows an alert, and no
    "live" status, until the session reads again).
    """

    events: str
    version: int
    index: str = "./"
    problem: str = ""


def script_json(data: bytes) -> bytes:
    """Make JSON ``data`` safe inside ``<script type="application/json">``.

    These characters can only occur inside JSON strings, where the escape means the same.

    Example:
        >>> script_json(b'["</script>"]')
        b'["\\\\u003c/script\\\\u003e"]'
    """
    for raw, escaped in _UNSAFE_IN_SCRIPT:
        if raw in data:
            data = data.replace(raw, escaped)
    return data


def transcript_page(
    title: str,
    items_json: bytes,
    *,
    meta: str = "",
    live: Live | None = None,
    about: Mapping[str, Any] | None = None,
    times: Sequence[Sequence[int]] | None = None,
) -> bytes:
    """A transcript page for the views in ``items_json`` (a JSON array from ``views.encode_views``).

    Args:
        title: The page title and heading (a session id).
        items_json: The views as a JSON array; escaped here with :func:`script_json`.
        meta: One line under the heading (e.g. the file and its size).
        live: For ``serve``: follow the session through server-sent events.
        about: What the header and the turns panel show (``history.page_data.page_about``):
            ``title``, ``default_title``, ``tags``, ``owner``, ``extra``, ``turns``; JSON values.
        times: When items were added, as ``[line number, ms since 1970]`` pairs
            (``core.item_times.numbered_times``): each item shows its time.
    """
    # One copy of the items: escaped, then joined into the page.
    head = transcript_head(title, meta=meta, live=live, about=about, times=times)
    return b"".join((head, script_json(items_json), transcript_end()))


def transcript_parts(
    title: str,
    views: Iterable[bytes],
    *,
    meta: str = "",
    live: Live | None = None,
    about: Mapping[str, Any] | None = None,
    times: Sequence[Sequence[int]] | None = None,
) -> Iterator[bytes]:
    """The same page as :func:`transcript_page`, in pieces of about :data:`PIECE_BYTES`, as they are made.

    ``views`` are the items' JSON objects (``views.encode_view``), one at a time: the page of a
    100,000-item session is never whole in memory (``show --html`` writes each piece as it
    comes; tests/render/test_html_streaming.py).

    Example:
        >>> from jsonl_session.render.views import ViewBuilder, encode_view
        >>> view = encode_view(ViewBuilder().view({"role": "user", "content": "Hi"}, 1))
        >>> b"".join(transcript_parts("demo", [view])) == transcript_page("demo", b"[" + view + b"]")
        True
    """
    yield transcript_head(title, meta=meta, live=live, about=about, times=times)
    yield from json_array_parts(views)
    yield transcript_end()


def json_array_parts(
    objects: Iterable[bytes], *, opening: bytes = b"[", piece_bytes: int = PIECE_BYTES
) -> Iterator[bytes]:
    """``opening``, the JSON ``objects`` joined by commas and ``]``, in safe pieces (:func:`script_json`)."""
    piece = [opening]
    size = 0
    comma = b""
    for data in objects:
        piece.append(comma + data)
        comma = b","
        size += len(data)
        if size >= piece_bytes:
            yield script_json(b"".join(piece))
            piece, size = [], 0
    piece.append(b"]")
    yield script_json(b"".join(piece))


def transcript_head(
    title: str,
    *,
    meta: str = "",
    live: Live | None = None,
    about: Mapping[str, Any] | None = None,
    times: Sequence[Sequence[int]] | None = None,
) -> bytes:
    """The page up to its items' JSON array (what follows it is :func:`transcript_end`)."""
    settings = {
        "title": title,
        "live": None if live is None else _live(live),
        "about": about,
        "times": times or None,
    }
    prefix = script_json(orjson.dumps(settings)[:-1] + b',"items":')
    return _top(title, meta=meta, index=None if live is None else live.index, about=about) + prefix


def live_head(
    title: str, *, meta: str = "", about: Mapping[str, Any] | None = None, index: str = "./"
) -> bytes:
    """A served page up to its items' JSON array, before anything is known of the items.

    ``serve`` streams the items from the file, then :func:`live_rest`: the times, the turns and
    the version are known only once the items are written. ``about`` gives the page's title
    (its ``turns`` are not needed yet).
    """
    return _top(title, meta=meta, index=index, about=about) + script_json(
        orjson.dumps({"title": title})[:-1] + b',"items":'
    )


def live_rest(
    live: Live, *, about: Mapping[str, Any] | None, times: Sequence[Sequence[int]] | None
) -> Iterator[bytes]:
    """What follows a served page's items (:func:`live_head`): its settings, then the page's end."""
    yield script_json(b',"times":' + orjson.dumps(times or None))
    yield script_json(b',"about":' + orjson.dumps(about))
    yield script_json(b',"live":' + orjson.dumps(_live(live)))
    yield transcript_end()


def _live(live: Live) -> dict[str, Any]:
    return {"events": live.events, "version": live.version, "problem": live.problem}


def _top(title: str, *, meta: str, index: str | None, about: Mapping[str, Any] | None) -> bytes:
    """The page's HTML up to its data block; ``index`` (the way back to it) for a served page."""
    shown = about and (about.get("title") or about.get("default_title"))
    heading = html.escape(title)
    status = changes = ""
    if index is not None:
        heading = f'<a href="{html.escape(index)}">sessions</a> / {heading}'
        status = _LIVE_STATUS
        changes = _CHANGES
    head = _TRANSCRIPT_HEAD.format(
        csp=content_security_policy("transcript.js", index is not None),
        title=html.escape(f"{shown} · {title}" if isinstance(shown, str) else title),
        heading=heading,
        meta=html.escape(meta),
        live=status,
        changes=changes,
        css=_asset("page.css"),
    )
    return head.encode()


def index_page(folder: str, sessions: list[dict[str, object]], *, api: str, events: str) -> bytes:
    """The ``serve`` index: ``sessions`` rows (``serve.rows.index_row``), kept up to date."""
    data = orjson.dumps({"folder": folder, "api": api, "events": events, "sessions": sessions})
    head = _INDEX_HEAD.format(
        csp=content_security_policy("index.js", True), folder=html.escape(folder), css=_asset("page.css")
    )
    return b"".join((head.encode(), script_json(data), _TAIL.format(js=_asset("index.js")).encode()))


@cache
def content_security_policy(script: str, connect: bool) -> str:
    """The page's policy: its own script (the asset ``script``) and style only; ``connect`` for ``serve``."""
    sources = "'self'" if connect else "'none'"
    return (
        f"default-src 'none'; script-src '{_hash(_asset(script))}'; style-src '{_hash(_asset('page.css'))}'; "
        f"connect-src {sources}; img-src data:; base-uri 'none'; form-action 'none'"
    )


@cache
def _asset(name: str) -> str:
    return (resources.files("jsonl_session.render") / "assets" / name).read_text(encoding="utf-8")


@cache
def transcript_end() -> bytes:
    """What follows a transcript page's items: the end of its data block, and its script."""
    return b"}" + _TAIL.format(js=_asset("transcript.js")).encode()


def _hash(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


_LIVE_STATUS = (
    '<span id="live" class="live"><span class="dot" aria-hidden="true"></span><span>connecting…</span></span>'
)
_CHANGES = (
    '<div class="changes"><p id="latest" class="latest" aria-live="polite">'
    "no change since the page opened</p>"
    '<details id="history" hidden><summary>all changes</summary><ul id="changes"></ul></details></div>'
)

# The header sticks only on screens tall and wide enough for it (page.css); ``scroll-padding-top``
# keeps focused elements and line anchors below it. The items are drawn between two spacers,
# only those near the viewport (transcript.js).
_TRANSCRIPT_HEAD = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<title>{title} · jsonl-session</title>
<style>{css}</style>
</head>
<body>
<header class="top">
<div class="bar"><h1>{heading}</h1><span class="meta">{meta}</span>{live}</div>
<p id="about" class="about" hidden></p>
<div class="controls"><input id="search" type="search" placeholder="Search (press /)" \
aria-label="Search the transcript" aria-describedby="search-help" aria-keyshortcuts="/ Control+F">\
<span id="search-help" class="sr">Shows the items that contain the text. Enter goes to the next match, \
Shift+Enter to the previous one.</span>\
<span id="kinds" role="group" aria-label="Show items of each kind"></span>\
<span id="count" class="count" role="status" aria-atomic="true"></span>\
<span class="jumps"><button id="oldest" type="button" class="tool" aria-keyshortcuts="Home" \
title="Go to the oldest item (Home)">↑ oldest</button><button id="newest" type="button" class="tool" \
aria-keyshortcuts="End" title="Go to the newest item (End)">↓ newest</button>\
<button id="wrap" type="button" class="tool" aria-pressed="false">wrap long lines</button></span></div>
{changes}
</header>
<main>
<div id="alert" class="alert" role="alert" hidden></div>
<details id="turns" class="turns" hidden></details>
<div id="top-space" class="space" aria-hidden="true"></div><div id="items"></div>\
<div id="bottom-space" class="space" aria-hidden="true"></div>
<p id="empty" class="empty" hidden></p>
<noscript><p class="empty">This transcript is drawn by JavaScript. Without it, use
<code>jsonl-session show ID --markdown</code>.</p></noscript>
</main>
<script type="application/json" id="session-data">"""

_INDEX_HEAD = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<title>{folder} · jsonl-session</title>
<style>{css}</style>
</head>
<body>
<header class="top index"><h1>Sessions</h1><div id="count" class="meta" role="status"></div></header>
<main><table><caption class="sr">Sessions in this folder, most recently active first</caption>
<thead><tr><th scope="col">session</th><th scope="col">title</th><th scope="col">owner</th>
<th scope="col">tags</th><th scope="col" class="n">items</th><th scope="col" class="n">size</th>
<th scope="col">last activity</th><th scope="col">notes</th></tr></thead>
<tbody id="sessions"></tbody></table></main>
<script type="application/json" id="index-data">"""

_TAIL = """</script>
<script>{js}</script>
</body>
</html>
"""
