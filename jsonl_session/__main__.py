"""``python -m jsonl_session``: the same as the ``jsonl-session`` command."""

import sys

from .cli import main

sys.exit(main())
