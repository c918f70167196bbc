"""The CLI's ``serve``: the transcript viewer for a folder, on a local port, until Ctrl-C."""

from __future__ import annotations

import argparse


def cmd_serve(args: argparse.Namespace) -> int:
    from ..serve.server import serve

    return serve(args.dir, host=args.host, port=args.port, lock_timeout=args.lock_timeout)
