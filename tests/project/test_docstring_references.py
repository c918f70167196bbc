"""Every module a docstring names exists, and every package's docstring names all its modules.

Modules get renamed and folded; a docstring that still says "see ``naming``" sends the reader
to a file that is gone. The convention (docs/architecture.md, "Naming a module in a
docstring") makes a reference to a module recognisable, so it can be checked:

* a dotted name in double backticks that starts with a lowercase word is a module path, then
  perhaps an attribute: from the package (``core.names``, ``tools.grep.search``), with
  ``jsonl_session.`` in front, from the docstring's own package (``scanner.scan_lines`` in
  ``core``), or an outside module (``os.fsync``); an attribute of an object is named by its
  class (``JSONLSession.locked``, ``Draft.items``), a method of a built-in type by the type
  (``bytes.find``);
* a cross-reference role (``:mod:``, ``:func:``, ``:class:`` ...) names a ``jsonl_session...``
  path, or a name of the module it is in;
* a ``.py`` file (in a docstring or a comment) is a path from the repository, from the
  package, or from the module's own folder; a ``docs/...md`` page is one from the repository.

A single word in double backticks is not checked (``check`` is a command, a module and a
verb); a package docstring names each of its modules that way, and the last test checks the
list is complete.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import importlib.util
import inspect
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import jsonl_session

REPO = Path(__file__).resolve().parents[2]
PACKAGE = Path(jsonl_session.__file__).parent
# The old import paths warn when imported; their docstrings are one line naming the new path.
SHIMS = {f"jsonl_session.{name}" for name in ("bulk", "replay", "secrets", "workers")}

DOTTED = re.compile(r"``([a-z_]\w*(?:\.\w+)+)``")
ROLE = re.compile(r":(?:mod|func|class|meth|data|attr|exc|obj):`~?([\w.]+)`")
PY_FILE = re.compile(r"(?<![\w/.-])([\w/.-]*\w\.py)\b")
DOCS_PAGE = re.compile(r"(?<![\w/.-])(docs/[\w/.-]*\w\.md|README\.md)\b")
# ``convo_123.jsonl``, ``x.jsonl.run``, the ``user.jsonl_session.mark`` attribute: file names.
FILE_NAME = re.compile(r"\.jsonl(?:\.|_session\.|$)")


def modules() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its own name)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = modules()


def package_of(name: str) -> str:
    return name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]


def docstrings(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of each docstring: the module's, a class's or function's, an attribute's."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            yield (node.lineno, node.value.value)


@cache
def loaded(name: str) -> Any:
    return importlib.import_module(name)


def has_attribute(owner: Any, name: str) -> bool:
    """``owner.name`` exists, or is a field or an attribute its class's methods set on ``self``."""
    if hasattr(owner, name):
        return True
    if not inspect.isclass(owner):
        return False
    for cls in owner.__mro__:
        if name in getattr(cls, "__annotations__", {}) or name in getattr(cls, "__slots__", ()):
            return True
        try:
            source = inspect.getsource(cls)
        except (OSError, TypeError):
            continue
        if re.search(rf"\bself\.{name}\s*(?::[^=\n]*)?=", source):
            return True
    return False


def resolves(dotted: str, package: str) -> bool | None:
    """Whether ``dotted`` names something that exists; None when it is not a module path at all."""
    first = dotted.split(".")[0]
    if dotted.endswith(".py"):
        return None  # a file: checked with the files comments name
    for base in ("", "jsonl_session.", f"{package}."):
        parts = f"{base}{dotted}".split(".")
        for end in range(len(parts), base.count("."), -1):  # the module path takes ``first`` in
            if ".".join(parts[:end]) in MODULES:
                owner = loaded(".".join(parts[:end]))
                for attribute in parts[end:]:
                    if not has_attribute(owner, attribute):
                        return False
                    owner = getattr(owner, attribute, None)
                return True
    if first in vars(builtins) or FILE_NAME.search(dotted):
        return None
    if first != "jsonl_session" and importlib.util.find_spec(first) is not None:
        return None  # an outside module (``os.fsync``, ``agents.run_internal``): not ours to check
    return False


