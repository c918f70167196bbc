"""Deprecated, removed in 0.3: import export_all and import_all from jsonl_session.transfer.

This is ``jsonl_session.transfer.all_sessions`` (internal) under its old name, so old imports, attributes and
patches keep working until then; the first import warns.
"""

import sys
import warnings

from .transfer import all_sessions as _moved

warnings.warn(
    "jsonl_session.bulk is deprecated and removed in 0.3: "
    "import export_all and import_all from jsonl_session.transfer",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _moved  # the old name is the new module: attributes and patches agree
