"""Arbitrary JSON objects round-trip exactly (property tests)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jsonl_session import JSONLSession

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
items = st.lists(st.dictionaries(st.text(max_size=8), json_values, max_size=5), max_size=6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=items, limit=st.integers(min_value=0, max_value=8))
def test_any_json_objects_round_trip(tmp_path: Path, batch: list[dict[str, Any]], limit: int) -> None:
    session = JSONLSession("prop", tmp_path, durable=False)
    session.clear_session_sync()
    session.add_items_sync(batch)
    assert session.get_items_sync() == batch
    assert asyncio.run(session.get_items(limit)) == (batch[-limit:] if limit else [])
    raw = session.path.read_bytes() if session.path.exists() else b""
    assert raw.count(b"\n") == len(batch)
    for item in reversed(batch):
        assert session.pop_item_sync() == item
    assert session.pop_item_sync() is None
