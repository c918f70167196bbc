"""Deprecated, removed in 0.3: import Recording and ReplayMismatch from jsonl_session.

This is ``jsonl_session.tools.replay`` (internal) under its old name, so old imports, attributes and
patches keep working until then; the first import warns.
"""

import sys
import warnings

from .tools import replay as _moved

warnings.warn(
    "jsonl_session.replay is deprecated and removed in 0.3: "
    "import Recording and ReplayMismatch from jsonl_session",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _moved  # the old name is the new module: attributes and patches agree
