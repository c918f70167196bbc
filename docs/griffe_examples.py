"""A griffe extension for the API reference (docs/api.md): ``Example:`` is an examples section.

The package's docstrings head their examples ``Example:``, as the Google style guide and
Napoleon allow. griffe knows only ``Examples:`` as the section whose ``>>>`` lines are code; it
would render ``Example:`` as a prose note, where ``items[0]["role"]`` reads as a Markdown link.
mkdocs.yml loads this file; nothing else imports it.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_EXAMPLE = re.compile(r"^(\s*)Example:[ \t]*$", re.MULTILINE)


class ExampleSections(griffe.Extension):
    """Rename each ``Example:`` heading of a docstring to ``Examples:`` before it is parsed."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _EXAMPLE.sub(r"\1Examples:", obj.docstring.value)
