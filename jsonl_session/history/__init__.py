"""Internal: what a conversation's history means beyond its items.

Turns (a user message and what follows it), a fork's lineage, the token usage ledger and a
run paused for approval. Each works on a session file and its sidecars through ``core``;
``JSONLSession`` exposes them as methods (``session.history_methods``).

Not a public API: the names users need (``Turn``, ``Lineage``, ``PausedRun``) are exported by
``jsonl_session``.
"""
