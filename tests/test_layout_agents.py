"""The agents app's layout: one room per domain, no import circle inside the app, no module over 500 lines.

import-linter holds the direction between the rooms (pyproject.toml); this checks the graph itself with
grimp (which import-linter is built on), so that a circle between two modules of one room is caught too.
"""

from __future__ import annotations

import pathlib

import grimp
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
ROOMS = ("agents.runtimes", "agents.webhooks", "agents.sessions", "agents.queue", "agents.tools")
MAX_LINES = 500


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    # Imports under TYPE_CHECKING count too (grimp's default, said here as in tests/test_layout.py).
    return grimp.build_graph("agents", "rules", "decision_service", exclude_type_checking_imports=False, cache_dir=None)


def _cycle_through(graph: grimp.ImportGraph, importer: str, imported: str) -> tuple[str, ...] | None:
    back = graph.find_shortest_chain(importer=imported, imported=importer)
    return (importer, *back) if back else None


def test_no_import_circle_between_modules_of_agents(graph):
    cycles = []
    for module in sorted(m for m in graph.modules if m.startswith("agents")):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported.startswith("agents") and (cycle := _cycle_through(graph, module, imported)):
                cycles.append(" → ".join(cycle))
    assert cycles == []


def test_the_rooms_do_not_import_each_other_in_a_circle(graph):
    # Rooms as wholes: tool calls build on the queue, the queue on sessions, sessions on webhooks, webhooks on
    # runtimes, never back.
    order = {room: i for i, room in enumerate(ROOMS)}
    back = []
    for lower in ROOMS:
        for higher in ROOMS:
            if order[higher] > order[lower] and graph.chain_exists(importer=lower, imported=higher, as_packages=True):
                back.append(f"{lower} imports {higher}")
    assert back == []


def test_no_agents_module_is_over_500_lines():
    long = {
        str(path.relative_to(ROOT)): n
        for path in (ROOT / "agents").rglob("*.py")
        if "migrations" not in path.parts and (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}
