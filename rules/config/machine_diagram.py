"""A picture of a state machine: an SVG drawn from its definition. Pure Python; its words go through gettext.

The layout is a small Sugiyama-style layering, enough for machines of a few dozen states:

1. a depth-first search from the initial state finds the moves that go back (loops); they are turned
   around for the layout only, which leaves a graph without cycles;
2. each state's row is the longest path to it from a state nothing leads to (the initial state is in
   the top row), so every move goes down — or, for the turned-around ones, up (drawn dashed);
3. a move that spans several rows passes through a reserved lane in each row between, so it is drawn
   between the boxes rather than through them;
4. a few sweeps order each row by the average position of its neighbours, to cut crossings.

Top to bottom rather than left to right: flows are long and narrow, and pages scroll down.

The states are boxes: the initial state has a start dot leading into it, the handoff state is dashed
orange, terminal states are grey with a double border, and states the initial one cannot reach are
dashed red (a saved machine has none: validation refuses them). Each state is a ``<g class="state">``
and each allowed move a ``<g class="edge">``, with ``data-state`` / ``data-from`` / ``data-to`` naming
them. A state some field is required to enter names those fields in its box (class ``needs``); a move
an event takes or a guard holds carries a label (class ``labelled``). Every label is escaped, so the
result can be embedded in an HTML page as it is.

The definition may be invalid (the admin draws what was typed when validation refuses it): anything
that is not a state is left out rather than refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from django.utils.translation import gettext

from rules.config.diagram_marks import LABEL_SIZE, Mark, edge_marks, label_svg, label_width, state_requirements

BOX_H = 36
LABEL_GAP = 16  # added between rows when moves carry labels
NEEDS_H = 16  # added to every box when some state requires fields: the line naming them
DUMMY_W = 12  # the width of a lane a long move passes through
ROW_GAP = 54  # between rows: room for the moves' curves
SLOT_GAP = 32  # between boxes in one row: room for a move from a state to itself
MARGIN = 20
TITLE_H = 26
START_H = 30  # room above the first row for the initial state's start dot
LOOP_W = 28  # room right of a box for a move from a state to itself
LEGEND_H = 40
FONT_SIZE = 13
CHAR_W = 7.4  # an estimate of one character's width at FONT_SIZE in a sans-serif font
MIN_BOX_W = 84
SWEEPS = 4

EDGE_COLOUR = "#607d8b"
STYLES: dict[str, dict[str, str]] = {
    "normal": {"fill": "#ffffff", "stroke": "#417690", "stroke-width": "1.5"},
    "initial": {"fill": "#ffffff", "stroke": "#205067", "stroke-width": "2.5"},
    "handoff": {"fill": "#fff3e0", "stroke": "#e65100", "stroke-width": "2", "stroke-dasharray": "6 3"},
    "terminal": {"fill": "#eceff1", "stroke": "#37474f", "stroke-width": "1.5"},
    "unreachable": {"fill": "#fdecea", "stroke": "#c62828", "stroke-width": "1.5", "stroke-dasharray": "2 3"},
}


@dataclass
class _Slot:
    """A state's box, or a reserved slot a long move passes through (``state`` is None)."""

    state: str | None
    layer: int
    width: float
    height: float
    x: float = 0.0
    y: float = 0.0
    ports: dict[str, list[tuple[float, int]]] = field(default_factory=lambda: {"top": [], "bottom": []})

    @property
    def cx(self) -> float:
        return self.x + self.width / 2

    @property
    def cy(self) -> float:
        return self.y + self.height / 2


def _strings(value: Any) -> list[str]:
    """The distinct strings of a list, in order; anything else is nothing."""
    if not isinstance(value, list | tuple):
        return []
    seen: dict[str, None] = {}
    for item in value:
        if isinstance(item, str):
            seen.setdefault(item, None)
    return list(seen)


def _moves(transitions: Any, declared: set[str]) -> list[tuple[str, str]]:
    """Each allowed move between declared states once, in the definition's order."""
    if not isinstance(transitions, Mapping):
        return []
    moves: dict[tuple[str, str], None] = {}
    for source, targets in transitions.items():
        if source not in declared:
            continue
        for target in _strings(targets):
            if target in declared:
                moves.setdefault((source, target), None)
    return list(moves)


