"""The rule simulator: decide a typed-in request as ``POST /api/v1/decisions`` would, and write nothing.

Under the current revision, a past revision, or an open change request's proposed configuration (the
live document with the request's changes made, compiled as the impact preview compiles it). The request
is checked against the chosen point exactly as a real one (its facts, raw model output parsed the same
way, the default answering for raw output without a valid candidate), but no decision is logged, no
"ask your LLM" counter is raised and no anomaly is recorded: the simulator only reads the configuration.

What rules read of a session beyond its state is typed in as well: its fields (``session_fields``, by
name) and the keyword lists each of its latest logged decisions hit (``session_history``, newest first).
A field of another type than its declaration, or one no rule reads, changes nothing, as in a real session.

A simulated case can be kept as a regression case (``regression_case_from_simulation``): its input and
facts are masked as a logged decision's would be, so a case pinned from the simulator is stored like one pinned
from the log.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from rules.config.revisions import Actor
from rules.config.runtime import engines
from rules.config.selectors import config_document
from rules.decisions.compute import DecideRequest, decision_compute, decision_prepare
from rules.decisions.decide import decision_record_build
from rules.decisions.session_data import recent_lists, session_read_document, session_view
from rules.engine import CompiledConfig, CompiledPoint, Decision, compile_config
from rules.engine.compiler import CompileError
from rules.engine.request import SessionView
from rules.errors import ConfigError, EngineUnavailable, InvalidRequest, NotFound, NotPending, UnknownPoint
from rules.governance.change_requests import config_document_apply
from rules.governance.models.change_requests import OPEN_STATES
from rules.governance.regressions import masked_facts_problem, masked_fields_problem
from rules.models import ChangeRequest, ConfigRevision, DecisionRecord, RegressionCase


@dataclass(frozen=True)
class Simulation:
    """A simulated decision and what it was evaluated under: ``revision`` (for a change request, the live
    revision its changes were made on) and ``change_request`` (or None)."""

    decision: Decision
    revision: int
    change_request: int | None
    evaluated_us: int
    point: CompiledPoint
    session: SessionView | None = field(default=None, compare=False)

    @property
    def label(self) -> str:
        if self.change_request is not None:
            return f"change request #{self.change_request} (on revision {self.revision})"
        return f"revision {self.revision}"


def simulation_config(*, revision: int | None = None, change_request: int | None = None) -> tuple[CompiledConfig, int]:
    """The compiled configuration to simulate under, and the revision number it is (or is based on)."""
    if revision is not None and change_request is not None:
        raise InvalidRequest(
            gettext("Choose a revision or a change request, not both."),
            errors={"change_request": [gettext("Send either revision or change_request, not both.")]},
        )
    try:
        if change_request is not None:
            request = ChangeRequest.objects.filter(pk=change_request).first()
            if request is None:
                raise NotFound(gettext("There is no change request #%(number)s.") % {"number": change_request})
            if request.state not in OPEN_STATES:
                raise NotPending(
                    gettext("Change request #%(number)s is %(state)s: only open requests are simulated.")
                    % {"number": change_request, "state": request.state}
                )
            live = config_document()
            current = engines.current().revision
            proposed = config_document_apply(live, request.changes)
            return compile_config(proposed, revision=current, backend=settings.ARBITER_ENGINE), current
        if revision is not None:
            try:
                return engines.for_revision(revision), revision
            except ConfigRevision.DoesNotExist as exc:
                raise NotFound(
                    gettext("There is no revision %(revision)s of the configuration.") % {"revision": revision}
                ) from exc
        config = engines.current()
        return config, config.revision
    except CompileError as exc:
        raise EngineUnavailable(str(exc)) from exc


def simulated_session(
    point: CompiledPoint, fields: Mapping[str, Any] | None, history: Sequence[Sequence[str]] | None
) -> SessionView:
    """What ``point``'s rules read of a session holding ``fields`` whose latest decisions hit the keyword
    lists of ``history`` (newest first), as a decide builds it from a session read."""
    return session_view(point, fields or {}, recent_lists(history))


def decision_simulate(
    *,
    request: DecideRequest,
    session_state: str = "",
    revision: int | None = None,
    change_request: int | None = None,
    now: dt.datetime | None = None,
    session_fields: Mapping[str, Any] | None = None,
    session_history: Sequence[Sequence[str]] | None = None,
) -> Simulation:
    """What the chosen configuration decides for ``request`` (see the module docstring); writes nothing."""
    config, number = simulation_config(revision=revision, change_request=change_request)
    point = config.point(request.point)
    if point is None:
        raise UnknownPoint(
            gettext("There is no decision point '%(point)s' in %(where)s.")
            % {"point": request.point, "where": _where(number, change_request)}
        )
    prepared = decision_prepare(point=point, request=request)
    session = simulated_session(point, session_fields, session_history)
    # The very step decide takes (rules.decisions.compute), so the simulator cannot answer otherwise.
    computed = decision_compute(
        point=point,
        request=request,
        prepared=prepared,
        session_state=session_state or None,
        now=now or timezone.now(),
        session=session,
    )
    decision, evaluated_us = computed.decision, computed.evaluated_us
    return Simulation(
        decision=decision,
        revision=number,
        change_request=change_request,
        evaluated_us=evaluated_us,
        point=point,
        session=session,
    )


SIMULATOR = "(simulator)"


def simulation_record(*, request: DecideRequest, simulation: Simulation, session_state: str = "") -> DecisionRecord:
    """The log row the decision *would* have been, for the admin's why panel: built exactly as the decide
    service builds it (personal data masked), and never saved."""
    record = decision_record_build(
        None,  # type: ignore[arg-type]  # no agent: the row is never saved
        SIMULATOR,
        request,
        simulation.point,
        simulation.decision,
        simulation.revision,
        simulation.evaluated_us,
        timezone.now(),
        "",
        "",
    )
    record.session_state = session_state
    if simulation.session is not None:
        record.session_read = session_read_document(simulation.point, simulation.session)
    return record


def _where(revision: int, change_request: int | None) -> str:
    if change_request is not None:
        return gettext("change request #%(number)s") % {"number": change_request}
    return gettext("revision %(number)s") % {"number": revision}


def regression_case_from_simulation(
    *,
    request: DecideRequest,
    session_state: str,
    expected: str,
    actor: Actor,
    note: str = "",
    session_fields: Mapping[str, Any] | None = None,
    session_history: Sequence[Sequence[str]] | None = None,
) -> RegressionCase:
    """Keep a simulated request as a regression case expecting ``expected`` (an outcome of the point in the
    current revision). The input and facts are masked as the decision log masks them; the case is decided at "now"
    whenever it is checked (it has no logged time)."""
    point = engines.current().point(request.point)
    if point is None:
        raise UnknownPoint(gettext("There is no decision point '%(point)s'.") % {"point": request.point})
    outcome = expected.strip()
    if outcome not in point.spec.outcomes:
        raise ConfigError([f"expected: '{outcome}' is not an outcome of {request.point}"])
    prepared = decision_prepare(point=point, request=request)
    session = simulated_session(point, session_fields, session_history)
    decision = decision_compute(
        point=point,
        request=request,
        prepared=prepared,
        session_state=session_state or None,
        now=timezone.now(),
        session=session,
    ).decision
    masked = point.masker.mask(request.input)
    masked_facts = point.masker.mask_facts(prepared.facts)
    if problem := masked_facts_problem(point, masked_facts.record):
        raise ConfigError([problem])
    session_read = session_read_document(point, session)
    if problem := masked_fields_problem(point, session_read):
        raise ConfigError([problem])
    candidate = prepared.candidate
    with transaction.atomic():
        return RegressionCase.objects.create(
            point=point.spec.key,
            input=masked.text,
            facts=masked_facts.facts,
            masked_facts=masked_facts.record,
            session_state=session_state,
            candidate_decision=candidate.decision if candidate else "",
            candidate_confidence=candidate.confidence if candidate else None,
            candidate_invalid=request.candidate_raw is not None and candidate is None,
            keyword_hits={k: list(v) for k, v in decision.keyword_hits.items()},
            masked=dict(masked.counts),
            session_read=session_read,
            decided_at=None,
            expected=outcome,
            note=note,
            decision_id=None,
            created_by=actor if actor is not None and getattr(actor, "pk", None) else None,  # type: ignore[misc]
        )
