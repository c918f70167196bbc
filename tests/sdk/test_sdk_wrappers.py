"""The SDK's own session wrappers around a JSONLSession, through the real Runner, offline.

``EncryptedSession`` (Fernet envelopes per item) and ``OpenAIResponsesCompactionSession``
(``responses.compact`` answered by a stand-in client, as in the SDK's own tests).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, cast

import pytest

from jsonl_session import JSONLSession

pytestmark = pytest.mark.sdk
agents = pytest.importorskip("agents")
encrypt = pytest.importorskip(
    "agents.extensions.memory.encrypt_session", reason="needs openai-agents[encrypt]"
)
compaction = pytest.importorskip("agents.memory.openai_responses_compaction_session")
from sdk_helpers import SUMMARY, CompactClient, FakeModel, sdk_version, texts

agents.set_tracing_disabled(True)
KEY = "a-test-key-that-is-long-enough-for-hkdf-0123456789"


def encrypted(directory: Path, **settings: Any) -> Any:
    """A fresh EncryptedSession over a fresh JSONLSession object on the same file."""
    underlying = JSONLSession("enc", directory, session_settings=settings or None)
    return encrypt.EncryptedSession(session_id="enc", underlying_session=underlying, encryption_key=KEY)


def test_encrypted_session_runs_resumes_limits_and_pops(sessions_dir: Path) -> None:
    model = FakeModel(["Paris.", "France.", "Europe."])
    agent = agents.Agent(name="A", model=model)
    first = encrypted(sessions_dir)
    agents.Runner.run_sync(agent, "Which city has the Eiffel tower?", session=first)
    raw = (sessions_dir / "enc.jsonl").read_text()
    assert "Eiffel" not in raw and "Paris" not in raw and len(raw.splitlines()) == 2  # one envelope per item
    # The example: every read failed with "must be a SessionSettings instance or a dict".
    assert [texts([item]) for item in asyncio.run(first.get_items())] == [
        ["Which city has the Eiffel tower?"],
        ["Paris."],
    ]

    resumed = encrypted(sessions_dir)  # a new process would do the same: same key, same file
    result = agents.Runner.run_sync(agent, "In which country?", session=resumed)
    assert result.final_output == "France."
    assert texts(model.inputs[1]) == ["Which city has the Eiffel tower?", "Paris.", "In which country?"]

    limited = encrypted(sessions_dir, limit=2)
    agents.Runner.run_sync(agent, "Continent?", session=limited)
    assert texts(model.inputs[2]) == ["In which country?", "France.", "Continent?"]
    assert len(asyncio.run(limited.get_items(limit=5))) == 5

    popped = asyncio.run(resumed.pop_item())
    assert texts([popped]) == ["Europe."]
    assert len((sessions_dir / "enc.jsonl").read_text().splitlines()) == 5


def compacting(session: Any, client: CompactClient) -> Any:
    return compaction.OpenAIResponsesCompactionSession(
        session.session_id,
        session,
        client=cast(Any, client),
        compaction_mode="input",
        should_trigger_compaction=lambda context: len(context["session_items"]) >= 4,
    )


def test_compaction_session_compacts_the_file_between_turns(sessions_dir: Path) -> None:
    session = JSONLSession("c", sessions_dir)
    client = CompactClient()
    wrapped = compacting(session, client)
    model = FakeModel(["one", "two", "three"])
    agent = agents.Agent(name="A", model=model)
    agents.Runner.run_sync(agent, "q1", session=wrapped)
    assert client.responses.calls == []  # below the threshold
    agents.Runner.run_sync(agent, "q2", session=wrapped)
    assert [texts(call["input"]) for call in client.responses.calls] == [["q1", "one", "q2", "two"]]
    assert session.get_items_sync() == [SUMMARY]
    agents.Runner.run_sync(agent, "q3", session=wrapped)
    assert texts(model.inputs[2]) == ["summary of it all", "q3"]  # the next turn sees the summary only
    assert [texts([item]) for item in session.get_items_sync()] == [["summary of it all"], ["q3"], ["three"]]


def test_encrypted_compaction_over_a_jsonl_session(sessions_dir: Path) -> None:
    # The stack the SDK supports: EncryptedSession(OpenAIResponsesCompactionSession(store)).
    if sdk_version() < (0, 22, 1):
        pytest.skip(
            "EncryptedSession forwards compaction (decrypting for the API) since openai-agents 0.22.1"
        )
    session = JSONLSession("enc", sessions_dir)
    client = CompactClient()
    stack = encrypt.EncryptedSession(
        session_id="enc", underlying_session=compacting(session, client), encryption_key=KEY
    )
    model = FakeModel(["one", "two"])
    agent = agents.Agent(name="A", model=model)
    agents.Runner.run_sync(agent, "q1", session=stack)
    agents.Runner.run_sync(agent, "q2", session=stack)
    assert len(client.responses.calls) == 1
    assert texts(client.responses.calls[0]["input"]) == ["q1", "one", "q2", "two"]  # decrypted for the API
    assert [texts([item]) for item in asyncio.run(stack.get_items())] == [["summary of it all"]]
    assert "summary" not in session.path.read_text()  # stored encrypted, like every other item
    assert len(session.get_items_sync()) == 1
