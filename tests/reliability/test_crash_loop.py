"""Crashes: a writer SIGKILLed over and over never loses or damages anything acknowledged.

The fast loop here kills 200 times; ``stress/crash_loop.py`` runs it for as long as you like.
See ``crashkit.py`` for the invariants checked after every kill.
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import signal
from multiprocessing.connection import Connection
from pathlib import Path

import pytest

from jsonl_session import JSONLSession, TornTailWarning

from . import crashkit

_ctx = multiprocessing.get_context("fork")


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_200_sigkills_lose_nothing_acknowledged_and_glue_nothing(tmp_path: Path) -> None:
    stats = crashkit.run(tmp_path / "sessions", kills=200, seed=20261202, big_every=25)
    assert stats.kills == 200
    assert stats.acked_batches > 200 and stats.pops > 0 and stats.reads > 0
    print(f"\n{stats}")


# -- a real kill in the middle of a write, made certain ----------------------------------------


def _write_until_the_kernel_kills(directory: str, limit: int) -> None:
    """Append one batch under a file-size limit with SIGXFSZ at its default action.

    The kernel writes up to the limit (a short write), and the retry of the rest gets
    SIGXFSZ, which kills the process before it can truncate back: a genuine torn tail.
    (Python ignores SIGXFSZ by default; restore the kernel's default action.)
    """
    session = JSONLSession("torn", directory, durable=False)
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
    session.add_items_sync([{"n": 2, "pad": "x" * 100}, {"n": 3, "pad": "y" * 100}])
    os._exit(0)  # not reached


@pytest.mark.timeout(30)
def test_a_writer_killed_mid_write_leaves_a_torn_tail_that_the_next_writer_moves_aside(
    tmp_path: Path,
) -> None:
    session = JSONLSession("torn", tmp_path, durable=False)
    session.add_items_sync([{"n": 1}])
    before = session.path.read_bytes()
    limit = len(before) + 150  # mid-way through the second line of the batch
    process = _ctx.Process(target=_write_until_the_kernel_kills, args=(str(tmp_path), limit))
    process.start()
    process.join()
    assert process.exitcode == -signal.SIGXFSZ
    torn = session.path.read_bytes()
    assert len(torn) == limit and torn.startswith(before)

    # The first line of the batch is whole (the write reached it), the second is torn:
    # readers return the whole lines and skip the fragment.
    assert session.get_items_sync() == [{"n": 1}, {"n": 2, "pad": "x" * 100}]
    fragment = torn[torn.rindex(b"\n") + 1 :]

    with pytest.warns(TornTailWarning):
        session.add_items_sync([{"n": 4}])
    assert session.sidecar_path.read_bytes() == fragment + b"\n"
    assert session.get_items_sync() == [{"n": 1}, {"n": 2, "pad": "x" * 100}, {"n": 4}]
    assert session.path.read_bytes().count(b"\n") == 3


# -- regression: a lock kept alive by a forked child must not strand other processes ---------


def _hold_inherited_descriptors(conn: Connection) -> None:
    conn.send("forked")
    conn.recv()


def _append_after_replace(directory: str, conn: Connection) -> None:
    session = JSONLSession("shared", directory, durable=False, lock_timeout=5)
    session.get_items_sync()  # caches a descriptor of the file that is about to be replaced
    conn.send("cached")
    conn.recv()
    try:
        session.add_items_sync([{"from": "other"}])
        conn.send("ok")
    except Exception as exc:  # noqa: BLE001  (reported; the parent asserts "ok")
        conn.send(f"{type(exc).__name__}: {exc}")


@pytest.mark.timeout(60)
def test_replacing_a_file_while_a_forked_child_holds_its_descriptor_strands_no_one(tmp_path: Path) -> None:
    """Found by the crash loop: ``release(invalidate=True)`` only closed the descriptor.

    flock belongs to the open file description, which a forked child shares, so the lock on
    the old inode stayed held while the child lived, and every process that had cached the
    old file waited on it until LockTimeout instead of moving on to the new file.
    """
    session = JSONLSession("shared", tmp_path, durable=False)
    session.add_items_sync([{"n": 1}])  # the parent now caches a descriptor
    other_parent, other_child = _ctx.Pipe()
    other = _ctx.Process(target=_append_after_replace, args=(str(tmp_path), other_child))
    child_parent, child_child = _ctx.Pipe()
    child = _ctx.Process(target=_hold_inherited_descriptors, args=(child_child,))
    try:
        other.start()
        assert other_parent.recv() == "cached"
        child.start()  # inherits the parent's descriptor (and so its open file description)
        assert child_parent.recv() == "forked"
        session.replace_items_sync([{"n": 1}, {"n": 2}])  # locks and closes the shared description
        other_parent.send("go")
        assert other_parent.recv() == "ok"
        assert session.get_items_sync() == [{"n": 1}, {"n": 2}, {"from": "other"}]
    finally:
        for process, conn in ((child, child_parent), (other, other_parent)):
            if process.is_alive():
                conn.send("stop")
                process.join(timeout=10)
            if process.is_alive():
                process.kill()
                process.join()


# -- regression: a deliberate rewrite must not drop a crashed writer's bytes --------------------


@pytest.mark.parametrize("how", ["rewrite", "replace_items_sync"])
def test_a_rewrite_moves_a_torn_tail_to_the_sidecar_instead_of_dropping_it(tmp_path: Path, how: str) -> None:
    """Found while writing the crash loop: rewrites read the items (skipping the torn tail)
    and renamed a new file over the old one, so the fragment vanished instead of being saved."""
    session = JSONLSession("torn", tmp_path, durable=False)
    session.add_items_sync([{"n": 1}, {"n": 2}])
    with session.path.open("ab") as file:
        file.write(b'{"n":3,"content":"cut by a cra')

    def rewrite() -> None:
        with session.rewrite() as draft:
            draft.items = draft.items[:1]

    with pytest.warns(TornTailWarning):
        (rewrite if how == "rewrite" else lambda: session.replace_items_sync([{"n": 1}]))()
    assert session.sidecar_path.read_bytes() == b'{"n":3,"content":"cut by a cra\n'
    assert session.path.read_bytes() == b'{"n":1}\n'
