"""Moved to :mod:`jsonl_session.tools.secrets`; this old import path still works and warns once."""

import sys
import warnings

from .tools import secrets as _moved

warnings.warn(
    "jsonl_session.secrets moved to jsonl_session.tools.secrets; import it from there",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _moved  # the old name is the new module: attributes and patches agree
