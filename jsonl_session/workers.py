"""Moved to :mod:`jsonl_session.core.worker_threads`; this old import path still works and warns once."""

import sys
import warnings

from .core import worker_threads as _moved

warnings.warn(
    "jsonl_session.workers moved to jsonl_session.core.worker_threads; import it from there",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _moved  # the old name is the new module: attributes and patches agree
