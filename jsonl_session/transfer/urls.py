"""Backend URLs as they may be printed: every password in them masked, wherever it sits.

Errors and progress lines name the backend they talk to; a URL carries its password in the
userinfo (``redis://user:pw@host``) or in the query (``?password=...``, which both drivers
accept), and drivers quote pieces of it in their own errors. Nothing prints a URL unmasked.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["error_line", "quotes_password", "shown_url", "shown_urls"]


def shown_url(url: str) -> str:
    """``url`` with its passwords masked, for messages: the userinfo's, and any query parameter
    named like a secret (``password``, ``passwd``, ``pwd``, ``secret``, ``token``, in any case or
    as part of a longer name), which both drivers accept (``redis://host/0?password=...``).

    Example:
        >>> shown_url("redis://user:hun/ter2@localhost:6379/0")
        'redis://user:***@localhost:6379/0'
        >>> shown_url("redis://localhost:6379/0?db=1&password=hunter2")
        'redis://localhost:6379/0?db=1&password=***'
    """
    password = _password(url)
    shown = url.replace(f":{password}@", ":***@", 1) if password else url
    return _QUERY_SECRET.sub(lambda match: match.group(1) + "***", shown)


def shown_urls(urls: str | Sequence[str]) -> str:
    """One URL, or several (``a, b``), as :func:`shown_url` shows each."""
    return shown_url(urls) if isinstance(urls, str) else ", ".join(shown_url(url) for url in urls)


def quotes_password(text: str, url: str | Sequence[str]) -> bool:
    """Whether ``text`` (a driver's error message) holds one of the URL's (or URLs') passwords or
    a piece of it, as a driver that split it at a ``/``, ``@`` or ``:`` would quote it."""
    if not isinstance(url, str):
        return any(quotes_password(text, one) for one in url)
    for password in _secrets(url):
        if any(piece in text for piece in (password, *re.split(r"[/@:]", password)) if len(piece) >= 2):
            return True
    return False


def error_line(exc: BaseException, url: str | Sequence[str]) -> str:
    """``Type: first line`` of a driver's error, never quoting the URL's password (a driver may:
    redis-py on an unencoded ``/`` in it says "Port could not be cast to integer value as 'hun'").

    Example:
        >>> error_line(ValueError("no route\\n(Background on this error)"), "redis://h/0")
        'ValueError: no route'
    """
    text = (str(exc).strip().splitlines() or [""])[0]  # SQLAlchemy appends "(Background on ...)"
    if quotes_password(text, url):
        text = "(message not shown: it quotes the password; percent-encode any '/', '@' or ':' in it)"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _password(url: str) -> str | None:
    """The password in ``url``: from ``user:`` to the *last* ``@``, so a ``/`` or ``@`` written
    in it unencoded (which the drivers accept) is part of it, not the end of it."""
    match = re.match(r"[^:/]+://[^/@:?#]*:(.+)@", url.split("?", 1)[0])
    return match.group(1) if match else None


# A query parameter whose name says it holds a secret, up to the next ``&`` or ``#``.
_QUERY_SECRET = re.compile(r"([?&;][^=&#]*(?:password|passwd|pwd|secret|token)[^=&#]*=)[^&#]*", re.IGNORECASE)


def _secrets(url: str) -> list[str]:
    """Every password ``url`` holds (the userinfo's, the query's), as written and percent-decoded."""
    from urllib.parse import unquote

    found = [match.group(0).split("=", 1)[1] for match in _QUERY_SECRET.finditer(url)]
    password = _password(url)
    if password:
        found.append(password)
    return [secret for value in found if value for secret in {value, unquote(value)}]
