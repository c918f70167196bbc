"""How ``serve`` keeps glibc's heap from holding what its threads freed.

Two habits of glibc's allocator made a server's memory grow with its clients, not with
what it holds (16 stalled readers of a 30 MB session: ~3 MB kept per reader after they
left, and ~30 MB after a session's first look):

* each thread may get an *arena* of its own (up to 8 per core), and what a thread frees
  stays in its arena. Threads here run Python under the GIL, so one arena costs no
  contention: :func:`one_arena` asks for it before the server starts a thread;
* blocks freed between blocks still in use stay resident (a session follower's first look
  holds the whole file and its lines for a moment). :func:`give_back` returns every free
  page to the system; the hub calls it after such a look and the server when connections
  have closed, never per request.

Elsewhere than glibc both do nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from functools import cache
from typing import Any

__all__ = ["give_back", "one_arena"]

_M_ARENA_MAX = -8  # mallopt's parameter number (malloc.h)


def one_arena() -> None:
    """Make every thread allocate from one arena (before the threads are started)."""
    libc = _glibc()
    if libc is not None:
        libc.mallopt(_M_ARENA_MAX, 1)


def give_back() -> None:
    """Return the free pages of the process's heap to the system (a few ms)."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


@cache
def _glibc() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
        libc.malloc_trim.argtypes = (ctypes.c_size_t,)
    except (OSError, AttributeError):  # musl and others: neither function
        return None
    return libc