def _depth_first(
    states: list[str], start: str | None, out: Mapping[str, list[str]]
) -> tuple[list[str], set[tuple[str, str]]]:
    """States in discovery order (from ``start`` first) and the moves that lead back to an open state."""
    order: list[str] = []
    back: set[tuple[str, str]] = set()
    seen: set[str] = set()
    roots = ([start] if start is not None and start in out else []) + states
    for root in roots:
        if root in seen:
            continue
        seen.add(root)
        order.append(root)
        open_: set[str] = {root}
        stack: list[tuple[str, Iterable[str]]] = [(root, iter(out[root]))]
        while stack:
            node, targets = stack[-1]
            for target in targets:
                if target in open_:
                    back.add((node, target))
                elif target not in seen:
                    seen.add(target)
                    order.append(target)
                    open_.add(target)
                    stack.append((target, iter(out[target])))
                    break
            else:
                stack.pop()
                open_.discard(node)
    return order, back


def _reachable(start: str | None, out: Mapping[str, list[str]]) -> set[str]:
    if start is None or start not in out:
        return set()
    seen = {start}
    todo = [start]
    while todo:
        for target in out[todo.pop()]:
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def _layers(order: list[str], arcs: list[tuple[str, str]]) -> dict[str, int]:
    """Longest-path layering of an acyclic graph: every arc goes to a higher layer."""
    incoming = {s: 0 for s in order}
    out: dict[str, list[str]] = {s: [] for s in order}
    for a, b in arcs:
        out[a].append(b)
        incoming[b] += 1
    layer = dict.fromkeys(order, 0)
    ready = [s for s in order if incoming[s] == 0]
    while ready:
        node = ready.pop(0)
        for target in out[node]:
            layer[target] = max(layer[target], layer[node] + 1)
            incoming[target] -= 1
            if incoming[target] == 0:
                ready.append(target)
    return layer


def _box_width(label: str, needs: Mark | None = None) -> float:
    wanted = len(label) * CHAR_W + 28
    if needs is not None:
        wanted = max(wanted, label_width(needs.short, LABEL_SIZE) + 20)
    return max(MIN_BOX_W, round(wanted))


def _bezier(p0: tuple[float, float], p1: tuple[float, float], t: float) -> tuple[float, float]:
    """The point at ``t`` on ``_curve``'s vertical-tangent curve from ``p0`` to ``p1``."""
    (x1, y1), (x2, y2) = p0, p1
    if abs(x2 - x1) < 0.5:
        return x1, y1 + (y2 - y1) * t
    my = (y1 + y2) / 2
    u = 1 - t
    x = u**3 * x1 + 3 * u * u * t * x1 + 3 * u * t * t * x2 + t**3 * x2
    y = u**3 * y1 + 3 * u * u * t * my + 3 * u * t * t * my + t**3 * y2
    return x, y


def _order_layers(columns: list[list[int]], segments: list[tuple[int, int]], slots: list[_Slot]) -> None:
    """Barycentre sweeps: sort each layer by the mean position of its neighbours in the layer before
    (sweeping down) or after (sweeping up). Python's sort is stable, so ties keep their order."""
    neighbours: dict[int, list[int]] = {i: [] for i in range(len(slots))}
    for a, b in segments:
        neighbours[a].append(b)
        neighbours[b].append(a)
    position = {i: pos for column in columns for pos, i in enumerate(column)}
    for sweep in range(SWEEPS):
        rightwards = sweep % 2 == 0
        indexes = range(1, len(columns)) if rightwards else range(len(columns) - 2, -1, -1)
        for k in indexes:
            side = k - 1 if rightwards else k + 1

            def centre(i: int, side: int = side) -> float:
                near = [position[n] for n in neighbours[i] if slots[n].layer == side]
                return sum(near) / len(near) if near else float(position[i])

            columns[k].sort(key=centre)
            for pos, i in enumerate(columns[k]):
                position[i] = pos


def _attrs(**values: str | float) -> str:
    parts = []
    for name, value in values.items():
        text = f"{value:g}" if isinstance(value, float) else str(value)
        parts.append(f"{name.rstrip('_').replace('_', '-')}={quoteattr(text)}")
    return " ".join(parts)


def _style(kind: str) -> str:
    return " ".join(f"{name}={quoteattr(value)}" for name, value in STYLES[kind].items())


