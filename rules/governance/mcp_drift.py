"""Drift of upstream MCP tools from their approved contracts: recorded once, adopted only by a person.

``rules.config.mcp_servers.mcp_tools_seen`` (called by every gateway process, at most once per server's
``tools_refresh_s``) compares an upstream's ``tools/list`` with the live contracts and hands what it saw
to ``mcp_drift_record`` (registered from ``RulesConfig.ready()``; the configuration side does not import
the change request workflow). Invariants:

- At most one drift of a tool is open (a partial unique index): threads and processes that see the same
  drift at once all try to insert it; one succeeds, the others' inserts fail on the index (PostgreSQL
  makes them wait for the winner's commit first) and they leave it be. SQLite serialises writers itself.
- The drift's change request is filed in the same transaction as the drift, so no drift is ever open
  without its request unless the proposal could not be made (``problem`` says why).
- The request proposes the contract made from the upstream's definition, keeping on an existing contract
  everything MCP does not describe (``rules.config.tools.mcp_tool_adopted``, as ``mcp_tools import``). The
  issue asks that a drifted tool is offered again only once a person approves its new definition, for a
  read-only tool too, where the four-eyes gate would apply the change at once: so the request is filed
  through the gate's own path for held changes (``change_request_hold``) with the reason "adopts the
  upstream's definition", whatever else ``change_risks`` finds. Nothing else passes that way; the gate
  itself is unchanged.
- Its author is a system user (``mcp-upstream``) that cannot log in: the proposer is the upstream, not a
  member of staff, so one person with the approval permission suffices (nobody approves their own).
- Once the contract equals the upstream again, the open drift closes: ``adopted`` if its request applied,
  otherwise ``resolved`` (the upstream went back to the approved definition) and its open request is
  withdrawn. An upstream that changes again while a drift is open resolves that drift (withdrawing its
  request) and opens a new one. A request superseded under it (the contract was edited meanwhile) is
  filed again; one a person rejected is left as it is: the tool stays held back.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from decision_service.digests import canonical_digest
from rules.config.document.diff import config_diff
from rules.config.mcp_servers import DRIFT_FIELDS
from rules.config.revisions import Proposal
from rules.config.selectors import config_document, revision_latest
from rules.config.tool_definitions import tool_problems
from rules.config.tools import mcp_tool_adopted
from rules.errors import DuplicateChangeRequest
from rules.governance.change_requests import change_request_hold, change_request_withdraw
from rules.governance.risk import RiskReason, change_risks
from rules.models import OPEN_STATES, ChangeRequest, ChangeRequestState, McpDriftStatus, McpToolDrift

logger = logging.getLogger("arbiter.mcp")

UPSTREAM_USERNAME = "mcp-upstream"
# Why a drift's status moved (its history's reasons, rendered in the reader's language by the admin).
SEEN = gettext_noop("seen upstream")
FILED = gettext_noop("its change request filed")
UNFILED = gettext_noop("no change request: the definition cannot be a contract")
APPLIED = gettext_noop("its change request applied")
WENT_BACK = gettext_noop("the upstream went back to the approved definition")
CHANGED_AGAIN = gettext_noop("the upstream changed the tool again")
REFILED = gettext_noop("its change request was superseded: filed again")
ADOPTS = gettext_noop("adopts the definition its upstream MCP server now gives (a person approves every such change)")

# name → (drift kind or None when the tool agrees with its contract, the upstream's definition)
Observed = Mapping[str, tuple[str | None, Mapping[str, Any]]]


def mcp_upstream_user() -> Any:
    """The author of drift change requests: a user that cannot log in (inactive, no usable password)."""
    User = get_user_model()
    user, created = User.objects.get_or_create(
        username=UPSTREAM_USERNAME, defaults={"is_active": False, "first_name": "MCP upstream"}
    )
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


def _fingerprint(proposed: Mapping[str, Any]) -> str:
    return canonical_digest({name: proposed.get(name) for name in DRIFT_FIELDS}, text="utf-8")


def _save(drift: McpToolDrift, reason: str) -> None:
    drift._history_user = mcp_upstream_user()  # type: ignore[attr-defined]
    drift._change_reason = reason  # type: ignore[attr-defined]
    drift.save()


def _file(drift: McpToolDrift) -> ChangeRequest | None:
    """File the request proposing the drift's contract (under the writers' lock, inside the caller's
    transaction); None, with ``drift.problem`` set, when it cannot be proposed."""
    live = config_document()
    tools = {t["name"]: t for t in live.get("tools", [])}
    tools[drift.contract_name] = drift.proposed
    after = {**live, "tools": [tools[name] for name in sorted(tools)]}
    machines = {m["key"]: m for m in live["machines"]}
    problems = tool_problems(drift.proposed or {}, machines=machines)
    if problems:
        drift.problem = "; ".join(f"{'.'.join(map(str, at))}: {message}" for at, message in problems.items())
        return None
    changes = config_diff(live, after)
    if not changes:
        return None
    latest = revision_latest()
    record = f"tool {drift.contract_name}"
    risks = [RiskReason.of(record, ADOPTS), *change_risks(live, after, changes)]
    proposal = Proposal(
        base_revision=latest.number if latest else 0, before=live, after=after, changes=changes, risks=risks
    )
    reason = (
        f"MCP server {drift.server}: its tool {drift.tool} is {'new' if drift.kind == 'new' else 'changed'} upstream"
    )
    try:
        return change_request_hold(proposal=proposal, actor=mcp_upstream_user(), reason=reason)
    except DuplicateChangeRequest as exc:
        return exc.change_request


def _close(drift: McpToolDrift, *, why: str) -> None:
    """Close an open drift (locked by the caller): adopted when its request applied, else resolved and its
    open request withdrawn."""
    request = drift.change_request
    if request is not None and request.state == ChangeRequestState.APPLIED:
        drift.status = McpDriftStatus.ADOPTED
        _save(drift, APPLIED)
        return
    drift.status = McpDriftStatus.RESOLVED
    _save(drift, why)
    if request is not None and request.state in OPEN_STATES:
        # No typed reason: the drift's history says why, in the reader's language.
        change_request_withdraw(request=request, actor=mcp_upstream_user())


def _open(server: str, name: str, kind: str, upstream: Mapping[str, Any], approved: Mapping[str, Any] | None) -> None:
    proposed = mcp_tool_adopted(approved, {**upstream, "name": f"{server}.{name}"})
    fingerprint = _fingerprint(proposed)
    now = timezone.now()
    with transaction.atomic():
        current = (
            McpToolDrift.objects.select_for_update(of=("self",))
            .filter(server=server, tool=name, status=McpDriftStatus.OPEN)
            .first()
        )
        if current is not None:
            if current.fingerprint == fingerprint:
                return  # another thread opened it meanwhile
            _close(current, why=CHANGED_AGAIN)
        drift = McpToolDrift(
            server=server,
            tool=name,
            kind=kind,
            upstream=dict(upstream),
            fingerprint=fingerprint,
            approved=approved,
            proposed=proposed,
            first_seen=now,
            last_seen=now,
        )
        try:
            with transaction.atomic():
                _save(drift, SEEN)
        except IntegrityError:
            return  # another thread or process opened it first: one drift, one request
        drift.change_request = _file(drift)
        _save(drift, FILED if drift.change_request is not None else UNFILED)


def _refile(drift: McpToolDrift, approved: Mapping[str, Any] | None) -> None:
    """File a superseded request again, proposed on the contract as it is now (``approved``)."""
    with transaction.atomic():
        drift = McpToolDrift.objects.select_for_update(of=("self",)).select_related("change_request").get(pk=drift.pk)
        request = drift.change_request
        if drift.status != McpDriftStatus.OPEN or (
            request is not None and request.state != ChangeRequestState.SUPERSEDED
        ):
            return
        drift.approved = dict(approved) if approved is not None else None
        drift.proposed = mcp_tool_adopted(approved, {**drift.upstream, "name": drift.contract_name})
        drift.change_request = _file(drift)
        _save(drift, REFILED)


def mcp_drift_record(*, server: str, observed: Observed, contracts: Mapping[str, Mapping[str, Any]]) -> None:
    """Record what the gateway saw of ``server``'s tools (``observed``: name → (drift kind or None,
    upstream definition)); ``contracts`` are the live contracts by full name. Idempotent: seeing the same
    thing again only moves ``last_seen``."""
    drifts = {
        d.tool: d
        for d in McpToolDrift.objects.filter(server=server, status=McpDriftStatus.OPEN).select_related("change_request")
    }
    seen = []
    for name, (kind, upstream) in observed.items():
        drift = drifts.get(name)
        if kind is None:
            if drift is not None:
                with transaction.atomic():
                    locked = (
                        McpToolDrift.objects.select_for_update(of=("self",))
                        .select_related("change_request")
                        .filter(pk=drift.pk, status=McpDriftStatus.OPEN)
                        .first()
                    )
                    if locked is not None:
                        _close(locked, why=WENT_BACK)
            continue
        approved = contracts.get(f"{server}.{name}")
        proposed = mcp_tool_adopted(approved, {**upstream, "name": f"{server}.{name}"})
        if drift is None or drift.fingerprint != _fingerprint(proposed):
            _open(server, name, kind, upstream, approved)
            continue
        seen.append(drift.pk)
        if drift.change_request is not None and drift.change_request.state == ChangeRequestState.SUPERSEDED:
            _refile(drift, approved)
    if seen:
        # A heartbeat, not a change of the drift: kept out of its history (``history`` excludes it).
        McpToolDrift.objects.filter(pk__in=seen).update(last_seen=timezone.now())
