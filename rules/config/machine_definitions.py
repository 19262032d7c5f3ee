"""State machine definitions as plain data, and their validation. No database; messages go through gettext.

A definition is what the YAML ``machines`` entries and the ``StateMachine`` records hold: states,
the initial and handoff states, terminal states, allowed transitions, per-state action whitelists
and per-state timeouts.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from django.utils.translation import gettext

from rules.config.validators import KEY as _KEY


# A little over 80 lines: one pass over the definition, each check reading what the ones before found.
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
        return {"states": gettext("List the machine's states.")}
    bad = [s for s in states if not _KEY.fullmatch(s)]
    if bad:
        problems["states"] = gettext("Not a valid state key: %(states)s.") % {"states": ", ".join(bad)}
    dupes = sorted({s for s in states if states.count(s) > 1})
    if dupes:
        problems["states"] = gettext("Listed more than once: %(keys)s.") % {"keys": ", ".join(dupes)}
    declared = set(states)
    if initial_state not in declared:
        problems["initial_state"] = gettext("'%(state)s' is not one of the states.") % {"state": initial_state}
    if handoff_state not in declared:
        problems["handoff_state"] = gettext("'%(state)s' is not one of the states.") % {"state": handoff_state}
    if not isinstance(terminal_states, list):
        problems["terminal_states"] = gettext("List the terminal states.")
        terminal_states = []
    stray_terminal = [s for s in terminal_states if s not in declared]
    if stray_terminal:
        problems["terminal_states"] = gettext("Not a state: %(states)s.") % {"states": ", ".join(stray_terminal)}
    if not isinstance(transitions, Mapping):
        problems["transitions"] = gettext("Give the transitions as a mapping of state to the states it may move to.")
        transitions = {}
    unknown: list[str] = []
    for source, targets in transitions.items():
        if source not in declared:
            unknown.append(str(source))
        if not isinstance(targets, list):
            problems["transitions"] = gettext("The targets of '%(state)s' must be a list.") % {"state": source}
            continue
        unknown.extend(str(t) for t in targets if t not in declared)
    if unknown:
        problems["transitions"] = gettext("Transitions name undeclared states: %(states)s.") % {
            "states": ", ".join(sorted(set(unknown)))
        }
    leaving = sorted(s for s in terminal_states if transitions.get(s))
    if leaving:
        problems["terminal_states"] = gettext("Terminal states cannot have outgoing transitions: %(states)s.") % {
            "states": ", ".join(leaving)
        }
    if initial_state in declared and "transitions" not in problems:
        reachable = _reachable(initial_state, transitions)
        unreachable = [s for s in states if s not in reachable]
        if unreachable:
            problems["transitions"] = gettext("Not reachable from the initial state '%(initial)s': %(states)s.") % {
                "initial": initial_state,
                "states": ", ".join(unreachable),
            }
    if not isinstance(actions, Mapping):
        problems["actions"] = gettext("Give the actions as a mapping of state to allowed action types.")
    else:
        stray = sorted(str(s) for s in actions if s not in declared)
        if stray:
            problems["actions"] = gettext("Actions given for undeclared states: %(states)s.") % {
                "states": ", ".join(stray)
            }
        elif any(not isinstance(v, list) or not all(isinstance(a, str) and a for a in v) for v in actions.values()):
            problems["actions"] = gettext("Each state's actions must be a list of action names.")
    if not isinstance(timeouts, Mapping):
        problems["timeouts"] = gettext("Give the timeouts as a mapping of state to seconds.")
    else:
        stray = sorted(str(s) for s in timeouts if s not in declared)
        if stray:
            problems["timeouts"] = gettext("Timeouts given for undeclared states: %(states)s.") % {
                "states": ", ".join(stray)
            }
        elif any(
            isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v <= 0
            for v in timeouts.values()
        ):
            problems["timeouts"] = gettext("Each timeout must be a positive number of seconds.")
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
