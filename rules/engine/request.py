"""What a condition is judged on, in a module of its own.

The kinds of condition (``rules.engine.conditions``) read it, and ``rules.engine.model`` (which holds
the kinds' specs in its own) re-exports it; here it depends on neither, so no import circle forms
between the two, not even one of annotations only (issue 22).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any, NamedTuple


class Request(NamedTuple):
    """What a condition is judged on: one request's keyword hits (a bitmask), candidate, facts, state and clock."""

    mask: int
    candidate: str | None
    confidence: float | None
    facts: Mapping[str, Any]
    state: str | None
    now: dt.datetime
