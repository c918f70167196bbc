"""One error tree and a complete ``__all__`` (after httpx's ``tests/project/test_exported_members.py``).

Every error the library raises derives from ``JSONLSessionError`` and the matching builtin, so
``except JSONLSessionError`` catches them all and ``except FileNotFoundError`` keeps working.
"""

from __future__ import annotations

import asyncio
import inspect
import pickle
from pathlib import Path

import pytest

import jsonl_session
from jsonl_session import SessionDirectory
from jsonl_session.core import errors
from jsonl_session.transfer.backends import open_url


def test_all_is_sorted_and_is_exactly_the_public_names() -> None:
    assert jsonl_session.__all__ == sorted(jsonl_session.__all__)
    for name in jsonl_session.__all__:  # every lazy name resolves (and is then a module global)
        assert getattr(jsonl_session, name).__doc__, f"{name} needs a docstring"
    public = {
        name
        for name, value in vars(jsonl_session).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    assert public == set(jsonl_session.__all__)
    assert set(jsonl_session.__all__) <= set(dir(jsonl_session))
    with pytest.raises(AttributeError, match="has no attribute 'nothing_here'"):
        jsonl_session.nothing_here  # noqa: B018


def test_every_error_class_is_exported_from_errors_and_the_package() -> None:
    defined = {
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value)
        and issubclass(value, (Exception, Warning))
        and value.__module__ == errors.__name__
    }
    assert errors.__all__ == sorted(errors.__all__)
    assert set(errors.__all__) == defined
    assert defined <= set(jsonl_session.__all__)


def test_every_error_derives_from_the_base_and_is_drawn_in_the_docstring() -> None:
    doc = errors.__doc__ or ""
    for name in errors.__all__:
        cls = getattr(errors, name)
        if issubclass(cls, Warning):
            continue
        assert issubclass(cls, errors.JSONLSessionError), name
        assert name in doc, f"{name} is missing from the tree in errors.py's docstring"


def test_fork_errors_are_session_errors_and_the_matching_builtins(sessions_dir: Path) -> None:
    store = SessionDirectory(sessions_dir)
    store.open("src").add_items_sync([{"i": 1}])
    store.open("dst").add_items_sync([{"keep": True}])
    with pytest.raises(errors.SessionExistsError) as exists:
        store.fork("src", "dst")
    assert isinstance(exists.value, FileExistsError) and isinstance(exists.value, errors.JSONLSessionError)
    assert exists.value.path == store.open("dst").path
    with pytest.raises(errors.SessionNotFoundError) as missing:
        store.fork("missing", "other")
    assert isinstance(missing.value, FileNotFoundError)
    assert str(missing.value) == f"{store.open('missing').path}: no such session"
    again = pickle.loads(pickle.dumps(missing.value))
    assert type(again) is errors.SessionNotFoundError and str(again) == str(missing.value)


def test_a_url_without_a_scheme_is_an_invalid_backend_url() -> None:
    async def open_it() -> None:
        async with open_url("chats.db", "convo"):
            pass

    with pytest.raises(errors.InvalidBackendURL) as caught:
        asyncio.run(open_it())
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, errors.JSONLSessionError)
    assert "'chats.db' is not a backend URL" in str(caught.value)


def test_backend_unavailable_is_an_import_error() -> None:
    from jsonl_session.transfer import backends as transfer

    assert transfer.BackendUnavailable is errors.BackendUnavailable
    assert issubclass(errors.BackendUnavailable, errors.JSONLSessionError)
    assert issubclass(errors.BackendUnavailable, ImportError)
    again = pickle.loads(pickle.dumps(errors.BackendUnavailable("redis://: pip install it")))
    assert str(again) == "redis://: pip install it"
