"""The pytest plugin's fixtures, exercised in real pytest runs with ``pytester``.

Each test writes a small test module into a temporary project, runs pytest on it, and checks
the outcome and the files on disk, in particular that committed session files stay
byte-identical.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import textwrap
from pathlib import Path

import agents  # noqa: F401  (imported once here, so the inline pytest runs below reuse it)
import pytest

pytest_plugins = ["pytester"]

CHAT = (
    '{"content":"Where is my order A-1042?","role":"user"}\n'
    '{"id":"msg_1","content":[{"annotations":[],"text":"It has shipped.","type":"output_text",'
    '"logprobs":[]}],"role":"assistant","status":"completed","type":"message"}\n'
)

AGENT_TEST = """
    from agents import Agent, Runner, function_tool, set_tracing_disabled
    from agents.testing import ScriptedModel, assistant_message, function_call

    set_tracing_disabled(True)
    QUESTION = "What's the weather in Paris?"

    @function_tool
    def get_weather(city: str) -> str:
        '''Return the weather for a city.'''
        return f"Sunny in {city}"

    def stand_in():
        return ScriptedModel([
            [function_call("get_weather", {"city": "Paris"}, call_id="call_1")],
            [assistant_message("Sunny in Paris.", item_id="msg_1")],
        ])

    def test_weather(agent_recording, jsonl_sessions):
        agent = Agent(name="w", tools=[get_weather], model=agent_recording.model(stand_in()))
        result = Runner.run_sync(agent, QUESTION, session=jsonl_sessions.open("w"))
        assert result.final_output == "Sunny in Paris."
"""


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def committed(pytester: pytest.Pytester) -> Path:
    """A committed session file in the temporary project, as ``sessions/chat.jsonl``."""
    path = pytester.path / "sessions" / "chat.jsonl"
    path.parent.mkdir()
    path.write_text(CHAT, encoding="utf-8")
    return path


def test_jsonl_sessions_gives_each_test_a_fresh_empty_directory(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.parametrize("run", [1, 2])
        def test_fresh(jsonl_sessions, run):
            assert jsonl_sessions.ids() == []
            jsonl_sessions.open("chat").add_items_sync([{"role": "user", "content": str(run)}])
            assert jsonl_sessions.open("chat").get_items_sync() == [{"role": "user", "content": str(run)}]
            assert jsonl_sessions.ids() == ["chat"]
        """
    )

    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_copy_mode_writes_to_a_copy_and_the_committed_file_stays_byte_identical(
    pytester: pytest.Pytester, committed: Path
) -> None:
    before = digest(committed)
    pytester.mkpydir("tests")
    (pytester.path / "tests" / "test_copy.py").write_text(
        textwrap.dedent(
            """
            import asyncio

            def test_copy(open_session_fixture):
                session = open_session_fixture("sessions/chat.jsonl")  # relative to the rootdir
                assert session.path.name == "chat.jsonl" and "session_fixtures" in str(session.path)
                assert len(session.get_items_sync()) == 2
                session.add_items_sync([{"role": "user", "content": "And when will it arrive?"}])
                asyncio.run(session.add_items([{"role": "assistant", "content": "Friday."}]))
                assert session.pop_item_sync() == {"role": "assistant", "content": "Friday."}
                with session.rewrite() as draft:
                    draft.items = draft.items[1:]
                session.clear_session_sync()
                assert session.get_items_sync() == []

            def test_two_copies_are_independent(open_session_fixture):
                first = open_session_fixture("sessions/chat.jsonl")
                second = open_session_fixture("sessions/chat.jsonl", mode="copy")
                first.clear_session_sync()
                assert len(second.get_items_sync()) == 2
            """
        ),
        encoding="utf-8",
    )

    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)

    assert digest(committed) == before


