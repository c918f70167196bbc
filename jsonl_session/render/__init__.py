"""Internal: what a person sees of a session, as plain text, Markdown, HTML or a diff.

``item_text`` turns one item into readable text, ``views`` works out once what every
renderer shows of an item, and the renderers (``diff_text``, ``markdown``, ``html``) only lay
views out. ``file_io`` is the one face that reads a session file (under its lock, through
``core``) and hands its views to a renderer. ``terminal_text`` escapes what a terminal would
obey, ``sizes`` writes sizes for people. Nothing here knows about sessions as objects.

Not a public API: ``jsonl-session show`` and ``serve`` are the ways in.
"""
