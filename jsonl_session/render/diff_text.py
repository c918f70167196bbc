"""A transcript as plain, stable text for ``git diff``: the ``jsonl-session textconv`` diff driver.

Git shows a changed session as changed JSON lines, one per item, often a few kilobytes wide.
Through this driver it shows what changed in the conversation instead: each item as a
heading line (line number, role or tool, call id) and its full text, indented, with tool
arguments pretty-printed. The same file always gives the same text (no dates, no colours, no
terminal width), so unchanged items never show up in a diff. Control characters and bidi
overrides are escaped as ``show`` escapes them (``\\x1b``,
:func:`~jsonl_session.render.terminal_text.printable`), so a session cannot drive the terminal
through ``git diff``; a bad line is shown as it is, so
``git diff`` works on a broken file too.

Enable it in a repository::

    # .gitattributes
    sessions/*.jsonl text eol=lf -merge diff=jsonl-session
    $ git config diff.jsonl-session.textconv "jsonl-session textconv"

Example:
    >>> from jsonl_session.render.views import ViewBuilder
    >>> print(diff_text([ViewBuilder().view({"role": "user", "content": "Hi\\nthere"}, 1)]), end="")
       1  user
          Hi
          there
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from .terminal_text import printable
from .views import ItemView

INDENT = " " * 6


def diff_text(views: Iterable[ItemView]) -> str:
    """Every item as text, separated by blank lines."""
    return "\n".join(item_block(view) for view in views)


def item_block(view: ItemView) -> str:
    """One item: ``  12  tool call get_weather  [call_1]`` then its text and blocks, indented."""
    heading = f"{view.number:>4}  {_line(view.title)}"
    if view.ref:
        heading += f"  [{_line(view.ref)}]"
    lines = [heading]
    if view.text:
        lines.extend(_indented(view.text, INDENT))
    for block in view.blocks:
        lines.append(f"{INDENT}{block.caption}:")
        lines.extend(_indented(block.text, INDENT + "  "))
    return "\n".join(lines) + "\n"


def _line(text: str) -> str:
    return " ".join(printable(text).split())


def _indented(text: str, indent: str) -> Iterator[str]:
    for line in printable(text).split("\n"):
        yield (indent + line).rstrip()
