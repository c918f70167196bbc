"""Where ``serve`` listens and which ``Host`` names it answers: loopback unless told otherwise.

A viewer of every conversation in a folder must not be reachable from other machines by
accident, nor readable by a web page through DNS rebinding (a foreign name resolving to
127.0.0.1). So a non-loopback bind needs ``--allow-remote`` and prints a warning, and whatever
the bind, only names that mean this machine pass: ``localhost``, 127.0.0.0/8, ``[::1]`` and
the exact bound address.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

__all__ = ["AddressRefused", "check_address", "is_local", "local_names"]


class AddressRefused(ValueError):
    """``--host``/``--port`` that ``serve`` will not listen on (a usage error: exit 2)."""


def check_address(host: str, port: str | int, *, allow_remote: bool = False) -> tuple[int, str]:
    """``(port, warning)`` for ``--host``/``--port``; :class:`AddressRefused` if they are not usable.

    A port is 0 (any free one) to 65535. A host that is not a loopback address (or a name
    whose every address is) needs ``allow_remote``, and then comes with a warning to print.

    Example:
        >>> check_address("127.0.0.1", "8765")
        (8765, '')
        >>> check_address("0.0.0.0", 8765)
        Traceback (most recent call last):
        ...
        jsonl_session.serve.addresses.AddressRefused: --host 0.0.0.0 is not a loopback address: ...
    """
    try:
        number = int(str(port), 10)
    except ValueError:
        number = -1
    if not 0 <= number <= 65535:
        raise AddressRefused(f"--port must be a number from 0 (any free port) to 65535, not {port!r}")
    if not host or any(character.isspace() for character in host):
        raise AddressRefused(f"--host must be an address or a name, not {host!r}")
    try:
        found = {str(info[4][0]) for info in socket.getaddrinfo(host, number, type=socket.SOCK_STREAM)}
    except (OSError, UnicodeError) as exc:
        raise AddressRefused(f"--host {host}: not an address of this machine ({exc})") from None
    if all(_loopback(address) for address in found):
        return number, ""
    if not allow_remote:
        raise AddressRefused(
            f"--host {host} is not a loopback address: other machines could read every session "
            "in this folder; add --allow-remote if that is what you want"
        )
    return number, (
        f"warning: listening on {host}, not only on this machine: anyone who can reach it can read "
        "every session in this folder (no password, no TLS)"
    )


def local_names(bound: str, given: str) -> frozenset[str]:
    """The ``Host`` names (lower case, no port) that are not the loopback ones but still mean us."""
    names = {bound.lower(), given.lower().strip("[]")}
    return frozenset(name for name in names if name and not _wildcard(name))


def is_local(host_header: str, bound: frozenset[str]) -> bool:
    """Does ``Host`` name this machine: ``localhost``, 127.0.0.0/8, ``[::1]``, or the bound address?"""
    try:
        host = (urlsplit(f"//{host_header}").hostname or "").lower()
    except ValueError:  # a malformed [IPv6] or port
        return False
    return host == "localhost" or _loopback(host) or host in bound


def _loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _wildcard(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_unspecified
    except ValueError:
        return False
