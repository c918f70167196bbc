"""pytest plugin for jsonl-session (registered through the ``pytest11`` entry point)."""
