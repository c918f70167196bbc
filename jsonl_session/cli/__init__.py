"""The ``jsonl-session`` command line: a thin layer that parses, calls the library and prints.

``parser`` is the grammar, ``commands`` runs one command (:func:`main`), ``output`` holds the
shared ways of printing and failing and ``lookup`` finds the sessions a command line names;
one module per command family holds the commands: ``sessions`` (``ls``, ``show``, ``tail``,
``add``, ``pop``, ``clear``, ``rm``, ``fork``, ``textconv``), ``tools`` (``check``,
``redact``, ``edit``, ``grep``, ``stats``), ``history`` (``rewind``, ``show --turns``, ``ls
--tree``), ``meta``, ``follow`` (``tail -f``), ``transfer`` (``export``, ``import``),
``mirror``, ``retention`` (``prune``, ``restore``) and ``serve``.
Library errors become one line on stderr and an exit code (0 ok, 1 problems found or failed,
2 usage error), never a traceback. Nothing here imports the core modules that lock, read or
write session files (``locking``, ``reads``, ``storage``, ``transaction``): the library does
that (an import-linter contract).

Example:
    >>> from jsonl_session.cli import main
    >>> main(["ls", "--dir", "sessions"])                   # doctest: +SKIP
    0
"""

from .commands import main

__all__ = ["main"]
