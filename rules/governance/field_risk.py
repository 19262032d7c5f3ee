"""Which changes to a state machine's field declarations are high-risk (``rules.governance.risk`` asks).

A field declaration changes two things that matter after the fact (see "risk by effect" in risk.py):
- **what is masked.** A ``pii`` field's values are masked in the decision log and the timeline. Turning
  ``pii`` off, or removing a ``pii`` field (its name then means nothing masked), unmasks personal data
  in what staff and exports read: high-risk, as masking less of a point's facts is.
- **which moves are possible.** ``required_in`` keeps sessions out of a state until the field holds a
  valid value. Where a high-risk rule sends sessions (its outcome mapped through its point's state map —
  a compliance or risk rule, or one that hands over to a person), a new requirement can stop that move,
  and a dropped one lets sessions in without what the rule relied on; so any change (but its wording, or
  turning ``pii`` on) to a field required there, on either side, is high-risk.
- **what rules decide.** A ``session_field`` condition reads a field as its declaration types it (an
  ``in`` on an array, a pattern on a text). Where a high-risk rule (or a rule deciding before one) reads
  the field, changing its declaration (but its wording, or ``pii``) — or removing it, so the rule reads
  nothing — changes what that rule decides: high-risk, as changing the rule is.
Everything else — new fields, fields required only where no high-risk rule routes and read by none,
descriptions, turning ``pii`` on — applies at once. Pure functions over document data.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from django.utils.translation import gettext_noop

# Changing only these keys of a field required where a high-risk rule routes changes no move.
_HARMLESS = frozenset({"description", "pii"})


def _by_name(fields: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {f["name"]: f for f in fields if isinstance(f, Mapping) and isinstance(f.get("name"), str)}


def field_risks(
    before: Sequence[Mapping[str, Any]],
    after: Sequence[Mapping[str, Any]],
    routed: set[str],
    read: Mapping[str, str] | None = None,
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Why changing a machine's ``before`` fields to ``after`` needs approval, as (message id, params).

    ``routed`` is every state a high-risk rule sends sessions of this machine to, before or after;
    ``read``, the fields a high-risk rule (or one deciding before one) reads, before or after → that rule.
    """
    read = read or {}
    old, new = _by_name(before), _by_name(after)
    unmasked = sorted(
        name for name, field in old.items() if field.get("pii") and not new.get(name, {}).get("pii", False)
    )
    if unmasked:
        yield gettext_noop("stops masking the personal data of the field %(fields)s"), {"fields": ", ".join(unmasked)}
    gated: dict[str, set[str]] = {}
    decides: dict[str, str] = {}
    for name in sorted(old.keys() | new.keys()):
        was, now = old.get(name, {}), new.get(name, {})
        changed = {k for k in was.keys() | now.keys() if was.get(k) != now.get(k)} - _HARMLESS
        states = (set(was.get("required_in") or ()) | set(now.get("required_in") or ())) & routed
        if changed and states:
            gated[name] = states
        if changed and name in read:
            decides[name] = read[name]
    for name, rule in decides.items():
        yield (
            gettext_noop(
                "changes the field %(field)s, which the rule %(rule)s reads (a high-risk rule, or one deciding "
                "before one)"
            ),
            {"field": name, "rule": rule},
        )
    if gated:
        yield (
            gettext_noop(
                "changes the field %(fields)s, required to enter %(states)s, where a high-risk rule sends sessions"
            ),
            {"fields": ", ".join(gated), "states": ", ".join(sorted(set().union(*gated.values())))},
        )
