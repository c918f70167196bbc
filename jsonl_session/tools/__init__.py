"""Tools that work on whole session files: check, edit, redact secrets, grep, record and replay.

``check`` verifies (and repairs what it safely can), ``edit_copy`` lets a person edit while an
agent keeps writing, ``secrets`` finds and redacts keys, ``grep`` finds items, ``replay``
records a model's calls into a session and plays them back offline. Each is a library call
first; the CLI only formats what they answer.

Internal, like every module here: the public names (``Recording``, ``scan_file``, ``prune``,
``search_sessions``...) are imported from ``jsonl_session``.
"""
