"""Internal: ``jsonl-session serve``, a local read-only web viewer of a folder, live.

``hub`` runs one folder watch for every open page and fans its changes out; ``server`` is the
HTTP face. The pages themselves come from ``render``.
"""
