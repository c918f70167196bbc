"""The CLI's ``serve``: the transcript viewer for a folder, on a local port, until Ctrl-C."""

from __future__ import annotations

import argparse

from .output import UsageError


def cmd_serve(args: argparse.Namespace) -> int:
    from ..serve.addresses import AddressRefused
    from ..serve.server import serve

    try:
        return serve(
            args.dir,
            host=args.host,
            port=args.port,
            lock_timeout=args.lock_timeout,
            allow_remote=args.allow_remote,
        )
    except AddressRefused as exc:  # typed wrong: exit 2, one line
        raise UsageError(str(exc)) from None
