"""Moving sessions to and from a real PostgreSQL server, through the SDK's SQLAlchemySession and asyncpg.

The server is started by the ``postgres_url`` fixture (initdb + pg_ctl on a free loopback
port); round trips must give back the file byte for byte, as for SQLite and Redis.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from cli_helpers import cli_env, run
from test_transfer import TRICKY, in_process, many, round_trip

from jsonl_session import JSONLSession
from jsonl_session.transfer.backends import BATCH, open_url

pytestmark = pytest.mark.sdk
pytest.importorskip("agents.extensions.memory.sqlalchemy_session", reason="needs openai-agents[sqlalchemy]")


@pytest.mark.parametrize("driver", ["postgresql", "postgresql+asyncpg"])
def test_round_trip_through_a_real_postgresql_is_byte_for_byte(
    postgres_url: str,
    sessions_dir: Path,
    driver: str,
) -> None:
    url = postgres_url.replace("postgresql+asyncpg", driver)
    source = JSONLSession("src", sessions_dir, durable=False)
    source.add_items_sync(TRICKY + many(BATCH + 3))
    back = JSONLSession(f"back-{driver}", sessions_dir, durable=False)
    calls = asyncio.run(round_trip(url, source, back, f"pg-trip-{driver}"))
    total = len(TRICKY) + BATCH + 3
    assert calls == [(0, total), (BATCH, total), (total, total)]
    assert back.path.read_bytes() == source.path.read_bytes()


def test_export_and_import_commands_with_postgresql(
    postgres_url: str,
    sessions_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = postgres_url.replace("postgresql+asyncpg", "postgresql")
    source = JSONLSession("convo", sessions_dir)
    source.add_items_sync(TRICKY)
    exported = run(sessions_dir, "export", "convo", "--to", url, "--as", "cli-convo")
    assert (exported.code, exported.err) == (0, f"convo: exported 4 items to {url} as cli-convo\n")
    imported = run(sessions_dir, "import", url, "--id", "cli-convo", "--as", "copy")
    assert (imported.code, imported.err) == (0, f"copy: imported 4 items from {url}\n")
    assert (sessions_dir / "copy.jsonl").read_bytes() == source.path.read_bytes()
    again = in_process(capsys, sessions_dir, "export", "convo", "--to", url, "--as", "cli-convo")
    assert (again.code, again.err) == (0, f"convo: up to date in {url} as cli-convo\n")


def test_postgresql_failures_are_one_line_errors(
    postgres_url: str,
    sessions_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    JSONLSession("convo", sessions_dir).add_items_sync(TRICKY)
    wrong_password = postgres_url.replace("postgres@", "nobody:hunter2@").replace("/postgres", "/no_such_db")
    failed = in_process(capsys, sessions_dir, "export", "convo", "--to", wrong_password)
    assert failed.code == 1 and failed.err.count("\n") == 1 and "hunter2" not in failed.err
    assert failed.err.startswith("jsonl-session: error: postgresql+asyncpg://nobody:***@127.0.0.1:")

    # Without asyncpg the extra to install is named.
    blocked = tmp_path / "blocked" / "asyncpg"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ImportError('no asyncpg here')\n")
    no_driver = run(
        sessions_dir,
        "export",
        "convo",
        "--to",
        "postgresql://localhost/x",
        env=cli_env(PYTHONPATH=str(blocked.parent)),
    )
    install = "pip install 'jsonl-session[postgresql]'"
    expected = f"jsonl-session: error: postgresql:// needs the asyncpg driver: {install}\n"
    assert (no_driver.code, no_driver.err) == (1, expected)


def test_sessions_are_kept_apart_in_one_database(postgres_url: str) -> None:
    async def main() -> None:
        async with open_url(postgres_url, "apart-a") as a, open_url(postgres_url, "apart-b") as b:
            await a.add_items([{"n": 1}])
            await b.add_items([{"n": 2}, {"n": 3}])
            assert await a.get_items() == [{"n": 1}]
            assert await b.get_items(limit=1) == [{"n": 3}]

    asyncio.run(main())