def _curve(points: list[tuple[float, float]]) -> str:
    """A path through ``points``: straight down a reserved lane, a vertical-tangent curve between rows."""
    x0, y0 = points[0]
    d = [f"M{x0:.1f},{y0:.1f}"]
    for (x1, y1), (x2, y2) in pairwise(points):
        if abs(x2 - x1) < 0.5:
            d.append(f"L{x2:.1f},{y2:.1f}")
        else:
            my = (y1 + y2) / 2
            d.append(f"C{x1:.1f},{my:.1f} {x2:.1f},{my:.1f} {x2:.1f},{y2:.1f}")
    return " ".join(d)


# Long on purpose: the layout's steps (layers, slots, rows, coordinates, drawing) share a dozen
# intermediate values; the pure helpers above do each step's work, this only sequences them.
def machine_svg(
    *,
    states: Any,
    initial_state: Any,
    handoff_state: Any,
    terminal_states: Any,
    transitions: Any,
    title: str = "",
    fields: Any = None,
    events: Any = None,
    guards: Any = None,
) -> str:
    """The machine as a standalone ``<svg>`` element (no XML declaration, so it can be inlined in HTML).

    With ``fields``, each state's box names the fields required to enter it; with ``events`` and
    ``guards``, each move is labelled with the events that take it and its guard
    (``rules.config.diagram_marks``)."""
    names = _strings(states)
    declared = set(names)
    needs = state_requirements(fields, names)

    initial = initial_state if isinstance(initial_state, str) and initial_state in declared else None
    handoff = handoff_state if isinstance(handoff_state, str) else None
    terminal = set(_strings(terminal_states))
    moves = _moves(transitions, declared)
    marks = edge_marks(events, guards, moves)
    box_h = BOX_H + NEEDS_H if needs else BOX_H
    row_gap = ROW_GAP + LABEL_GAP if marks else ROW_GAP
    loops = [(a, b) for a, b in moves if a == b]
    arrows = [(a, b) for a, b in moves if a != b]
    out: dict[str, list[str]] = {s: [] for s in names}
    for a, b in arrows:
        out[a].append(b)
    reachable = _reachable(initial, out)
    order, back = _depth_first(names, initial, out)
    arcs = [(b, a) if (a, b) in back else (a, b) for a, b in arrows]
    layer = _layers(order, arcs)

    # Slots: one per state, then one per row a long move passes through.
    slots = [_Slot(s, layer[s], _box_width(s, needs.get(s)), box_h) for s in order]
    index = {s: i for i, s in enumerate(order)}
    chains: list[tuple[str, str, list[int]]] = []  # (from, to, slots from the top row down)
    segments: list[tuple[int, int]] = []
    for (a, b), (upper, lower) in zip(arrows, arcs, strict=True):
        chain = [index[upper]]
        for k in range(layer[upper] + 1, layer[lower]):
            slots.append(_Slot(None, k, DUMMY_W, box_h))
            chain.append(len(slots) - 1)
        chain.append(index[lower])
        segments.extend(pairwise(chain))
        chains.append((a, b, chain))
    depth = max((s.layer for s in slots), default=-1) + 1
    rows: list[list[int]] = [[] for _ in range(depth)]
    for i, slot in enumerate(slots):
        rows[slot.layer].append(i)
    _order_layers(rows, segments, slots)

    # Coordinates: rows top to bottom, each row centred.
    looping = {a for a, _ in loops}
    extra: dict[int, float] = {i: LOOP_W if slots[i].state in looping else 0 for i in range(len(slots))}
    for i, slot in enumerate(slots):  # a labelled loop's label sits right of it
        if slot.state in looping and (mark := marks.get((slot.state, slot.state))):
            extra[i] += 4 + label_width(mark.short, LABEL_SIZE)
    row_w = [sum(slots[i].width + extra[i] for i in row) + SLOT_GAP * max(len(row) - 1, 0) for row in rows]
    unreachable_any = any(s not in reachable for s in names)
    legend_w = _legend(0, 0, unreachable_any)[1]
    body_w = max([*row_w, legend_w, 240.0])
    top = MARGIN + (TITLE_H if title else 0) + START_H
    y = float(top)
    for k, row in enumerate(rows):
        x = MARGIN + (body_w - row_w[k]) / 2
        for i in row:
            slot = slots[i]
            slot.x, slot.y = x, y
            x += slot.width + extra[i] + SLOT_GAP
        y += box_h + row_gap
    body_bottom = y - row_gap if rows else float(top)
    width = body_w + 2 * MARGIN
    height = body_bottom + MARGIN + LEGEND_H

    # Ports: spread the moves meeting one side of a box along it, ordered by where their other end is.
    for n, (_, _, chain) in enumerate(chains):
        slots[chain[0]].ports["bottom"].append((slots[chain[1]].cx, n))
        slots[chain[-1]].ports["top"].append((slots[chain[-2]].cx, n))
    port_x: dict[tuple[int, int], float] = {}  # (slot, chain) -> x
    for i, slot in enumerate(slots):
        if slot.state is None:
            continue
        for side in ("top", "bottom"):
            ends = sorted(slot.ports[side])
            for rank, (_, n) in enumerate(ends):
                port_x[(i, n)] = slot.x + slot.width * (rank + 1) / (len(ends) + 1)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="arbiter-machine" '
        f"{_attrs(width=float(width), height=float(height), viewBox=f'0 0 {width:g} {height:g}')} "
        f'role="img" font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif" font-size="{FONT_SIZE}">',
        f"<title>{escape(title or 'state machine')}</title>",
        "<defs>"
        '<marker id="arbiter-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" '
        f'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{EDGE_COLOUR}"/></marker>'
        "</defs>",
        _rect(0, 0, width, height, 'fill="#ffffff"', rx=0),
    ]
    if title:
        parts.append(f'<text x="{MARGIN}" y="{MARGIN + 12}" font-weight="bold" fill="#333333">{escape(title)}</text>')

    # Moves first, so the boxes are drawn over their ends.
    labelled_from: dict[str, int] = {}
    for n, (a, b, chain) in enumerate(chains):
        points: list[tuple[float, float]] = []
        for pos, i in enumerate(chain):
            slot = slots[i]
            if pos == 0:
                points.append((port_x[(i, n)], slot.y + slot.height))
            elif pos == len(chain) - 1:
                points.append((port_x[(i, n)], slot.y))
            else:  # straight down the reserved lane, across the whole row
                points.extend([(slot.cx, slot.y), (slot.cx, slot.y + slot.height)])
        backwards = (a, b) in back
        if backwards:
            points.reverse()
        css = "edge back" if backwards else "edge"
        dashes = " stroke-dasharray=" + quoteattr("5 3") if backwards else ""
        mark = marks.get((a, b))
        label = ""
        if mark is not None:  # on the move's first stretch, near its source; staggered when several leave it
            css += " labelled"
            rank = labelled_from[a] = labelled_from.get(a, -1) + 1
            lx, ly = _bezier(points[0], points[1], (0.5, 0.28, 0.72)[rank % 3])
            label = label_svg(mark, lx, ly, anchor="middle", width=width, margin=MARGIN / 2)
        parts.append(
            f"<g {_attrs(class_=css, data_from=a, data_to=b)}><title>{escape(mark.full if mark else f'{a} → {b}')}"
            f'</title><path d="{_curve(points)}" fill="none" stroke="{EDGE_COLOUR}" stroke-width="1.4"{dashes} '
            f'marker-end="url(#arbiter-arrow)"/>{label}</g>'
        )
    for a, _ in loops:
        slot = slots[index[a]]
        right, cy = slot.x + slot.width, slot.cy
        d = (
            f"M{right:.1f},{cy - 9:.1f} C{right + LOOP_W:.1f},{cy - 22:.1f} "
            f"{right + LOOP_W:.1f},{cy + 22:.1f} {right:.1f},{cy + 9:.1f}"
        )
        mark = marks.get((a, a))
        label = label_svg(mark, right + LOOP_W + 2, cy, anchor="start", width=width, margin=MARGIN / 2) if mark else ""
        css = "edge loop labelled" if mark else "edge loop"
        parts.append(
            f"<g {_attrs(class_=css, data_from=a, data_to=a)}><title>{escape(mark.full if mark else f'{a} → {a}')}"
            f'</title><path d="{d}" fill="none" stroke="{EDGE_COLOUR}" stroke-width="1.4" '
            f'marker-end="url(#arbiter-arrow)"/>{label}</g>'
        )

    for slot in slots:
        state = slot.state
        if state is None:
            continue
        kinds = [
            k
            for k, on in (
                ("initial", state == initial),
                ("handoff", state == handoff),
                ("terminal", state in terminal),
                ("unreachable", state not in reachable),
            )
            if on
        ]
        parts.append(_state(state, slot, kinds, start=state == initial, needs=needs.get(state)))
    parts.append(_legend(MARGIN, body_bottom + MARGIN + 6, unreachable_any)[0])
    if not names:
        parts.append(f'<text x="{MARGIN}" y="{top + 14}" fill="#666666">No states to draw.</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def _rect(x: float, y: float, w: float, h: float, style: str, *, rx: float = 8) -> str:
    return f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="{rx:g}" {style}/>'


def _state(state: str, slot: _Slot, kinds: list[str], *, start: bool, needs: Mark | None) -> str:
    """One state's box; its look is that of its most telling kind (unreachable > handoff > terminal > initial)."""
    look = next((k for k in ("unreachable", "handoff", "terminal", "initial") if k in kinds), "normal")
    inner = []
    inner.append(_rect(slot.x, slot.y, slot.width, slot.height, _style(look)))
    if "terminal" in kinds:  # a double border
        inner.append(_rect(slot.x + 3, slot.y + 3, slot.width - 6, slot.height - 6, _style("terminal"), rx=6))
    if "initial" in kinds and look != "initial":
        inner.append(_rect(slot.x - 3, slot.y - 3, slot.width + 6, slot.height + 6, 'fill="none" stroke="#205067"'))
    if start:
        sx, sy = slot.cx, slot.y - START_H + 8
        inner.append(f'<circle class="start" cx="{sx:.1f}" cy="{sy:.1f}" r="6" fill="#205067"/>')
        inner.append(
            f'<path d="M{sx:.1f},{sy + 6:.1f} L{sx:.1f},{slot.y:.1f}" stroke="#205067" stroke-width="1.5" '
            'marker-end="url(#arbiter-arrow)"/>'
        )
    weight = ' font-weight="bold"' if "initial" in kinds else ""
    # With a "needs" line in the machine, the name sits in the box's top row (the same in every box).
    name_y = slot.cy if slot.height == BOX_H else slot.y + BOX_H / 2
    inner.append(
        f'<text x="{slot.x + slot.width / 2:.1f}" y="{name_y:.1f}" text-anchor="middle" '
        f'dominant-baseline="central" fill="#222222"{weight}>{escape(state)}</text>'
    )
    if needs is not None:
        inner.append(
            f'<text class="needs" x="{slot.x + slot.width / 2:.1f}" y="{slot.y + slot.height - 12:.1f}" '
            f'text-anchor="middle" dominant-baseline="central" font-size="{LABEL_SIZE}" font-style="italic" '
            f'fill="#6a1b9a">{escape(needs.short)}</text>'
        )
    label = f"{state} ({', '.join(_kind_names().get(k, k) for k in kinds)})" if kinds else state
    if needs is not None:
        label += "\n" + needs.full
    css = " ".join(["state", *kinds, "needs"] if needs is not None else ["state", *kinds])
    return f"<g {_attrs(class_=css, data_state=state)}><title>{escape(label)}</title>{''.join(inner)}</g>"


def _kind_names() -> dict[str, str]:
    return {
        "initial": gettext("initial"),
        "handoff": gettext("handoff"),
        "terminal": gettext("terminal"),
        "unreachable": gettext("unreachable"),
    }


def _legend(x: float, y: float, unreachable: bool) -> tuple[str, float]:
    """The key to the styles, and its width."""
    x0 = x
    entries = [
        ("initial", gettext("initial")),
        ("handoff", gettext("handoff (human)")),
        ("terminal", gettext("terminal")),
    ]
    if unreachable:
        entries.append(("unreachable", gettext("not reachable")))
    loop = gettext("a move back (closes a loop)")
    parts = ['<g class="legend">']
    for kind, text in entries:
        parts.append(_rect(x, y, 22, 14, _style(kind), rx=3))
        parts.append(
            f'<text x="{x + 28:.1f}" y="{y + 7:.1f}" dominant-baseline="central" fill="#555555" '
            f'font-size="12">{escape(text)}</text>'
        )
        x += 36 + label_width(text, 12)
    parts.append(
        f'<path d="M{x:.1f},{y + 7:.1f} L{x + 26:.1f},{y + 7:.1f}" stroke="{EDGE_COLOUR}" stroke-width="1.4" '
        'stroke-dasharray="5 3" marker-end="url(#arbiter-arrow)"/>'
        f'<text x="{x + 34:.1f}" y="{y + 7:.1f}" dominant-baseline="central" fill="#555555" font-size="12">'
        f"{escape(loop)}</text>"
    )
    parts.append("</g>")
    return "".join(parts), x + 34 + label_width(loop, 12) - x0


__all__ = ["machine_svg"]
