"""Internal: what a conversation's history means beyond its items.

Turns (a user message and what follows it: ``turns``; what each adds to the context:
``turn_growth``), a fork's lineage (``lineage``), the token usage ledger (``usage``), a run
paused for approval (``paused_runs``), the title, tags and owner (``metadata``; the default
title: ``titles``), what a transcript page shows beside the items (``page_data``) and the
resend lint (``resend_rules``: what the model API refuses when the history is sent again).
Each works on a session file and its sidecars through ``core``; ``JSONLSession`` exposes them
as methods (``session.history_methods``).

Not a public API: the names users need (``Turn``, ``Lineage``, ``PausedRun``) are exported by
``jsonl_session``.
"""
