"""What a condition is judged on, in a module of its own.

The kinds of condition (``rules.engine.conditions``) read it, and ``rules.engine.model`` (which holds
the kinds' specs in its own) re-exports it; here it depends on neither, so no import circle forms
between the two, not even one of annotations only (issue 22).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple


class SessionView(NamedTuple):
    """What rules may read of the request's session beside its state (issue 24, "Rules read the session").

    ``fields``: the session's field values (``Session.field_values``), each checked against its machine's
    declaration when it was set. ``recent``: the keyword lists hit in each of the session's latest logged
    decisions, newest first — as many as the point's ``session_keyword_seen`` conditions look back, read
    with the session in the same statement (``rules.decisions.statements.session_select``). The decision
    being made is not among them: it is logged after it is decided.
    """

    fields: Mapping[str, Any]
    recent: tuple[frozenset[str], ...] = ()


NO_SESSION = SessionView(MappingProxyType({}), ())


class Request(NamedTuple):
    """What a condition is judged on: one request's keyword hits (a bitmask), candidate, facts, state, clock,
    and what rules read of its session (``NO_SESSION`` without one)."""

    mask: int
    candidate: str | None
    confidence: float | None
    facts: Mapping[str, Any]
    state: str | None
    now: dt.datetime
    session: SessionView = NO_SESSION
