"""The grammar of the commands that copy and mirror sessions: ``export``, ``import``, ``mirror``.

Kept apart from ``parser`` (the other commands) so each reads on its own; built with the same
kit (``arguments``), and only when the command line names one of them.
"""

from __future__ import annotations

from .arguments import PROG, Commands, command_parser


def add_transfer_commands(commands: Commands) -> None:
    """Add ``export``, ``import`` and ``mirror`` to the subcommands being built."""
    export = command_parser(
        commands,
        "export",
        "copy a session to another Agents SDK backend",
        f"{PROG} export convo_123 --to sqlite:///chats.db\n"
        f"{PROG} export convo_123 --to redis://localhost:6379/0 --as shared-123\n"
        f"{PROG} export --all --to postgresql://me@db.internal/chats",
    )
    export.add_argument("id", nargs="?", help="session id (or --all)")
    export.add_argument(
        "--all",
        action="store_true",
        help="every session in the folder, under its own id; re-run to resume or catch up (up to date ones "
        "are skipped, grown ones get their new items appended, different ones reported, never overwritten)",
    )
    export.add_argument(
        "--to",
        required=True,
        metavar="URL",
        help="sqlite:///path.db, postgresql://user@host/db, another SQLAlchemy URL "
        "(sqlite+aiosqlite:///x.db) or redis://host:port/db",
    )
    export.add_argument("--as", dest="as_id", metavar="OTHER_ID", help="session id there (default: the same)")
    export.add_argument(
        "--replace",
        action="store_true",
        help="overwrite a session there that differs (by default it is reported and left alone)",
    )

    imp = command_parser(
        commands,
        "import",
        "copy a session from another Agents SDK backend into a file",
        f"{PROG} import sqlite:///chats.db --id convo_123 --as convo_123-copy\n"
        f"{PROG} import redis://localhost:6379/0 --all",
    )
    imp.add_argument(
        "url",
        metavar="URL",
        nargs="+",
        help="backend URL, as for export; several: the databases a sharded mirror writes (each session "
        "read from the one its id hashes to)",
    )
    imp.add_argument("--id", metavar="SOURCE_ID", help="session id in that backend (or --all)")
    imp.add_argument(
        "--all",
        action="store_true",
        help="every session in that backend, under its own id; re-run to resume (as for export --all)",
    )
    imp.add_argument("--as", dest="as_id", metavar="ID", help="session id here (default: the same)")
    imp.add_argument(
        "--replace",
        action="store_true",
        help="overwrite a session here that differs (by default it is reported and left alone)",
    )

    mirror = command_parser(
        commands,
        "mirror",
        "keep a PostgreSQL or Redis database equal to the folder: catch up, then follow it live",
        f"{PROG} mirror --to postgresql://me@db.internal/chats\n{PROG} mirror --to redis://localhost:6379/0 "
        f"--delete\n{PROG} mirror --to postgresql://me@db.internal/chats --verify --json",
        json=True,
    )
    mirror.add_argument(
        "--to",
        required=True,
        action="append",
        metavar="URL",
        help="database URL, as for export; given more than once, each session goes to one of them "
        "by a hash of its id (docs/backends.md, 'More than one database')",
    )
    mirror.add_argument(
        "--delete", action="store_true", help="delete there what is deleted here (default: kept there)"
    )
    mirror.add_argument(
        "--yes",
        action="store_true",
        help="with --delete: let one pass delete more than half of the sessions stored (and more than 3)",
    )
    once = mirror.add_mutually_exclusive_group()
    once.add_argument("--once", action="store_true", help="catch up once and exit, without following")
    once.add_argument("--dry-run", action="store_true", help="say what catching up would change")
    once.add_argument("--verify", action="store_true", help="compare only; exit 1 on any difference")
