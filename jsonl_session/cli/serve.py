"""The CLI's ``serve``: the transcript viewer for a folder, on a local port, until Ctrl-C."""

from __future__ import annotations

import argparse

from .output import UsageError


def cmd_serve(args: argparse.Namespace) -> int:
    from ..serve.addresses import AddressRefused
    from ..serve.server import Limits, serve

    if not args.header_timeout > 0:
        raise UsageError(f"--header-timeout must be more than 0 seconds, not {args.header_timeout:g}")
    try:
        return serve(
            args.dir,
            host=args.host,
            port=args.port,
            lock_timeout=args.lock_timeout,
            allow_remote=args.allow_remote,
            limits=Limits(head_seconds=args.header_timeout),
        )
    except AddressRefused as exc:  # typed wrong: exit 2, one line
        raise UsageError(str(exc)) from None
