"""Session settings that are the Agents SDK's own type when the SDK is loaded, ours when it is not.

Since openai-agents 0.19 the SDK's ``resolve_session_limit()`` accepts only its own
``SessionSettings`` or a dict, so a wrapper such as ``EncryptedSession`` that reads
``JSONLSession.session_settings`` fails on any look-alike. The SDK's class is therefore what
:attr:`JSONLSession.session_settings` returns whenever ``agents`` has been imported.

We never import ``agents`` ourselves to find out: loading the SDK takes about a second, which
the CLI and scripts that only read files must not pay. Anything that reads the settings on the
SDK's behalf has imported it already, so looking in ``sys.modules`` is enough. Without the SDK,
:class:`SessionSettings` below answers the same ``.limit`` / ``.resolve()`` / ``.to_dict()``.

As in the SDK, a negative ``limit`` means no limit (``SQLiteSession`` passes it to SQLite's
``LIMIT``, where a negative count is unlimited; the SDK's tests call it the historical unlimited
read), and a dict with keys other than ``limit`` is refused with the SDK's ``TypeError`` and
message ("Unknown session settings: ...").
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from typing import Any

SDK_MODULE = "agents.memory.session_settings"


@dataclass(frozen=True)
class SessionSettings:
    """How many items ``get_items()`` returns when no explicit limit is given (used without the SDK).

    ``limit`` None or negative: every item; 0: none; n: the newest n.

    Example:
        >>> SessionSettings(limit=20).resolve({"limit": 5}).limit
        5
    """

    limit: int | None = None

    def resolve(self, override: Any) -> SessionSettings:
        """Overlay the non-None values of ``override`` (settings object or dict) on these."""
        limit = _limit_of(override)
        return self if limit is None else replace(self, limit=limit)

    def to_dict(self) -> dict[str, Any]:
        """The settings as a dict, as the SDK's class gives them.

        Example:
            >>> SessionSettings(limit=3).to_dict()
            {'limit': 3}
        """
        return {"limit": self.limit}


def sdk_settings_class() -> type[Any] | None:
    """The SDK's ``SessionSettings`` class if ``agents`` is already imported, else None (never imports it).

    Example:
        >>> import agents                                              # doctest: +SKIP
        >>> sdk_settings_class() is agents.memory.SessionSettings      # doctest: +SKIP
        True
    """
    module = sys.modules.get(SDK_MODULE)
    cls = getattr(module, "SessionSettings", None)
    return cls if isinstance(cls, type) else None


def coerce_settings(value: Any) -> Any:
    """Check ``value`` (None, a dict, ours or the SDK's settings) and return a settings object.

    The SDK's own instance is kept as given; anything else becomes the SDK's type if the SDK
    is loaded (see :func:`as_sdk_settings`), else ours.

    Example:
        >>> coerce_settings({"limit": 2}).limit
        2
    """
    if value is None:
        settings: Any = SessionSettings()
    elif isinstance(value, dict):
        unknown = set(value) - {"limit"}
        if unknown:
            # The SDK's own error and words (agents._config_coercion.coerce_dataclass_config).
            raise TypeError(f"Unknown session settings: {', '.join(sorted(map(str, unknown)))}")
        settings = SessionSettings(limit=_check_limit(value.get("limit")))
    elif hasattr(value, "limit") and hasattr(value, "resolve"):
        _check_limit(value.limit)
        settings = value
    else:
        raise TypeError(f"session_settings must be a dict or SessionSettings, not {type(value).__name__}")
    return as_sdk_settings(settings)


def as_sdk_settings(settings: Any) -> Any:
    """``settings`` as the SDK's ``SessionSettings`` when the SDK is loaded; unchanged otherwise.

    Example:
        >>> as_sdk_settings(SessionSettings(limit=4)).limit
        4
    """
    cls = sdk_settings_class()
    if cls is None or isinstance(settings, cls):
        return settings
    return cls(limit=settings.limit)


def _limit_of(override: Any) -> int | None:
    if override is None:
        return None
    if isinstance(override, dict):
        return _check_limit(override.get("limit"))
    return _check_limit(getattr(override, "limit", None))


def _check_limit(limit: Any) -> int | None:
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int):
        # ValueError, not TypeError: what we always raised, and what the SDK's pydantic check raises.
        raise ValueError(f"limit must be an int (negative: no limit) or None, not {limit!r}")  # noqa: TRY004
    return limit
