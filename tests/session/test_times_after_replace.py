"""A pop drops its item's ``.times`` record from the sidecar at the path, even when that sidecar
was replaced since this session object stamped the record.

The pop of the item an object added last drops the record through the descriptor the object
appended it with, without reading the sidecar back (``TimesLog._drop_own_last_record``). If
another writer rewrote the session meanwhile (a second object or process: ``replace_items`` of
the same items, a ``redact`` that found nothing), or an editor saved the sidecar, that
descriptor names a file no longer linked: dropping the record there would leave it in the
live sidecar, a time for an item that is gone (and a later identical item may take it).
"""

from __future__ import annotations

import os
import shutil
import zlib
from pathlib import Path

import pytest

from jsonl_session import JSONLSession


def _records(session: JSONLSession) -> list[bytes]:
    times = Path(f"{session.path}.times")
    return [line for line in times.read_bytes().splitlines() if line.strip()]


@pytest.mark.parametrize("durable", [True, False], ids=["durable", "fast"])
def test_a_pop_after_another_writer_rewrote_the_same_items_drops_the_record(
    sessions_dir: Path, durable: bool
) -> None:
    session = JSONLSession("s", sessions_dir, durable=durable)
    session.add_items_sync([{"n": 1}])
    session.add_items_sync([{"n": 2}])
    other = JSONLSession("s", sessions_dir, durable=durable)
    other.replace_items_sync([{"n": 1}, {"n": 2}])  # a new session file and a new sidecar
    other.close()
    assert session.pop_item_sync() == {"n": 2}
    assert len(_records(session)) == 1
    session.add_items_sync([{"n": 3}])
    records = _records(session)
    assert len(records) == 2
    assert records[-1].endswith(b"%08x" % zlib.crc32(b'{"n":3}'))


@pytest.mark.parametrize("durable", [True, False], ids=["durable", "fast"])
def test_a_pop_after_an_editor_replaced_the_sidecar_drops_the_record(
    sessions_dir: Path, durable: bool
) -> None:
    session = JSONLSession("s", sessions_dir, durable=durable)
    session.add_items_sync([{"n": 1}])
    session.add_items_sync([{"n": 2}])
    times = Path(f"{session.path}.times")
    copy = sessions_dir / "copy.times"
    shutil.copyfile(times, copy)
    os.replace(copy, times)  # an editor's save, `cp x y && mv y x`
    assert session.pop_item_sync() == {"n": 2}
    assert len(_records(session)) == 1
