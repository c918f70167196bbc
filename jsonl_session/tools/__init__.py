"""Tools that work on whole session files: check, edit, redact, search, count, archive, record.

``check`` verifies and repairs what it safely can (``resend_fix`` drops what the resend lint
may drop, ``conflicts`` knows git's merge markers, ``leftovers`` what a removed session leaves
behind); ``edit_copy`` lets a person edit while an agent keeps writing; ``git_setup`` sets a
repository up for session files; ``secrets`` finds and redacts keys; ``grep`` finds items
(``system_grep`` lets the system's ``grep -F`` skip the files that cannot match) and
``recall`` is that search as an agent's tool; ``stats`` counts (``payloads``: the biggest
items); ``retention`` archives the sessions nobody writes and restores them (``archive_files``:
one archive; ``archive_listing``: what the archives hold); ``replay`` records a model's calls
into a session and plays them back offline. Each is a library call first; the CLI only
formats what they answer.

Internal, like every module here: the public names (``Recording``, ``scan_file``, ``prune``,
``search_sessions``...) are imported from ``jsonl_session``.
"""
