"""The rules app's layout (issue 22): no import circle inside it, no module over 500 lines, and a
configuration document package that reaches no database. import-linter's contracts (pyproject.toml)
forbid each circle the rooms were cut to end; this is the check that no new one forms anywhere."""

from __future__ import annotations

import ast
from pathlib import Path

import grimp

RULES = Path(__file__).resolve().parents[1] / "rules"
MAX_LINES = 500


def _circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.find_modules_directly_imported_by(target)))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        found.append(sorted(group))
    return found


def test_no_import_circle_inside_rules() -> None:
    # Imports under TYPE_CHECKING count too: they never run, but a circle of annotations still ties the
    # modules together (import-linter is configured the same way).
    graph = grimp.build_graph("rules", exclude_type_checking_imports=False, cache_dir=None)
    assert _circles(graph) == []


def test_the_circle_check_finds_a_circle() -> None:
    graph = grimp.ImportGraph()
    for name in ("pkg", "pkg.a", "pkg.b", "pkg.c"):
        graph.add_module(name)
    graph.add_import(importer="pkg.a", imported="pkg.b")
    graph.add_import(importer="pkg.b", imported="pkg.a")
    graph.add_import(importer="pkg.c", imported="pkg.a")
    assert _circles(graph) == [["pkg.a", "pkg.b"]]


def test_no_rules_module_over_500_lines() -> None:
    long = {
        str(path.relative_to(RULES.parent)): lines
        for path in RULES.rglob("*.py")
        if "migrations" not in path.parts and (lines := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


def test_the_configuration_document_imports_no_database_layer() -> None:
    # import-linter forbids the app's database modules; this also keeps Django's ORM itself out.
    for path in (RULES / "config" / "document").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not any(n == "django.db" or n.startswith("django.db.") for n in names), path
