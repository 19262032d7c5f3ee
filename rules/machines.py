"""State machine definitions as plain data, and their validation. Pure Python, no Django.

A definition is what the YAML ``machines`` entries and the ``StateMachine`` records hold: states,
the initial and handoff states, terminal states, allowed transitions, per-state action whitelists
and per-state timeouts.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from rules.validators import KEY as _KEY


def machine_problems(
    *,
    states: Sequence[str],
    initial_state: str,
    handoff_state: str,
    terminal_states: Sequence[str],
    transitions: Mapping[str, Sequence[str]],
    actions: Mapping[str, Sequence[str]],
    timeouts: Mapping[str, Any],
) -> dict[str, str]:
    """Every reason the definition cannot be used, keyed by field name; empty when it is sound."""
    problems: dict[str, str] = {}
    if not isinstance(states, list) or not states or not all(isinstance(s, str) for s in states):
        return {"states": "List the machine's states."}
    bad = [s for s in states if not _KEY.fullmatch(s)]
    if bad:
        problems["states"] = f"Not a valid state key: {', '.join(bad)}."
    dupes = sorted({s for s in states if states.count(s) > 1})
    if dupes:
        problems["states"] = f"Listed more than once: {', '.join(dupes)}."
    declared = set(states)
    if initial_state not in declared:
        problems["initial_state"] = f"'{initial_state}' is not one of the states."
    if handoff_state not in declared:
        problems["handoff_state"] = f"'{handoff_state}' is not one of the states."
    if not isinstance(terminal_states, list):
        problems["terminal_states"] = "List the terminal states."
        terminal_states = []
    stray_terminal = [s for s in terminal_states if s not in declared]
    if stray_terminal:
        problems["terminal_states"] = f"Not a state: {', '.join(stray_terminal)}."
    if not isinstance(transitions, Mapping):
        problems["transitions"] = "Give the transitions as a mapping of state to the states it may move to."
        transitions = {}
    unknown: list[str] = []
    for source, targets in transitions.items():
        if source not in declared:
            unknown.append(str(source))
        if not isinstance(targets, list):
            problems["transitions"] = f"The targets of '{source}' must be a list."
            continue
        unknown.extend(str(t) for t in targets if t not in declared)
    if unknown:
        problems["transitions"] = f"Transitions name undeclared states: {', '.join(sorted(set(unknown)))}."
    leaving = sorted(s for s in terminal_states if transitions.get(s))
    if leaving:
        problems["terminal_states"] = f"Terminal states cannot have outgoing transitions: {', '.join(leaving)}."
    if initial_state in declared and "transitions" not in problems:
        reachable = _reachable(initial_state, transitions)
        unreachable = [s for s in states if s not in reachable]
        if unreachable:
            problems["transitions"] = (
                f"Not reachable from the initial state '{initial_state}': {', '.join(unreachable)}."
            )
    if not isinstance(actions, Mapping):
        problems["actions"] = "Give the actions as a mapping of state to allowed action types."
    else:
        stray = sorted(str(s) for s in actions if s not in declared)
        if stray:
            problems["actions"] = f"Actions given for undeclared states: {', '.join(stray)}."
        elif any(not isinstance(v, list) or not all(isinstance(a, str) and a for a in v) for v in actions.values()):
            problems["actions"] = "Each state's actions must be a list of action names."
    if not isinstance(timeouts, Mapping):
        problems["timeouts"] = "Give the timeouts as a mapping of state to seconds."
    else:
        stray = sorted(str(s) for s in timeouts if s not in declared)
        if stray:
            problems["timeouts"] = f"Timeouts given for undeclared states: {', '.join(stray)}."
        elif any(
            isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v <= 0
            for v in timeouts.values()
        ):
            problems["timeouts"] = "Each timeout must be a positive number of seconds."
    return problems


def _reachable(start: str, transitions: Mapping[str, Sequence[str]]) -> set[str]:
    seen = {start}
    queue = deque([start])
    while queue:
        for nxt in transitions.get(queue.popleft(), []) or []:
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return seen
