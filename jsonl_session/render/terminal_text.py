"""Make text from sessions safe to print on a terminal.

Session content comes from models, tools and anyone who can drop a file into the folder.
Printed raw, an ESC or C1 byte starts a control sequence: clear the screen, set the window
title, write the clipboard (OSC 52), hide or recolour text; bidi overrides (U+202E...) make
text read backwards. Every human-readable printer in the CLI passes session text (and ids
decoded from file names) through :func:`printable` first; ``--json`` output is left exact.
"""

from __future__ import annotations

import re

# C0 controls except tab and newline (which only move the cursor as text expects), DEL, C1,
# and the bidi embeddings, overrides and isolates (the "Trojan Source" set). Bidi *marks*
# (U+200E/U+200F) are left alone: right-to-left text uses them and they cannot hide anything.
# Compiled (and cached by ``re``) on first use: compiling it at import was ~0.5 ms of start-up.
_UNSAFE = "[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"


def printable(text: str) -> str:
    """``text`` with every character that could drive a terminal shown as an escape.

    ``\\xNN`` below U+0100, ``\\uNNNN`` above; everything else (tabs, newlines, any script,
    emoji) is unchanged, so ordinary text prints exactly as before.

    Example:
        >>> printable("title\\x1b]0;pwned\\x07 café")
        'title\\\\x1b]0;pwned\\\\x07 café'
    """
    if text.isprintable():  # no control or format character at all (a C scan): nothing to escape
        return text
    return re.sub(_UNSAFE, _escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
