"""Find API keys and tokens in session files before they are committed, and redact them.

Conversations pick up secrets: a user pastes a key, a tool echoes an ``Authorization``
header. Session files are meant to be committed as fixtures, so ``jsonl-session check
--secrets`` (and the pre-commit hook) scans them first, and ``jsonl-session redact`` replaces
what it finds.

Scanning works on raw lines, not parsed items, so a line that is not valid JSON (a merge
conflict marker, a half-edited line) is still scanned. Redaction works on the parsed
items, under the session's write lock, and replaces only the secret inside each string:
``"my key is sk-proj-..."`` becomes ``"my key is [REDACTED:openai-key]"``.

The patterns are deliberately specific (known prefixes and shapes), so ordinary text and
ids such as ``call_...`` or ``msg_...`` are not flagged.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from ..core import codec, scanner
from ..core.errors import ItemNotStorableError, UnsafePathError

if TYPE_CHECKING:
    from ..session.store import JSONLSession

# (kind, pattern). Where a pattern has a group named "secret", only that group is the
# secret (e.g. the token after "Bearer "); otherwise the whole match is. Order matters:
# the first pattern to claim a span wins, so Anthropic's "sk-ant-" precedes OpenAI's "sk-".
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "private-key",
        re.compile(
            r"-----BEGIN (?P<label>[A-Z0-9 ]*)PRIVATE KEY( BLOCK)?-----"
            r"(?:(?:(?!-----BEGIN)[\s\S]){0,16384}?-----END (?P=label)PRIVATE KEY( BLOCK)?-----)?"
        ),
    ),
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}")),
    # Real keys are long and contain digits; "sk-learn-compatible" is not a key.
    ("openai-key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{32,}")),
    ("aws-access-key-id", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b")),
    (
        "aws-secret-access-key",
        re.compile(r"(?i)aws_?secret_?(?:access_?)?key\W{0,8}(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"),
    ),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})")),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    # A digit is required so that prose ("bearer internationalisation...") is not a token.
    (
        "bearer-token",
        re.compile(r"(?i)\bbearer\s+(?P<secret>(?=[A-Za-z0-9._~+/-]*\d)[A-Za-z0-9._~+/-]{20,}=*)"),
    ),
]

_SHOWN_PREFIX = 6


@dataclass(frozen=True)
class SecretFinding:
    """One secret found in a session file.

    Attributes:
        path: The file.
        line: 1-based line number in the file.
        kind: What it looks like, e.g. ``"openai-key"``, ``"private-key"``.
        excerpt: The secret masked: its first few characters and its length, never the whole.

    Example:
        >>> finding = scan_file("sessions/support.jsonl")[0]        # doctest: +SKIP
        >>> print(finding)                                          # doctest: +SKIP
        sessions/support.jsonl:3: openai-key sk-pro… (56 chars)
    """

    path: Path
    line: int
    kind: str
    excerpt: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind} {self.excerpt}"


def scan_text(text: str) -> list[tuple[str, int, int]]:
    """Find secrets in ``text``; return ``(kind, start, end)`` spans, in order, not overlapping.

    Example:
        >>> scan_text("token: Bearer " + "abc123" * 5)
        [('bearer-token', 14, 44)]
    """
    spans: list[tuple[str, int, int]] = []
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(text):
            start, end = match.span("secret") if "secret" in pattern.groupindex else match.span()
            if not any(start < taken_end and taken_start < end for _, taken_start, taken_end in spans):
                spans.append((kind, start, end))
    return sorted(spans, key=lambda span: span[1])


def mask(secret: str) -> str:
    """Show enough of a secret to recognise it, never enough to use it.

    Example:
        >>> mask("sk-proj-" + "x" * 48)
        'sk-pro… (56 chars)'
    """
    shown = secret[: min(_SHOWN_PREFIX, len(secret) // 4)]
    return f"{shown}… ({len(secret)} chars)"


def scan_file(path: str | Path) -> list[SecretFinding]:
    """Scan a session file line by line; malformed lines are scanned too.

    Raises:
        UnsafePathError: ``path`` is a symlink (never followed out of the folder) or not a
            regular file.

    Example:
        >>> for finding in scan_file("sessions/support.jsonl"):  # doctest: +SKIP
        ...     print(finding)
    """
    path = Path(path)
    findings = []
    with _open_regular(path) as file:
        for number, raw in enumerate(file, start=1):
            text = raw.decode("utf-8", errors="replace")
            for kind, start, end in scan_text(text):
                findings.append(SecretFinding(path, number, kind, mask(text[start:end])))
    return findings


def _open_regular(path: Path) -> BinaryIO:
    """Open a session file for reading, refusing a symlink (it led out of the folder) or a FIFO."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePathError(
                path, "is a symlink; refusing to follow it out of the sessions folder"
            ) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        from .leftovers import not_a_file

        what = not_a_file(path) or "not a regular file"  # a FIFO is never read: it could block
        raise UnsafePathError(path, f"is {what}, not a session file; refusing to read it as a session")
    return os.fdopen(fd, "rb")


