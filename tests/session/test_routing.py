"""Run-context routing: the Runner hands the session its run context on every
call, and a ``route`` keeps each user's sessions apart, tagged with their owner."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sdk_helpers import texts

from jsonl_session import JSONLSession, OwnerMismatchError, Route
from jsonl_session.session import routing

agents = pytest.importorskip("agents")
testing = pytest.importorskip("agents.testing")
session_module = pytest.importorskip("agents.memory.session")
if not hasattr(session_module, "_session_accepts_wrapper"):
    pytest.skip("this SDK does not pass the run context to sessions (0.24+)", allow_module_level=True)
agents.set_tracing_disabled(True)

pytestmark = pytest.mark.sdk


@dataclass
class User:
    name: str


def replies(*words: str) -> Any:
    return testing.ScriptedModel(
        [[testing.assistant_message(w, item_id=f"m{i}")] for i, w in enumerate(words)]
    )


def test_the_sdk_sees_all_four_methods_opt_in() -> None:
    assert session_module._session_accepts_wrapper(JSONLSession("x"))


def test_each_user_gets_their_own_folder_and_owner_and_every_call_is_routed(tmp_path: Path) -> None:
    seen: list[tuple[str, Any]] = []

    def by_user(wrapper: Any) -> Route:
        seen.append((wrapper.context.name, wrapper))
        return Route(directory=tmp_path / wrapper.context.name, owner=wrapper.context.name)

    home = tmp_path / "home"
    session = JSONLSession("support", home, route=by_user)
    model = replies("Hello Alice.", "Hello Bob.", "Your name is Alice.")
    agent = agents.Agent(name="Assistant", model=model)

    async def main() -> None:
        await agents.Runner.run(agent, "I am Alice", session=session, context=User("alice"))
        await agents.Runner.run(agent, "I am Bob", session=session, context=User("bob"))
        await agents.Runner.run(agent, "Who am I?", session=session, context=User("alice"))

    asyncio.run(main())
    assert not home.exists()  # nothing reached the session's own folder
    alice = JSONLSession("support", tmp_path / "alice")
    bob = JSONLSession("support", tmp_path / "bob")
    assert [i["content"] for i in alice.get_items_sync() if i.get("role") == "user"] == [
        "I am Alice",
        "Who am I?",
    ]
    assert [i["content"] for i in bob.get_items_sync() if i.get("role") == "user"] == ["I am Bob"]
    assert alice.get_metadata_sync().owner == "alice" and bob.get_metadata_sync().owner == "bob"
    # Alice's second turn saw her history only.
    assert texts(model.calls[2].input) == ["I am Alice", "Hello Alice.", "Who am I?"]
    # Every call was routed with the run's own wrapper: a read and a write per run at least.
    assert [name for name, _ in seen].count("bob") >= 2 and [n for n, _ in seen].count("alice") >= 4
    assert all(isinstance(wrapper, agents.RunContextWrapper) for _, wrapper in seen)


def test_an_owner_route_in_one_folder_refuses_another_owners_session(tmp_path: Path) -> None:
    session = JSONLSession("chat", tmp_path, route=lambda w: Route(owner=w.context.name))
    agent = agents.Agent(name="Assistant", model=replies("Noted: 1234.", "unused"))
    agents.Runner.run_sync(agent, "My PIN is 1234", session=session, context=User("alice"))
    before = (tmp_path / "chat.jsonl").read_bytes()

    with pytest.raises(OwnerMismatchError) as refused:
        agents.Runner.run_sync(agent, "What is the PIN?", session=session, context=User("mallory"))
    assert "alice" not in str(refused.value) and "1234" not in str(refused.value)
    assert (tmp_path / "chat.jsonl").read_bytes() == before
    assert JSONLSession("chat", tmp_path).get_metadata_sync().owner == "alice"


def test_a_session_with_items_and_no_owner_is_refused_and_a_new_one_is_claimed(tmp_path: Path) -> None:
    JSONLSession("old", tmp_path).add_items_sync([{"role": "user", "content": "before routing"}])
    routed_old = JSONLSession("old", tmp_path, route=lambda w: Route(owner="alice"))
    with pytest.raises(OwnerMismatchError, match="no owner"):
        asyncio.run(routed_old.get_items(wrapper=object()))
    with pytest.raises(OwnerMismatchError):
        asyncio.run(routed_old.add_items([{"role": "user", "content": "x"}], wrapper=object()))
    assert len(JSONLSession("old", tmp_path).get_items_sync()) == 1

    fresh = JSONLSession("fresh", tmp_path, route=lambda w: Route(owner="alice"))
    assert asyncio.run(fresh.get_items(wrapper=object())) == []  # nothing to protect yet
    asyncio.run(fresh.add_items([{"role": "user", "content": "hi"}], wrapper=object()))
    assert JSONLSession("fresh", tmp_path).get_metadata_sync().owner == "alice"


def test_without_a_wrapper_or_a_route_nothing_changes(tmp_path: Path) -> None:
    routed = JSONLSession("s", tmp_path / "home", route=lambda w: Route(directory=tmp_path / "elsewhere"))
    asyncio.run(routed.add_items([{"role": "user", "content": "own"}]))  # no wrapper: own file
    assert routed.get_items_sync() == [{"role": "user", "content": "own"}]
    plain = JSONLSession("s", tmp_path / "plain")
    asyncio.run(plain.add_items([{"role": "user", "content": "p"}], wrapper=object()))
    assert (tmp_path / "plain" / "s.jsonl").exists() and not (tmp_path / "elsewhere").exists()


def test_a_route_must_return_a_route(tmp_path: Path) -> None:
    def not_a_route(wrapper: Any) -> Any:
        return str(tmp_path)

    session = JSONLSession("s", tmp_path, route=not_a_route)
    with pytest.raises(TypeError, match="Route or None"):
        asyncio.run(session.get_items(wrapper=object()))
    with pytest.raises(ValueError):
        Route(owner="two\nlines")
    with pytest.raises(TypeError):
        JSONLSession("s", tmp_path, route="not callable")  # type: ignore[arg-type]


def test_compaction_hooks_refuse_a_routed_session(tmp_path: Path) -> None:
    session = JSONLSession("s", tmp_path, route=lambda w: Route(owner="a"))
    with pytest.raises(TypeError, match="run context"):
        asyncio.run(session._atomic_replace_items([]))
    with pytest.raises(TypeError, match="run context"):
        asyncio.run(session._get_compaction_snapshot(3))


def test_routed_sessions_keep_a_bounded_number_of_descriptors(tmp_path: Path) -> None:
    session = JSONLSession(
        "s", tmp_path, durable=False, route=lambda w: Route(directory=tmp_path / w, owner=w)
    )
    before = len(os.listdir("/proc/self/fd"))

    async def many() -> None:
        for n in range(routing.CACHED_SESSIONS + 60):
            await session.add_items([{"role": "user", "content": "hi"}], wrapper=f"u{n}")

    asyncio.run(many())
    assert len(os.listdir("/proc/self/fd")) - before <= routing.CACHED_SESSIONS + 4
    assert JSONLSession("s", tmp_path / "u0").get_items_sync() == [{"role": "user", "content": "hi"}]
    session.close()
    assert len(os.listdir("/proc/self/fd")) - before <= 4


def _claim(folder: str, owner: str, start: Any, results: Any) -> None:
    session = JSONLSession("shared", folder, route=lambda w: Route(owner=owner))
    start.wait()
    try:
        asyncio.run(session.add_items([{"role": "user", "content": owner}], wrapper=object()))
        results.put((owner, "wrote"))
    except OwnerMismatchError:
        results.put((owner, "refused"))


def test_two_processes_claiming_one_new_id_for_two_owners_cannot_both_write(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    start, results = context.Event(), context.Queue()
    children = [context.Process(target=_claim, args=(str(tmp_path), o, start, results)) for o in ("a", "b")]
    for child in children:
        child.start()
    start.set()
    outcomes = dict(results.get(timeout=60) for _ in children)
    for child in children:
        child.join(60)
    assert sorted(outcomes.values()) == ["refused", "wrote"]
    (winner,) = [owner for owner, outcome in outcomes.items() if outcome == "wrote"]
    stored = JSONLSession("shared", tmp_path)
    assert stored.get_items_sync() == [{"role": "user", "content": winner}]
    assert stored.get_metadata_sync().owner == winner
