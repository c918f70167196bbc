"""Internal: ``jsonl-session serve``, a local read-only web viewer of a folder, live.

``hub`` runs one folder watch for every open page and fans its changes out; each session a
page has open is a ``shown`` session (it reads, refreshes and renders itself) whose events
``subscriptions`` queue per page; ``page`` streams a transcript page from the file in one
pass; ``server`` is the HTTP face (``addresses``: where it listens, ``rows``: the index's
rows, ``heap``: glibc's heap). The pages themselves come from ``render``.
"""