def redact_text(text: str) -> tuple[str, list[tuple[str, str]]]:
    """Replace each secret in ``text`` with ``[REDACTED:<kind>]``; return the new text and what was replaced.

    Example:
        >>> redact_text("use Bearer " + "t0ken" * 5)[0]
        'use Bearer [REDACTED:bearer-token]'
    """
    spans = scan_text(text)
    if not spans:
        return text, []
    parts, replaced, position = [], [], 0
    for kind, start, end in spans:
        parts.append(text[position:start])
        parts.append(f"[REDACTED:{kind}]")
        replaced.append((kind, text[start:end]))
        position = end
    parts.append(text[position:])
    return "".join(parts), replaced


def redact_session(session: JSONLSession) -> list[SecretFinding]:
    """Replace every secret in the session's string values (and keys) in place; return what changed.

    Holds the session's write lock for the whole edit and replaces the file atomically
    (see :meth:`JSONLSession.rewrite`), so a concurrent writer is never lost. Untouched
    when nothing is found. A malformed line raises ``MalformedLineError`` (fix it first:
    redaction never guesses at a line it cannot parse).

    Example:
        >>> for finding in redact_session(JSONLSession("support")):  # doctest: +SKIP
        ...     print(finding)
        sessions/support.jsonl:3: openai-key sk-pro… (56 chars)
    """
    findings: list[SecretFinding] = []
    if not session.path.exists():
        return findings  # nothing to redact; and rewrite() would create the file
    with session.rewrite() as draft:
        line_numbers = _item_line_numbers(session.path)
        new_items = []
        for index, item in enumerate(draft.items):
            if codec.depth_of(item) > codec.MAX_DEPTH:
                _refuse_if_secret_inside(index, item)
                new_items.append(item)  # unchanged; if anything else changes, writing refuses it
                continue
            replaced: list[tuple[str, str]] = []
            new_items.append(_redact_value(item, replaced))
            line = line_numbers[index] if index < len(line_numbers) else index + 1
            findings.extend(
                SecretFinding(session.path, line, kind, mask(secret)) for kind, secret in replaced
            )
        if findings:
            draft.items = new_items
    return findings


def _redact_value(value: Any, replaced: list[tuple[str, str]]) -> Any:
    if isinstance(value, str):
        new_text, found = redact_text(value)
        replaced.extend(found)
        return new_text
    if isinstance(value, dict):
        result: dict[str, Any] = {}
        for key, child in value.items():
            new_key = _redact_value(key, replaced)
            if new_key != key:
                new_key = _distinct_key(new_key, value, result)
            result[new_key] = _redact_value(child, replaced)
        return result
    if isinstance(value, list):
        return [_redact_value(child, replaced) for child in value]
    return value


def _distinct_key(key: str, original: dict[str, Any], taken: dict[str, Any]) -> str:
    """``key``, or ``key 2``, ``key 3``...: the first that no other key of the object has or will have.

    Two secrets used as keys of one object both became ``[REDACTED:<kind>]``, and one value
    was silently dropped (tests/render/test_hostile_content.py).
    """
    candidate, number = key, 1
    while candidate in taken or candidate in original:
        number += 1
        candidate = f"{key} {number}"
    return candidate


def _refuse_if_secret_inside(index: int, item: Any) -> None:
    """An item nested deeper than can be written back cannot be redacted: say so if it holds a secret."""
    spans = scan_text(codec.dumps_any(item).decode())
    if spans:
        raise ItemNotStorableError(
            index,
            f"it holds a secret ({spans[0][0]}) but is nested more than {codec.MAX_DEPTH} levels deep, so it "
            "cannot be written back redacted; remove the secret by hand (docs/format.md)",
        )


def _item_line_numbers(path: Path) -> list[int]:
    """Line number of each item: items are the non-blank lines, in order (we hold the lock)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    return [
        line.number for line in scanner.scan_lines(data).lines
    ]  # the items' lines, as get_items reads them
