"""Asking another process whether it can take a session's lock right now."""

from __future__ import annotations

import subprocess
import sys
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
