"""The one way a size is written for people: ``ls``, the viewer's header and Markdown's folded blocks.

Example:
    >>> human_size(512), human_size(4200), human_size(3 * 1024**3)
    ('512 B', '4.1 KB', '3.0 GB')
"""

from __future__ import annotations

_UNITS = ("B", "KB", "MB", "GB")


def human_size(size: int) -> str:
    """``size`` bytes in the largest unit (of 1024) under which it stays below 1024, GB at most.

    Whole bytes below 1 KB, one decimal above: ``512 B``, ``1.0 KB``, ``4.1 KB``, ``12.5 MB``.
    """
    if size < 1024:
        return f"{size} B"
    value = float(size)
    for unit in _UNITS[1:]:
        value /= 1024
        if value < 1024 or unit == _UNITS[-1]:
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")
