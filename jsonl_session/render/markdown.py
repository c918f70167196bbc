"""A transcript as GitHub-flavoured Markdown, for a pull-request comment or a README (``show --markdown``).

Session text is shown literally, never interpreted: every Markdown-significant ASCII
character is backslash-escaped (so ``<script>``, ``[link](javascript:...)``, ``@someone``
and ``# heading`` stay plain text), control characters are made visible, and each message
sits in a block quote, so an unclosed code fence in a message cannot swallow the rest of the
document. Tool arguments and outputs go in fenced code blocks inside ``<details>`` (open when
short): a fence is always longer than any run of backticks in its text.

Example:
    >>> from jsonl_session.render.views import ViewBuilder
    >>> print(markdown("demo", [ViewBuilder().view({"role": "user", "content": "Hi *there*"}, 1)]))
    ### demo
    <BLANKLINE>
    **1 · user**
    <BLANKLINE>
    > Hi \\*there\\*
    <BLANKLINE>
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable

from .sizes import human_size
from .views import Block, ItemView, visible_controls

FOLD_CHARS = 600
FOLD_LINES = 12
"""Blocks longer than this start folded (the same rule as the HTML page)."""

# Any ASCII punctuation may be backslash-escaped in CommonMark. Escaped anywhere: what means
# something inside a line in GitHub's Markdown (``@`` mentions, ``$`` maths; with ``[`` and
# ``<`` escaped no link can form, so ``javascript:`` is just text). Escaped at a line's start:
# what starts a heading, list, quote or rule there. The rest stays readable as it is.
_SPECIAL = re.compile(r"([\\`*_\[\]<>&|~$@])")
_LINE_START = re.compile(r"^(\s*)([#+\-=]|\d+[.)])")
# GFM's autolink extension makes links of bare URLs, ``www.`` names and e-mail addresses in
# plain text, escaped or not: ``https://x``, ``www.x.y``, ``a@b.c``. A backslash
# before the ``:`` of ``://`` or the ``.`` of ``www.`` stops the first two (cmark-gfm looks
# for them in the source); an address is found in the parsed text, where escapes are already
# gone, so an empty HTML comment (invisible, and dropped by GitHub) splits it before the
# ``@``. Never at a line's start, where ``<!--`` would open an HTML block: only after a
# character. tests/render/test_render.py checks a corpus with cmark-gfm's autolink extension on.
_URL_SCHEME = re.compile(r":(?=/)")
_WWW = re.compile(r"(?i)(www)\.")
_ADDRESS = re.compile(r"(?<=\S)\\@")
_BACKTICKS = re.compile(r"`+")


def markdown(title: str, views: Iterable[ItemView], *, meta: str = "") -> str:
    """The transcript of ``views`` as Markdown, headed by ``title`` (and ``meta``, one line)."""
    parts = [f"### {inline(title)}\n"]
    if meta:
        parts.append(f"{inline(meta)}\n")
    for view in views:
        parts.append(item_markdown(view))
    return "\n".join(parts)


def item_markdown(view: ItemView) -> str:
    """One item: a bold heading line, the text as a block quote, then each block in ``<details>``."""
    heading = f"**{view.number} · {inline(view.title)}**"
    if view.ref:
        heading += f" {inline(view.ref)}"
    parts = [heading + "\n"]
    if view.text:
        parts.append(quote(view.text) + "\n")
    for block in view.blocks:
        parts.append(details(block))
    return "\n".join(parts)


def inline(text: str) -> str:
    """``text`` as literal Markdown on one line.

    Example:
        >>> print(inline("<b>hi</b> [x](javascript:y)"))
        \\<b\\>hi\\</b\\> \\[x\\](javascript:y)
    """
    return _escape(" ".join(visible_controls(text).split()))


def quote(text: str) -> str:
    """``text`` as a literal block quote: line breaks kept (as hard breaks), nothing interpreted."""
    lines = [_escape(line) for line in visible_controls(text).split("\n")]
    out = []
    for index, line in enumerate(lines):
        line = line.replace("\t", "    ")
        stripped = line.lstrip(" ")
        if stripped != line:  # keep indentation without making it an indented code block
            line = "&nbsp;" * (len(line) - len(stripped)) + stripped
        last = index == len(lines) - 1 or not lines[index + 1]
        out.append("> " + line + ("" if last or not line else "\\"))
    return "\n".join(out)


def details(block: Block) -> str:
    """A block as a fenced code block in ``<details>``, open when short."""
    text = visible_controls(block.text)
    lines = text.count("\n") + 1
    folded = len(text) > FOLD_CHARS or lines > FOLD_LINES
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    size = human_size(len(text.encode(errors="surrogatepass")))  # bytes, as ls and the viewer count
    summary = html.escape(f"{block.caption} · {lines} line{'' if lines == 1 else 's'} · {size}")
    return (
        f"<details{'' if folded else ' open'}><summary>{summary}</summary>\n\n"
        f"{fence}{block.lang}\n{text}\n{fence}\n\n</details>\n"
    )


def _escape(line: str) -> str:
    line = _SPECIAL.sub(r"\\\1", line)
    if ":" in line:
        line = _URL_SCHEME.sub(r"\\:", line)
    line = _WWW.sub(r"\1\\.", line)
    if "@" in line:
        line = _ADDRESS.sub(r"<!-- -->\\@", line)
    return _LINE_START.sub(_escape_start, line)


def _escape_start(match: re.Match[str]) -> str:
    marker = match.group(2)
    return match.group(1) + marker[:-1] + "\\" + marker[-1]
