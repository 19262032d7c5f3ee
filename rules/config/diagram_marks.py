"""What the machine picture writes besides its states and moves: the fields a state requires on the way in
(each field's ``required_in``) and, on each move, the events that take it and the guards that hold it.
Pure Python; words through gettext; ``rules.config.machine_diagram`` draws them and escapes every text.

The definitions may be invalid (the admin draws what was typed when validation refuses it): anything
malformed — a field without a name, an event whose ``to`` is not a state — is left out, not refused.
A mark has a short text, drawn, and a full one for the tooltip: the picture stays readable with long
lists, and nothing is lost.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape

from django.utils.translation import gettext

LABEL_SIZE = 11  # px: a move's label, and a box's "needs" line
SHORT_CHARS = 40  # of a move's label
SHOWN_FIELDS = 3  # named in a state's box; the rest counted


@dataclass(frozen=True)
class Mark:
    short: str
    full: str


def _names(value: Any) -> list[str]:
    if not isinstance(value, list | tuple):
        return []
    return list(dict.fromkeys(v for v in value if isinstance(v, str)))


def _cut(text: str, chars: int = SHORT_CHARS) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


def state_requirements(fields: Any, states: list[str]) -> dict[str, Mark]:
    """``{state: mark}`` for each state some field is required to enter, fields in declaration order."""
    required: dict[str, list[str]] = {}
    for field in fields if isinstance(fields, list | tuple) else []:
        if not isinstance(field, Mapping) or not isinstance(field.get("name"), str):
            continue
        for state in _names(field.get("required_in")):
            if state in states:
                required.setdefault(state, []).append(field["name"])
    marks = {}
    for state in states:
        names = required.get(state)
        if not names:
            continue
        shown = ", ".join(names[:SHOWN_FIELDS])
        if len(names) > SHOWN_FIELDS:
            shown += f" +{len(names) - SHOWN_FIELDS}"
        marks[state] = Mark(
            short=_cut(gettext("needs %(fields)s") % {"fields": shown}, 40),
            full=gettext("Fields required to enter: %(fields)s") % {"fields": ", ".join(names)},
        )
    return marks


def _guard_text(guard: Any) -> str:
    """A guard in a few words: the fields it needs, the decision it cites; '' for none."""
    if not isinstance(guard, Mapping):
        return ""
    parts = []
    if fields := _names(guard.get("requires_fields")):
        parts.append(gettext("fields %(fields)s") % {"fields": ", ".join(fields)})
    decision = guard.get("requires_decision")
    if isinstance(decision, Mapping) and isinstance(decision.get("point"), str):
        outcomes = ", ".join(_names(decision.get("outcomes")))
        parts.append(
            gettext("decision %(point)s: %(outcomes)s") % {"point": decision["point"], "outcomes": outcomes}
            if outcomes
            else gettext("decision %(point)s") % {"point": decision["point"]}
        )
    return "; ".join(parts)


def edge_marks(events: Any, guards: Any, moves: list[tuple[str, str]]) -> dict[tuple[str, str], Mark]:
    """``{(from, to): mark}`` for each of ``moves`` that an event takes or an edge guard holds."""
    allowed = set(moves)
    named: dict[tuple[str, str], list[tuple[str, str]]] = {}  # edge -> [(event, its guard in words)]
    for event in events if isinstance(events, list | tuple) else []:
        if not isinstance(event, Mapping) or not isinstance(event.get("name"), str):
            continue
        target = event.get("to")
        for source in _names(event.get("from")):
            if isinstance(target, str) and (edge := (source, target)) in allowed:
                named.setdefault(edge, []).append((event["name"], _guard_text(event.get("guard"))))
    held: dict[tuple[str, str], str] = {}
    if isinstance(guards, Mapping):
        for source, targets in guards.items():
            for target, guard in targets.items() if isinstance(targets, Mapping) else ():
                if (source, target) in allowed and (text := _guard_text(guard)):
                    held[(source, target)] = text
    marks = {}
    for edge in moves:
        if edge not in named and edge not in held:
            continue
        short = ", ".join(name for name, _ in named.get(edge, []))
        full = [f"{edge[0]} → {edge[1]}"]
        for name, guard in named.get(edge, []):
            full.append(gettext("event %(event)s") % {"event": name} + (f" ({guard})" if guard else ""))
        if edge in held:
            short = f"{short} [{held[edge]}]" if short else f"[{held[edge]}]"
            full.append(gettext("guard: %(guard)s") % {"guard": held[edge]})
        marks[edge] = Mark(short=_cut(short), full="\n".join(full))
    return marks


def label_width(text: str, size: float) -> float:
    """Roughly how wide ``text`` is at ``size`` px: a CJK character is about twice a Latin one."""
    return sum(size if ord(ch) >= 0x2E80 else size * 0.58 for ch in text)


def label_svg(mark: Mark, x: float, y: float, *, anchor: str, width: float, margin: float) -> str:
    """A move's label: haloed in white so it reads across the lines it lies on; kept inside the picture
    (``width`` wide, ``margin`` from its sides) when centred on ``x``."""
    w = label_width(mark.short, LABEL_SIZE)
    if anchor == "middle":
        x = min(max(x, margin + w / 2), width - margin - w / 2)
    return (
        f'<text class="edge-label" x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" dominant-baseline="central" '
        f'font-size="{LABEL_SIZE}" fill="#37474f" stroke="#ffffff" stroke-width="3" paint-order="stroke">'
        f"{escape(mark.short)}</text>"
    )