def role_resolves(target: str, module: str) -> bool:
    """A role names a ``jsonl_session...`` path, or a name of its module (a class's, for a method)."""
    if target.startswith("jsonl_session."):
        return resolves(target, module) is True
    if "." in target or resolves(target, package_of(module)):
        return True  # outside the package (``asyncio.Lock``), or a module of the same package
    owner = loaded(module)
    classes = [value for value in vars(owner).values() if inspect.isclass(value)]
    if has_attribute(owner, target) or any(has_attribute(cls, target) for cls in classes):
        return True
    if target in vars(builtins) or target in bound_names(MODULES[module]):
        return True
    return importlib.util.find_spec(target) is not None  # :mod:`subprocess`


@cache
def bound_names(path: Path) -> frozenset[str]:
    """Every name the module defines or imports, anywhere in it (a lazy import in a function too)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
    return frozenset(names)


def references() -> Iterator[tuple[str, str, str]]:
    """(where, reference, problem) for each module reference that does not resolve."""
    for name, path in MODULES.items():
        if name in SHIMS:
            continue
        package = package_of(name)
        where = str(path.relative_to(REPO))
        for line, text in docstrings(path):
            for dotted in DOTTED.findall(text):
                if resolves(dotted, package) is False:
                    yield (f"{where}:{line}", dotted, "no such module or attribute")
            for target in ROLE.findall(text):
                if not role_resolves(target, name):
                    yield (f"{where}:{line}", target, "role target does not exist")
        for number, source_line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for file in PY_FILE.findall(source_line):
                bases = (REPO, PACKAGE, path.parent)
                if not any((base / file).is_file() for base in bases):
                    yield (f"{where}:{number}", file, "no such file")
            for page in DOCS_PAGE.findall(source_line):
                if not (REPO / page).is_file():
                    yield (f"{where}:{number}", page, "no such page")


def test_every_module_a_docstring_names_exists() -> None:
    broken = [f"{where}: {reference}: {problem}" for where, reference, problem in references()]
    assert not broken, "\n".join(broken)


def test_the_checks_see_a_broken_reference() -> None:
    """The rules above catch what they are for (a checker that passes everything passes this file)."""
    assert resolves("core.names.KINDS", "jsonl_session.tools") is True
    assert resolves("names.KINDS", "jsonl_session.core") is True  # a module of its own package
    assert DOTTED.findall("``Draft.items``, ``core.names``") == ["core.names"]  # a class's attribute: no path
    assert resolves("view.encode_views", "jsonl_session.render") is False  # render/view.py is gone
    assert resolves("views.encode_nothing", "jsonl_session.render") is False
    assert resolves("jsonl_session.core.naming", "jsonl_session") is False
    assert resolves("os.fsync", "jsonl_session.core") is None and resolves("bytes.find", "x") is None
    assert DOCS_PAGE.findall("see docs/format.md#dropped, not out.md") == ["docs/format.md"]
    assert PY_FILE.findall("see files.py and tests/core/test_x.py, not x.pyc") == [
        "files.py",
        "tests/core/test_x.py",
    ]


SUBPACKAGES = sorted(name for name, path in MODULES.items() if path.name == "__init__.py" and "." in name)


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_each_package_docstring_names_all_its_modules(package: str) -> None:
    """A package's docstring is its map: it names each module (``name``) and subpackage in it."""
    text = inspect.getdoc(loaded(package)) or ""
    named = set(re.findall(r"``(\w+)``", text))
    members = {name.rpartition(".")[2] for name in MODULES if name.rpartition(".")[0] == package}
    assert not members - named, f"{package}'s docstring does not name {sorted(members - named)}"
