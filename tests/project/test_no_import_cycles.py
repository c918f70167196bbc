"""No module of ``jsonl_session`` is part of an import cycle at run time.

The graph is built with grimp (import-linter's graph library) from the source, **without the
imports under ``if TYPE_CHECKING:``**. Those are never executed: every module starts with
``from __future__ import annotations``, so a type-only import cannot leave a module half
initialised or make the result depend on which module is imported first, which is what a cycle
costs. The direction of type-only imports is still kept: the layers contract in
``pyproject.toml`` (tests/project/test_layers.py) counts them, so an upward type-only import
fails there.

Imports inside functions (deferred to the first call, to keep start-up fast) **do count**: they
run, and a cycle through one is the same tangle (two modules that each need the other) put off
until later, which is what the layered design removes (``cli`` <-> its command modules,
``session`` <-> ``compaction``). A module in a runtime cycle fails here, and the message spells
the cycle out (``a -> b -> a``) with the line of each import.
"""

from __future__ import annotations

import itertools

import grimp
import pytest

PACKAGE = "jsonl_session"


def strongly_connected_groups(graph: grimp.ImportGraph) -> list[set[str]]:
    """The groups of two or more modules that import each other, directly or not (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    groups: list[set[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        # Iterative depth-first search: each frame is (module, the imports still to visit).
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        frames = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        while frames:
            module, pending = frames[-1]
            child = next(pending, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    frames.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[module] = min(low[module], index[child])
                continue
            frames.pop()
            if frames:
                parent = frames[-1][0]
                low[parent] = min(low[parent], low[module])
            if low[module] == index[module]:
                group: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == module:
                        break
                if len(group) > 1 or graph.direct_import_exists(importer=module, imported=module):
                    groups.append(group)
    return groups


def describe_cycle(graph: grimp.ImportGraph, group: set[str]) -> str:
    """One cycle through the group's first module, each import with its line number."""
    start = min(group)
    cycle: list[str] | None = None
    for imported in sorted(graph.find_modules_directly_imported_by(start) & group):
        back = graph.find_shortest_chain(importer=imported, imported=start)
        if back is not None and (cycle is None or len(back) + 1 < len(cycle)):
            cycle = [start, *back]
    assert cycle is not None
    steps = []
    for importer, imported in itertools.pairwise(cycle):
        details = graph.get_import_details(importer=importer, imported=imported)
        lines = ", ".join(f"l.{detail['line_number']}" for detail in details)
        steps.append(f"  {importer} -> {imported} ({lines})")
    return f"cycle among {len(group)} modules ({', '.join(sorted(group))}):\n" + "\n".join(steps)


def runtime_graph() -> grimp.ImportGraph:
    # cache_dir=None: nothing written into the checkout (grimp caches in .grimp_cache otherwise).
    return grimp.build_graph(
        PACKAGE, include_external_packages=False, exclude_type_checking_imports=True, cache_dir=None
    )


def test_no_module_is_part_of_a_runtime_import_cycle() -> None:
    graph = runtime_graph()
    assert len(graph.modules) > 50, sorted(graph.modules)  # the whole package was read
    groups = strongly_connected_groups(graph)
    if groups:
        pytest.fail("\n\n".join(describe_cycle(graph, group) for group in groups), False)


def test_the_cycle_finder_finds_and_prints_a_cycle() -> None:
    """The check above would see a cycle: a small graph with one, and one module outside it."""
    graph = grimp.ImportGraph()
    for importer, imported, line in [
        ("p.a", "p.b", 3),
        ("p.b", "p.c", 4),
        ("p.c", "p.a", 5),
        ("p.d", "p.a", 6),
    ]:
        graph.add_import(importer=importer, imported=imported, line_number=line, line_contents="import")
    groups = strongly_connected_groups(graph)
    assert groups == [{"p.a", "p.b", "p.c"}]
    assert describe_cycle(graph, groups[0]).splitlines()[1:] == [
        "  p.a -> p.b (l.3)",
        "  p.b -> p.c (l.4)",
        "  p.c -> p.a (l.5)",
    ]
