"""Session settings that work with or without the Agents SDK installed.

The Runner does ``(session.session_settings or SessionSettings()).resolve(run_settings)`` and
then reads ``.limit``; this class answers both without importing ``agents``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True)
class SessionSettings:
    """How many items ``get_items()`` returns when no explicit limit is given.

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
        return {"limit": self.limit}


def coerce_settings(value: Any) -> Any:
    """Accept None, a dict, our settings, or the SDK's ``SessionSettings`` (kept as given)."""
    if value is None:
        return SessionSettings()
    if isinstance(value, dict):
        unknown = set(value) - {"limit"}
        if unknown:
            raise TypeError(f"unknown session setting(s): {', '.join(sorted(unknown))}")
        return SessionSettings(limit=_check_limit(value.get("limit")))
    if hasattr(value, "limit") and hasattr(value, "resolve"):
        _check_limit(value.limit)
        return value
    raise TypeError(f"session_settings must be a dict or SessionSettings, not {type(value).__name__}")


def _limit_of(override: Any) -> int | None:
    if override is None:
        return None
    if isinstance(override, dict):
        return _check_limit(override.get("limit"))
    return _check_limit(getattr(override, "limit", None))


def _check_limit(limit: Any) -> int | None:
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValueError(f"limit must be a non-negative int or None, not {limit!r}")
    return limit
