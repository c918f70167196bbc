"""A wait for a lock held elsewhere retries often (every 0.2 ms at first, then every 5 ms), on
the loop as in a thread: a release is noticed within milliseconds, not at the next second.

Counted, not timed: ``strace`` logs every ``flock`` attempt the waiting process makes while
another descriptor of the file holds the lock for the whole timeout (this machine is shared,
so a test never asserts a duration).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import strace_or_skip

WAIT = """
import asyncio, sys
from jsonl_session import JSONLSession, LockTimeout
holder = JSONLSession("s", sys.argv[1])
holder.add_items_sync([{"role": "user", "content": "hi"}])
waiter = JSONLSession("s", sys.argv[1], lock_timeout=0.5)
with holder.locked(write=True, create=False):
    try:
        if sys.argv[2] == "async":
            asyncio.run(waiter.add_items([{"role": "user", "content": "again"}]))
        else:
            waiter.add_items_sync([{"role": "user", "content": "again"}])
    except LockTimeout:
        print("timed out", flush=True)
"""


def refused_attempts(folder: Path, how: str) -> int:
    """How many non-blocking ``flock`` attempts found the lock held, in a process that waits 0.5 s."""
    strace = strace_or_skip()
    log = folder.parent / "strace.log"
    ran = subprocess.run(
        [
            strace,
            "-f",
            "-qq",
            "-e",
            "trace=flock",
            "-o",
            str(log),
            sys.executable,
            "-c",
            WAIT,
            str(folder),
            how,
        ],
        check=True,
        timeout=60,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert ran.stdout == "timed out\n"
    refused = re.compile(r"flock\(\d+, LOCK_EX\|LOCK_NB\) += -1 EAGAIN")
    return sum(1 for line in log.read_text().splitlines() if refused.search(line))


@pytest.mark.parametrize("how", ["async", "sync"])
def test_a_wait_retries_the_lock_every_few_milliseconds(tmp_path: Path, how: str) -> None:
    """About 100 attempts in 0.5 s; a loaded machine makes fewer, never as few as 10.

    Catches (mutation testing): the async wait sleeping at least a second between attempts (it
    then noticed a release up to a second late, and overshot its timeout by as much)."""
    folder = tmp_path / "sessions"
    assert refused_attempts(folder, how) >= 10
