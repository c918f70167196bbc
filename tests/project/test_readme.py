"""The README's first screen keeps its promise: two set-up commands, the second is what CI runs.

And what it says about the library stays true: the constructor's signature (the SDK page shows
it too) and every kind of file that can sit next to a session.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from jsonl_session import JSONLSession
from jsonl_session.core.names import KINDS, TORN_SUFFIX

ROOT = Path(__file__).resolve().parents[2]


def first_screen_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_screen = readme.split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", first_screen, flags=re.DOTALL)


def test_first_screen_has_exactly_two_setup_commands() -> None:
    commands = first_screen_commands()
    assert len(commands) == 2, commands
    demo, tests = commands
    assert "examples/quickstart.py" in demo
    assert "pytest" in tests and ".[test]" in tests


def test_ci_runs_the_readme_test_command() -> None:
    _, test_command = first_screen_commands()
    assert test_command.strip() in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_every_public_name_is_exported_and_sorted() -> None:
    import jsonl_session

    assert jsonl_session.__all__ == sorted(jsonl_session.__all__)
    for name in jsonl_session.__all__:
        assert getattr(jsonl_session, name).__doc__, f"{name} needs a docstring"


def shown_signature(function: object) -> str:
    """``JSONLSession(session_id, directory="sessions", *, ...)`` as the docs write it: no annotations."""
    parts: list[str] = []
    for parameter in inspect.signature(function).parameters.values():  # type: ignore[arg-type]
        if parameter.kind is parameter.KEYWORD_ONLY and "*" not in parts:
            parts.append("*")
        default = parameter.default
        if default is parameter.empty:
            parts.append(parameter.name)
        elif isinstance(default, str):
            parts.append(f'{parameter.name}="{default}"')
        else:
            parts.append(f"{parameter.name}={default!r}")
    return f"{getattr(function, '__name__', '')}({', '.join(parts)})"


def test_the_readme_and_the_sdk_page_show_the_constructors_real_signature() -> None:
    signature = shown_signature(JSONLSession)
    assert "timestamps=None" in signature  # the one the docs once left out
    for page in ("README.md", "docs/sdk.md"):
        assert f"`{signature}`" in (ROOT / page).read_text(encoding="utf-8"), (
            f"{page} should show {signature}"
        )


def test_the_readme_names_every_kind_of_file_next_to_a_session() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split("### Files next to a session", 1)[1].split("\n## ", 1)[0]
    for kind in (*KINDS, TORN_SUFFIX):
        assert f"| `{kind}`" in table, f"the README's sidecar table lacks {kind}"