def test_readonly_mode_refuses_every_write_and_reads_work(pytester: pytest.Pytester, committed: Path) -> None:
    before = digest(committed)
    pytester.makepyfile(
        """
        import asyncio
        import pytest
        from jsonl_session.pytest_plugin import ReadOnlySessionError

        WRITES = {
            "add_items_sync": lambda s: s.add_items_sync([{"role": "user", "content": "x"}]),
            "add_items": lambda s: asyncio.run(s.add_items([{"role": "user", "content": "x"}])),
            "pop_item_sync": lambda s: s.pop_item_sync(),
            "pop_item": lambda s: asyncio.run(s.pop_item()),
            "clear_session_sync": lambda s: s.clear_session_sync(),
            "clear_session": lambda s: asyncio.run(s.clear_session()),
            "rewrite": lambda s: s.rewrite(),
            "replace_items_sync": lambda s: s.replace_items_sync([]),
            "repair_sync": lambda s: s.repair_sync(),
        }

        @pytest.mark.parametrize("write", sorted(WRITES))
        def test_write_raises(open_session_fixture, write):
            session = open_session_fixture("sessions/chat.jsonl", mode="readonly")
            with pytest.raises(ReadOnlySessionError, match="chat.jsonl is read-only in this test") as raised:
                WRITES[write](session)
            assert isinstance(raised.value, PermissionError)
            assert len(session.get_items_sync()) == 2
            assert asyncio.run(session.get_items(limit=1))[0]["role"] == "assistant"
        """
    )

    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=9)

    assert digest(committed) == before


def test_misuse_is_reported_clearly(pytester: pytest.Pytester, committed: Path) -> None:
    pytester.makepyfile(
        """
        import pytest
        from jsonl_session import JSONLSession

        def test_missing(open_session_fixture):
            with pytest.raises(FileNotFoundError, match="no_such.jsonl: no such session file"):
                open_session_fixture("sessions/no_such.jsonl")

        def test_bad_mode(open_session_fixture):
            with pytest.raises(ValueError, match="mode must be 'copy' or 'readonly'"):
                open_session_fixture("sessions/chat.jsonl", mode="append")

        def test_sneaky(open_session_fixture):
            open_session_fixture("sessions/chat.jsonl")
            JSONLSession("chat", "sessions").add_items_sync([{"role": "user", "content": "oops"}])
        """
    )

    result = pytester.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=3, errors=1)  # test_sneaky passes, then its teardown errors
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_sneaky*",
            "*committed session file(s) changed during the test:*chat.jsonl*",
        ]
    )


def recording_of(pytester: pytest.Pytester, module: str = "test_agent", test: str = "test_weather") -> Path:
    return pytester.path / "recordings" / module / f"{test}.jsonl"


# What AGENT_TEST's run looks like: the recording written by record mode, line for line.
RECORDED = (
    '{"content":"What\'s the weather in Paris?","role":"user"}\n'
    '{"arguments":"{\\"city\\":\\"Paris\\"}","call_id":"call_1","name":"get_weather",'
    '"type":"function_call","id":"call_1"}\n'
    '{"call_id":"call_1","output":"Sunny in Paris","type":"function_call_output"}\n'
    '{"id":"msg_1","content":[{"annotations":[],"text":"Sunny in Paris.","type":"output_text",'
    '"logprobs":[]}],"role":"assistant","status":"completed","type":"message"}\n'
)


def write_recording(pytester: pytest.Pytester, module: str = "test_agent", extra: str = "") -> Path:
    """A recording is just a session file: tests that need one write it directly."""
    path = recording_of(pytester, module)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(RECORDED + extra, encoding="utf-8")
    return path


def test_record_by_environment_or_option_then_replay_offline_with_no_diff(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_agent=AGENT_TEST)
    recording = recording_of(pytester)

    monkeypatch.setenv("JSONL_SESSION_RECORD", "1")
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    monkeypatch.delenv("JSONL_SESSION_RECORD")

    assert recording.read_text(encoding="utf-8") == RECORDED  # an ordinary session file
    mtime = recording.stat().st_mtime_ns

    # Re-recording the unchanged run (now with the option) leaves the file alone: no git diff.
    pytester.runpytest("-p", "no:cacheprovider", "--record-agents").assert_outcomes(passed=1)
    assert recording.read_text(encoding="utf-8") == RECORDED
    assert recording.stat().st_mtime_ns == mtime

    # Replay is the default and needs no model: one that fails on any call changes nothing.
    pytester.makepyfile(test_agent=AGENT_TEST.replace("model(stand_in())", "model(ScriptedModel([]))"))
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert recording.read_text(encoding="utf-8") == RECORDED


