"""Deprecated, removed in 0.3: import scan_file, redact_session and SecretFinding from jsonl_session.

This is ``jsonl_session.tools.secrets`` (internal) under its old name, so old imports, attributes and
patches keep working until then; the first import warns.
"""

import sys
import warnings

from .tools import secrets as _moved

warnings.warn(
    "jsonl_session.secrets is deprecated and removed in 0.3: "
    "import scan_file, redact_session and SecretFinding from jsonl_session",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _moved  # the old name is the new module: attributes and patches agree
