"""The viewer's modules import no circle, not even for types.

tests/project/test_no_import_cycles.py leaves out imports under ``if TYPE_CHECKING:`` for the
whole package; here they count too. A session's changes reach its pages through callables the
hub hands down (a subscription asks for a ``reset`` and says it leaves), so no module of
``serve`` needs to name the one that uses it.
"""

from __future__ import annotations

import grimp

PACKAGE = "jsonl_session.serve"


def test_no_module_of_the_viewer_imports_one_that_imports_it_back() -> None:
    graph = grimp.build_graph(
        "jsonl_session", include_external_packages=False, exclude_type_checking_imports=False, cache_dir=None
    )
    modules = {module for module in graph.modules if module.startswith(PACKAGE + ".")}
    assert {f"{PACKAGE}.hub", f"{PACKAGE}.subscriptions", f"{PACKAGE}.shown"} <= modules
    circles = []
    for module in sorted(modules):
        for imported in sorted(graph.find_modules_directly_imported_by(module) & modules):
            back = graph.find_shortest_chain(importer=imported, imported=module)
            if back is not None:
                circles.append(" -> ".join([module, *back]))
    assert circles == []
