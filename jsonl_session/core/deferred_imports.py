"""A module imported on first use, for start-up: ``jsonl-session ls`` should not pay for it.

orjson's import (it loads uuid, decimal, datetime, json...) costs about half a bare
interpreter's start-up, asyncio more than that; ``ls`` only counts lines and needs neither
(``tests/project/test_startup.py``). A module-level stand-in replaces itself with the real module the
first time an attribute is read, so later calls cost exactly what they did before.

Example:
    >>> orjson = OnFirstUse("orjson", globals())
    >>> orjson.dumps([1])   # imports orjson, and `orjson` is now the module itself
    b'[1]'
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from typing import Any


def import_module(name: str) -> Any:
    """``importlib.import_module`` for an absolute name, without importing importlib (start-up)."""
    __import__(name)
    return sys.modules[name]


class OnFirstUse:
    """Stands in for module ``name`` in ``namespace`` (a module's ``globals()``) until first used."""

    def __init__(self, name: str, namespace: dict[str, Any]) -> None:
        self._name = name
        self._namespace = namespace

    def __getattr__(self, attribute: str) -> Any:
        module = import_module(self._name)
        for key, value in list(self._namespace.items()):
            if value is self:
                self._namespace[key] = module
        return getattr(module, attribute)


def exported_on_first_use(package: str, names: dict[str, str]) -> tuple[Any, Any]:
    """A package's ``__getattr__`` and ``__dir__`` (PEP 562) that import each name's module on first use.

    ``names`` maps an exported name to the module (relative to ``package``) that defines it, so
    ``import jsonl_session`` and ``import jsonl_session.session`` cost almost nothing until a
    name is used.

    Example:
        >>> __getattr__, __dir__ = exported_on_first_use(__name__, {"JSONLSession": "store"})
    """
    namespace = import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{module}"), name)
        namespace[name] = value  # later lookups are ordinary attribute reads
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names))

    return __getattr__, __dir__
