"""The worker threads that take async calls' slow file work: finished at exit, fresh after fork."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from jsonl_session.core import worker_threads as workers


def test_work_queued_when_the_interpreter_exits_is_finished_first(tmp_path: Path) -> None:
    # An fsync that a cancelled caller left behind must still happen when the program ends.
    marker = tmp_path / "done"
    script = textwrap.dedent(
        f"""
        import os
        from jsonl_session.core import worker_threads as workers

        def slow_then_mark():
            fd = os.open({str(tmp_path / "data")!r}, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
            for _ in range(200):
                os.write(fd, b"x")
                os.fdatasync(fd)
            os.close(fd)
            open({str(marker)!r}, "w").write("done")

        workers.submit(slow_then_mark)
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    assert marker.read_text() == "done"


def test_wait_for_all_waits_for_every_piece_of_work_then_a_new_pool_serves() -> None:
    gate = threading.Event()
    done: list[int] = []

    def piece(n: int) -> None:
        gate.wait(30)
        done.append(n)

    for n in range(workers.THREADS + 3):  # more than there are threads: some wait in the queue
        workers.submit(piece, n)
    gate.set()
    workers.wait_for_all()
    assert sorted(done) == list(range(workers.THREADS + 3))
    again = threading.Event()
    workers.submit(again.set)
    assert again.wait(30)
    workers.wait_for_all()


def test_a_failing_piece_of_work_does_not_cost_a_thread(capfd: pytest.CaptureFixture[str]) -> None:
    def broken() -> None:
        raise ValueError("a bug of ours")

    for _ in range(workers.THREADS + 1):
        workers.submit(broken)
    served = threading.Event()
    workers.submit(served.set)
    assert served.wait(30)
    workers.wait_for_all()
    assert "a bug of ours" in capfd.readouterr().err  # shown, not swallowed


def test_work_handed_over_one_piece_at_a_time_reuses_one_thread() -> None:
    """Catches: the idle count lost (a thread started for every piece of work, up to the cap)
    or never taken (work queued behind a busy thread while an idle one is counted twice)."""
    workers.wait_for_all()  # a fresh pool
    names: list[str] = []

    def note_thread(done: threading.Event) -> None:
        names.append(threading.current_thread().name)
        done.set()

    for _ in range(workers.THREADS + 2):
        done = threading.Event()
        workers.submit(note_thread, done)
        assert done.wait(30)
        assert workers._pool is not None
        idle = workers._pool._idle  # the worker counts itself idle after the work: wait for that
        idle.put(idle.get(timeout=30))
    # The idle entry is taken: a piece handed over while the one thread is busy gets a thread.
    busy, release = threading.Event(), threading.Event()

    def hold_the_thread() -> None:
        busy.set()
        release.wait(30)

    workers.submit(hold_the_thread)
    assert busy.wait(30)
    served = threading.Event()
    workers.submit(served.set)
    assert served.wait(30)  # not queued behind the busy one
    release.set()
    workers.wait_for_all()
    assert set(names) == {"jsonl-session-io-0"}, names
