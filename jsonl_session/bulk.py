"""Moved to :mod:`jsonl_session.transfer.folders`; this old import path still works and warns once."""

import sys
import warnings

from .transfer import folders as _moved

warnings.warn(
    "jsonl_session.bulk moved to jsonl_session.transfer.folders; import it from there",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _moved  # the old name is the new module: attributes and patches agree
