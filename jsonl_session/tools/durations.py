"""Durations as people type them on a command line: ``90m``, ``12h``, ``30d``, ``2w``, ``1d12h``."""

from __future__ import annotations

import re
from datetime import timedelta

__all__ = ["parse_duration"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")


def parse_duration(text: str) -> timedelta:
    """A duration as ``prune --older-than`` takes it: ``90m``, ``12h``, ``30d``, ``2w``, ``1d12h``.

    Units: ``s``, ``m`` (minutes), ``h``, ``d``, ``w``; a bare number is refused (which unit?).

    Example:
        >>> parse_duration("1d12h")
        datetime.timedelta(days=1, seconds=43200)

    Raises:
        ValueError: not such a duration.
    """
    cleaned = text.strip().lower().replace(" ", "")
    parts = _DURATION.findall(cleaned)
    if not cleaned or "".join(number + unit for number, unit in parts) != cleaned:
        raise ValueError(f"not a duration: {text!r} (examples: 90m, 12h, 30d, 2w, 1d12h)")
    return timedelta(seconds=sum(float(number) * _UNITS[unit] for number, unit in parts))
