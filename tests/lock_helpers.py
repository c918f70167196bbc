"""Locks seen from another process: can it take one now, and one held there while a test runs."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_TRY_LOCK = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
except BlockingIOError:
    sys.exit(1)
"""


def another_process_can_lock(path: Path) -> bool:
    """True when a fresh process gets the exclusive ``flock`` at once (no waiting)."""
    return (
        subprocess.run([sys.executable, "-c", _TRY_LOCK, str(path)], check=False, timeout=60).returncode == 0
    )


_HOLD = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_SH)
print("held", flush=True)
sys.stdin.read()
"""


@contextmanager
def shared_lock_elsewhere(path: Path) -> Iterator[None]:
    """Another process holds ``flock(LOCK_SH)`` on ``path`` until the block ends."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