def test_a_diverging_input_fails_with_a_diff(pytester: pytest.Pytester) -> None:
    recording = write_recording(pytester)
    pytester.makepyfile(test_agent=AGENT_TEST.replace("in Paris?", "in Rome?"))

    result = pytester.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_weather.jsonl: model call 1: the agent's input diverged from the recording*",
            '*-{"content":"What\'s the weather in Paris?","role":"user"}',
            '*+{"content":"What\'s the weather in Rome?","role":"user"}',
        ]
    )
    assert "replay.py" not in result.stdout.str()  # the diff, not a traceback through the SDK
    assert recording.read_text(encoding="utf-8") == RECORDED


def test_a_failing_test_in_record_mode_keeps_the_old_recording(pytester: pytest.Pytester) -> None:
    recording = write_recording(pytester)
    pytester.makepyfile(test_agent=AGENT_TEST.replace("in Paris?", "in Rome?") + "\n        assert False\n")

    pytester.runpytest("-p", "no:cacheprovider", "--record-agents").assert_outcomes(failed=1)

    assert recording.read_text(encoding="utf-8") == RECORDED


def test_a_missing_recording_and_unused_answers_are_reported(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_missing=AGENT_TEST, test_extra=AGENT_TEST)
    extra = '{"content":"Thanks","role":"user"}\n{"content":"You are welcome.","role":"assistant"}\n'
    write_recording(pytester, "test_extra", extra)

    result = pytester.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_weather*",
            "*test_weather.jsonl:6: the agent made 2 model call(s) but the recording has more model answers*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of test_weather*",
            "*test_weather.jsonl: no recording; run once with --record-agents*",
        ]
    )
    assert not recording_of(pytester, "test_missing").exists()


class TestRecordingNames:
    @pytest.mark.parametrize("city", ["Paris"])
    def test_follow_the_module_class_and_parameters(self, request: pytest.FixtureRequest, city: str) -> None:
        from jsonl_session.pytest_plugin import recording_path

        path = recording_path(request.node)

        assert path.relative_to(Path(__file__).parent).as_posix() == (
            "recordings/test_plugin/TestRecordingNames.test_follow_the_module_class_and_parameters%5BParis%5D.jsonl"
        )


def test_the_plugin_loads_without_the_agents_package() -> None:
    """The plugin is loaded by every pytest run once jsonl-session is installed, agents or not."""
    code = (
        "import sys; sys.modules['agents'] = None\n"  # any `import agents` now raises ImportError
        "import jsonl_session.pytest_plugin, jsonl_session.tools.replay, jsonl_session.tools.secrets\n"
        "print('ok')"
    )

    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)

    assert (result.returncode, result.stdout) == (0, "ok\n"), result.stderr


def test_a_missing_recording_is_said_once(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_missing=AGENT_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    report = result.stdout.str().partition("short test summary info")[
        0
    ]  # the -ra line repeats it, cut or not
    said = report.count("test_weather.jsonl: no recording; run once with --record-agents")
    assert said == 1, result.stdout.str()
    assert "During handling of the above exception" not in result.stdout.str()


def run_without(module: str, folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """pytest in ``folder`` as in a project where ``module`` is not installed."""
    code = (
        "import sys\n"
        "class Absent:\n"  # a finder that says it is not there, as when it is not installed
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name.partition('.')[0] == {module!r}:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Absent())\n"
        "import pytest; sys.exit(pytest.main(sys.argv[1:]))"
    )
    return subprocess.run(
        # --assert=plain: the rewriting import hook would go before the finder and find it
        [sys.executable, "-c", code, "-p", "no:cacheprovider", "--assert=plain", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )


def test_no_config_warning_for_timeout_when_pytest_timeout_is_absent(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\ntimeout = 30\n")
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    result = run_without(
        "pytest_timeout", tmp_path, "-p", "no:timeout", "-W", "error::pytest.PytestConfigWarning"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Unknown config option" not in result.stdout + result.stderr


def test_agent_recording_without_the_agents_package_says_which_extra(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    (folder / "recordings" / "test_rec").mkdir(parents=True)
    (folder / "recordings" / "test_rec" / "test_weather.jsonl").write_text(CHAT)
    (folder / "test_rec.py").write_text(
        "def test_weather(agent_recording):\n    agent_recording.model('gpt-4.1')\n"
    )
    result = run_without("agents", folder, "-q")
    assert result.returncode == 1, result.stdout + result.stderr
    assert (
        "agent_recording needs the OpenAI Agents SDK: pip install 'jsonl-session[agents]'" in result.stdout
    ), result.stdout
    assert "ModuleNotFoundError" not in result.stdout
