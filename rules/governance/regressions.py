"""Regression cases: logged decisions pinned with the outcome the configuration must keep giving.

A decision whose rules read a fact masked in the log cannot be pinned: the case would be checked without
the fact's value. (A rule added later that reads a masked fact of a pinned case makes that case's check
an estimate, as it makes a replay one.)

A case is pinned from the decision log (its expected outcome the logged one, or a corrected one for a
decision that was wrong). Every change request is checked against the cases of the points it affects
(a request that breaks one needs an explicit override reason to be approved), and
``manage.py check_regressions`` checks them all against the live configuration, for teams that keep
their rules in git.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from rules.config.revisions import Actor
from rules.config.runtime import engines
from rules.decisions.compute import decision_for_invalid_output
from rules.decisions.replay import decision_reevaluate
from rules.decisions.session_data import masked_fields_read
from rules.engine import CompiledPoint
from rules.engine.masking import masked_fact_names
from rules.errors import ConfigError
from rules.models import DecisionRecord, RegressionCase


@dataclass(frozen=True)
class _CaseRequest:
    """A case as the replay reads a logged request."""

    input: str
    masked: dict[str, Any]
    masked_facts: dict[str, Any]
    keyword_hits: dict[str, Any]
    facts: dict[str, Any]
    session_state: str
    candidate_decision: str
    candidate_confidence: float | None
    candidate_reason: str
    candidate_invalid: bool
    created_at: dt.datetime
    session_read: dict[str, Any]


def case_evaluate(case: RegressionCase, point: CompiledPoint, *, now: dt.datetime | None = None) -> str:
    """The outcome ``point`` gives the case's request today (``(asks the LLM)`` when it needs a candidate)."""
    request = _CaseRequest(
        input=case.input,
        masked=case.masked,
        masked_facts=case.masked_facts,
        keyword_hits=case.keyword_hits,
        facts=case.facts,
        session_state=case.session_state,
        candidate_decision=case.candidate_decision,
        candidate_confidence=case.candidate_confidence,
        candidate_reason="",
        candidate_invalid=False,
        created_at=case.decided_at or now or timezone.now(),
        session_read=case.session_read,
    )
    decision = decision_reevaluate(point, request, exact=False)
    if case.candidate_invalid:
        decision = decision_for_invalid_output(point, decision, "recorded as invalid")
    return decision.decision or "(asks the LLM)"


def masked_facts_problem(point: CompiledPoint, masked_facts: dict[str, Any]) -> str | None:
    """Why a request cannot be pinned: rules of ``point`` read facts that were masked in it, so the case
    would be checked without them (and fail, or pass, by chance)."""
    read = sorted(masked_fact_names(masked_facts) & point.facts_read)
    if not read:
        return None
    return gettext(
        "rules of %(point)s read %(facts)s, masked in the log: a case without their values cannot be checked"
    ) % {"point": point.spec.key, "facts": ", ".join(read)}


def masked_fields_problem(point: CompiledPoint, session_read: dict[str, Any]) -> str | None:
    """Why a request cannot be pinned: rules of ``point`` read session fields masked in its log row."""
    read = masked_fields_read(point, session_read)
    if not read:
        return None
    return gettext(
        "rules of %(point)s read the session field %(fields)s, masked in the log: a case without its value "
        "cannot be checked"
    ) % {"point": point.spec.key, "fields": ", ".join(read)}


def regression_case_pin(
    *, record: DecisionRecord, actor: Actor, expected: str | None = None, note: str = ""
) -> RegressionCase:
    """Pin a logged decision: ``expected`` defaults to the logged outcome (give another to correct it)."""
    outcome = (expected or record.decision).strip()
    point = engines.current().point(record.point)
    if point is not None and outcome not in point.spec.outcomes:
        wrong = gettext("expected: '%(outcome)s' is not an outcome of %(point)s")
        raise ConfigError([wrong % {"outcome": outcome, "point": record.point}])
    if point is not None and (problem := masked_facts_problem(point, record.masked_facts)):
        raise ConfigError([problem])
    if point is not None and (problem := masked_fields_problem(point, record.session_read)):
        raise ConfigError([problem])
    with transaction.atomic():
        return RegressionCase.objects.create(
            point=record.point,
            input=record.input,
            facts=record.facts,
            masked_facts=record.masked_facts,
            session_state=record.session_state,
            candidate_decision=record.candidate_decision,
            candidate_confidence=record.candidate_confidence,
            candidate_invalid=record.candidate_invalid,
            keyword_hits=record.keyword_hits,
            masked=record.masked,
            session_read=record.session_read,
            decided_at=record.created_at,
            expected=outcome,
            note=note,
            decision_id=record.pk,
            created_by=actor if actor is not None and getattr(actor, "pk", None) else None,  # type: ignore[misc]
        )


@dataclass(frozen=True)
class CaseFailure:
    case: RegressionCase
    got: str

    def line(self) -> str:
        source = f" (decision {self.case.decision_id})" if self.case.decision_id else ""
        return f"case {self.case.pk} {self.case.point}: expected {self.case.expected}, got {self.got}{source}"


def regressions_check() -> tuple[int, list[CaseFailure]]:
    """Every case against the live configuration: (how many were checked, the failing ones)."""
    config = engines.current()
    failures = []
    cases = list(RegressionCase.objects.order_by("pk"))
    for case in cases:
        point = config.point(case.point)
        got = case_evaluate(case, point) if point is not None else "(point removed)"
        if got != case.expected:
            failures.append(CaseFailure(case, got))
    return len(cases), failures
