"""What the admin and the staff API show of tools' breakers: each contract's breaker from the store in
use, its failed attempts by error code lately, and the changes people made by hand."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db.models import Count, Q
from django.utils import timezone

from agents.tools.breaker_backend import store
from agents.tools.breaker_machine import Breaker
from agents.tools.breaker_store import Snapshot
from agents.tools.models import AttemptOutcome, BreakerChange, ToolAttempt
from rules.models import ToolContract

VIEW_PERMISSION = "agents.view_toolbreaker"
OPERATE_PERMISSION = "agents.operate_breakers"
# "Lately" is the breaker's window; a tool without a breaker shows its last hour.
RECENT_FALLBACK = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class BreakerRow:
    """One tool contract with its breaker as the admin page and the staff API list it."""

    tool: str
    breaker: dict[str, Any] | None
    max_concurrent: int | None
    snapshot: Snapshot
    recent: dict[str, int]  # failed attempts by error code, in the window (or the last hour)
    recent_seconds: int


def _recent_failures(seconds: dict[str, int]) -> dict[str, dict[str, int]]:
    """Failed attempts per tool and code, each tool over its own window (one grouped query)."""
    counts: dict[str, dict[str, int]] = {tool: {} for tool in seconds}
    if not seconds:
        return counts
    now = timezone.now()
    within = Q()
    for tool, window in seconds.items():
        within |= Q(tool=tool, finished_at__gte=now - timedelta(seconds=window))
    rows = (
        ToolAttempt.objects.filter(within)
        .exclude(outcome__in=[AttemptOutcome.OK, AttemptOutcome.IN_FLIGHT])
        .values("tool", "outcome", "error_code")
        .annotate(n=Count("id"))
        .order_by()
    )
    for row in rows:
        code = row["error_code"] or row["outcome"]  # output_invalid has no code of the tool's
        counts[row["tool"]][code] = counts[row["tool"]].get(code, 0) + row["n"]
    return counts


def breakers_view_allowed(user: Any) -> bool:
    """Who may see the breakers (admin page, staff API): who may see the rows, or operate them."""
    return bool(getattr(user, "is_active", False)) and (
        user.has_perm(VIEW_PERMISSION) or user.has_perm(OPERATE_PERMISSION)
    )


def breakers_overview(*, tool: str = "") -> list[BreakerRow]:
    """Every tool contract (or the one named), by name, with its breaker from the store in use and its
    recent failures."""
    contracts_qs = ToolContract.objects.order_by("name")
    if tool:
        contracts_qs = contracts_qs.filter(name=tool)
    contracts = list(contracts_qs.values("name", "circuit_breaker", "max_concurrent"))
    fallback = int(RECENT_FALLBACK.total_seconds())
    seconds = {
        c["name"]: int(c["circuit_breaker"]["window_s"]) if c["circuit_breaker"] else fallback for c in contracts
    }
    recent = _recent_failures(seconds)
    current = store()
    return [
        BreakerRow(
            tool=c["name"],
            breaker=c["circuit_breaker"],
            max_concurrent=c["max_concurrent"],
            snapshot=current.snapshot(c["name"], breaker=Breaker.of(c["circuit_breaker"])),
            recent=dict(sorted(recent[c["name"]].items(), key=lambda item: (-item[1], item[0]))),
            recent_seconds=seconds[c["name"]],
        )
        for c in contracts
    ]


def breaker_changes(*, tool: str = "", limit: int = 50) -> list[BreakerChange]:
    changes = BreakerChange.objects.select_related("user")
    if tool:
        changes = changes.filter(tool=tool)
    return list(changes[:limit])


def breaker_row(tool: str) -> BreakerRow:
    (row,) = breakers_overview(tool=tool)
    return row
