"""Internal: the one layer that touches session files, locks and bytes on disk.

Everything above (``render``, ``history``, ``watch``, ``session``, the tools, the CLI) reaches
files through this layer, so the rules for safe opening, locking, appending, truncating and
replacing live in one place. Nothing here imports anything outside ``core``.

Modules, lowest first: ``errors`` (the exception tree), ``deferred_imports``, ``names`` (id <->
file name), ``codec`` (item <-> line), ``scanner`` (lines in bytes), ``safe_open``,
``worker_threads``, ``flock`` (the two lock calls) and ``fork_safety`` (a forked child lets go
of inherited descriptors), ``locking`` and ``async_locking``, ``change_mark``, ``undo_buffer``,
``temp_files``, ``storage`` (writes) and ``reads``, ``sidecar_files``, ``item_times`` and
``times_log`` (the ``.times`` sidecar: when each item was added), ``transaction``.

Not a public API: import from ``jsonl_session`` instead.
"""
