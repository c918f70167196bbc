"""Big payloads: ``stats`` says what takes the room, ``check`` warns above a size,
and neither changes what the model receives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import run

from jsonl_session import JSONLSession
from jsonl_session.core.transaction import Transaction
from jsonl_session.tools.payloads import largest_items

IMAGE = "data:image/png;base64," + "iVBORw0KGgo" * 190_000  # about 2 MB


def picture(session_id: str, folder: Path) -> JSONLSession:
    session = JSONLSession(session_id, folder)
    session.add_items_sync(
        [
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "What is on this picture?"},
                    {"type": "input_image", "image_url": IMAGE},
                ],
            },
            {"role": "assistant", "content": "A cat."},
        ]
    )
    return session


def test_stats_names_the_largest_items_and_the_bytes_on_disk(sessions_dir: Path) -> None:
    picture("cat", sessions_dir)
    JSONLSession("small", sessions_dir).add_items_sync([{"role": "user", "content": "hi"}])
    one = run(sessions_dir, "stats", "cat")
    assert one.code == 0, one.err
    lines = one.out.splitlines()
    assert lines[0] == "cat: 2 items, 38 characters, 0 tool calls, 2.0 MB on disk"  # the image is 1 item
    assert "largest items:" in lines and "  input_image, 2.0 MB, line 1" in lines
    assert "assistant" not in one.out.split("largest items:")[1]  # small items are not named

    folder = json.loads(run(sessions_dir, "stats", "--json").out)
    size = (sessions_dir / "cat.jsonl").stat().st_size + (sessions_dir / "small.jsonl").stat().st_size
    assert folder["bytes"] == size
    ((largest),) = folder["largest"]
    assert (largest["id"], largest["line"], largest["kind"]) == ("cat", 1, "input_image")
    assert largest["bytes"] == len((sessions_dir / "cat.jsonl").read_bytes().split(b"\n")[0])


def test_check_warns_above_the_size_and_still_passes(sessions_dir: Path) -> None:
    picture("cat", sessions_dir)
    before = (sessions_dir / "cat.jsonl").read_bytes()
    default = run(sessions_dir, "check")
    assert default.code == 0
    assert (
        f"{sessions_dir}/cat.jsonl:1: warning: input_image of 2.0 MB, over --max-item-bytes 1048576"
        in default.out
    )
    assert "1 item over 1.0 MB" in default.err
    assert run(sessions_dir, "check", "--max-item-bytes", "3000000").out == ""
    as_json = [json.loads(line) for line in run(sessions_dir, "check", "--json").out.splitlines()]
    assert as_json == [
        {
            "path": f"{sessions_dir}/cat.jsonl",
            "line": 1,
            "warning": "large item",
            "bytes": len(before.split(b"\n")[0]),
            "kind": "input_image",
        }
    ]
    assert (sessions_dir / "cat.jsonl").read_bytes() == before


def test_the_largest_are_found_a_piece_at_a_time_and_only_they_are_parsed(sessions_dir: Path) -> None:
    session = JSONLSession("mixed", sessions_dir)
    session.add_items_sync([{"role": "user", "content": "x" * size} for size in (10, 5_000, 300, 70_000, 20)])
    with Transaction(session.path, write=False, timeout=5) as file:
        found = largest_items(file.fd, file.size, count=2)
    assert [(item.line, item.kind) for item in found] == [(4, "user"), (2, "user")]
    assert found[0].size > found[1].size


@pytest.mark.sdk
def test_the_model_still_receives_the_image_whole(sessions_dir: Path) -> None:
    agents = pytest.importorskip("agents")
    testing = pytest.importorskip("agents.testing")
    agents.set_tracing_disabled(True)
    model = testing.ScriptedModel([[testing.assistant_message("A cat.", item_id="m1")]])
    session = JSONLSession("run", sessions_dir)
    question = [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is this?"},
                {"type": "input_image", "image_url": IMAGE},
            ],
        }
    ]
    agents.Runner.run_sync(agents.Agent(name="Assistant", model=model), question, session=session)
    (sent,) = [
        part for item in model.calls[0].input for part in item["content"] if part["type"] == "input_image"
    ]
    assert sent["image_url"] == IMAGE
    assert run(sessions_dir, "check").code == 0
    assert "  input_image, 2.0 MB, line 1" in run(sessions_dir, "stats", "run").out
    assert session.get_items_sync()[0]["content"][1]["image_url"] == IMAGE
