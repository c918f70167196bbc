"""The ``jsonl-session`` command line: a thin layer that parses, calls the library and prints.

``parser`` is the grammar, ``output`` the shared ways of printing and failing, and one module
per command family holds the commands. Library errors become one line on stderr and an exit
code (0 ok, 1 problems found or failed, 2 usage error), never a traceback.

Example:
    >>> from jsonl_session.cli import main
    >>> main(["ls", "--dir", "sessions"])                   # doctest: +SKIP
    0
"""

from .commands import main

__all__ = ["main"]
