"""The rule simulator in the admin: type a request, see the decision with the decision log's why panel,
under the current revision, a past one or an open change request's proposal — two side by side — and
keep it as a regression case. Nothing is logged: the page calls ``rules.governance.simulate``."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.translation import gettext

from decision_service.admin.forms import reason_shown
from decision_service.admin.kit import actor_of
from rules.config.runtime import engines
from rules.decisions.compute import DecideRequest
from rules.decisions.why import why_context
from rules.engine import Candidate
from rules.engine.conditions.session_keyword_seen import MAX_LAST
from rules.errors import DomainError
from rules.governance.simulate import (
    decision_simulate,
    regression_case_from_simulation,
    simulation_record,
)
from rules.models import OPEN_STATES, ChangeRequest, ConfigRevision, DecisionPoint, StateMachine
from rules.serializers import DecideInputSerializer, candidate_from

CURRENT = "current"
REVISIONS_OFFERED = 30
SIMULATOR_PERMISSION = "rules.view_rule"
CASE_PERMISSION = "rules.add_regressioncase"


@dataclass(frozen=True)
class Under:
    """One configuration to simulate under: the current revision, revision N, or change request N."""

    revision: int | None = None
    change_request: int | None = None

    @classmethod
    def parse(cls, value: str) -> Under | None:
        """``current``, ``r<N>`` or ``cr<N>``; None for an empty choice (no second side)."""
        value = value.strip()
        if not value:
            return None
        if value == CURRENT:
            return cls()
        for prefix, field in (("cr", "change_request"), ("r", "revision")):
            if value.startswith(prefix) and value[len(prefix) :].isdigit():
                return cls(**{field: int(value[len(prefix) :])})
        raise ValueError(value)


def _choices() -> list[tuple[str, str]]:
    current = engines.current().revision
    choices = [(CURRENT, gettext("current revision (%(number)s)") % {"number": current})]
    for request in ChangeRequest.objects.filter(state__in=OPEN_STATES).order_by("-pk"):
        choices.append(
            (
                f"cr{request.pk}",
                gettext("change request #%(number)s (%(state)s): %(reason)s")
                % {
                    "number": request.pk,
                    "state": request.get_state_display(),
                    "reason": reason_shown(request.reason)[:60],
                },
            )
        )
    numbers = ConfigRevision.objects.order_by("-number").values_list("number", flat=True)[:REVISIONS_OFFERED]
    choices += [(f"r{n}", gettext("revision %(number)s") % {"number": n}) for n in numbers if n != current]
    return choices


def _candidate(data: Any) -> tuple[Candidate | None, str | None, dict[str, str]]:
    """The candidate part of the form: none, a candidate (decision, confidence, reason) or raw output."""
    mode = data.get("candidate_mode", "none")
    if mode == "raw":
        return None, data.get("candidate_raw", ""), {}
    if mode == "candidate":
        decision = data.get("candidate_decision", "").strip()
        try:
            confidence = float(data.get("candidate_confidence", ""))
        except ValueError:
            return None, None, {"candidate_confidence": gettext("A number from 0 to 1.")}
        if not decision:
            return None, None, {"candidate_decision": gettext("Name the outcome the model proposed.")}
        if not 0.0 <= confidence <= 1.0:
            return None, None, {"candidate_confidence": gettext("A number from 0 to 1.")}
        return Candidate(decision, confidence, data.get("candidate_reason", "")), None, {}
    return None, None, {}


def _not_a_number(name: str) -> Any:
    raise ValueError(name)


def _json_object(text: str, example: str) -> tuple[dict[str, Any], str | None]:
    """A JSON object typed into the form (``{}`` when empty), or why it is not one."""
    if not text:
        return {}, None
    try:
        value = json.loads(text, parse_constant=_not_a_number)
    except json.JSONDecodeError as exc:
        # json's own message is English: say where it went wrong, in the operator's language.
        return {}, gettext("Not JSON: it goes wrong at line %(line)s, column %(column)s.") % {
            "line": exc.lineno,
            "column": exc.colno,
        }
    except (ValueError, RecursionError):
        # NaN or Infinity, an integer past Python's digit limit, or nesting past the recursion limit:
        # JSON decode errors they are not, but the operator typed them.
        return {}, gettext(
            "Not JSON a decision can use: a number is too long or not finite, or it is nested too deeply."
        )
    if not isinstance(value, dict):
        return {}, gettext("A JSON object, e.g. %(example)s.") % {"example": example}
    return value, None


@dataclass(frozen=True)
class SimulatedSession:
    """The session part of the form: its state, its fields, and the keyword lists of its latest decisions."""

    state: str = ""
    fields: dict[str, Any] = dataclasses.field(default_factory=dict)
    history: tuple[tuple[str, ...], ...] = ()


def _session(data: Any, errors: dict[str, str]) -> SimulatedSession:
    fields, problem = _json_object(data.get("session_fields", "").strip(), '{"receiver_phone": "13800138000"}')
    if problem:
        errors["session_fields"] = problem
    # One line per decision, newest first: the keyword lists it hit, by key (an empty line: it hit none).
    lines = data.get("session_history", "").rstrip("\r\n").splitlines()
    history = tuple(tuple(key for key in line.replace(",", " ").split()) for line in lines)
    if len(history) > MAX_LAST:
        errors["session_history"] = gettext("At most %(max)s decisions, one a line.") % {"max": MAX_LAST}
    return SimulatedSession(state=data.get("session_state", "").strip(), fields=fields, history=history)


def _request(data: Any) -> tuple[DecideRequest | None, SimulatedSession, dict[str, str]]:
    errors: dict[str, str] = {}
    point = data.get("point", "").strip()
    if not point:
        errors["point"] = gettext("Choose a decision point.")
    facts, problem = _json_object(data.get("facts", "").strip(), '{"refund_amount": 800}')
    if problem:
        errors["facts"] = problem
    session = _session(data, errors)
    candidate, raw, candidate_errors = _candidate(data)
    errors.update(candidate_errors)
    if errors:
        return None, session, errors
    validated, errors = _validated(point=point, text=data.get("input", ""), candidate=candidate, raw=raw, facts=facts)
    if validated is None:
        return None, session, errors
    request = DecideRequest(
        point=validated["point"],
        input=validated["input"],
        candidate=candidate_from(validated),
        candidate_raw=validated.get("candidate_raw"),
        facts=validated["facts"],
    )
    return request, session, errors


def _validated(
    *, point: str, text: str, candidate: Candidate | None, raw: str | None, facts: Any
) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """The form's values through the serializer ``POST /api/v1/decisions`` and ``/simulations`` use, so
    that the simulator accepts and refuses exactly what the API does; its errors by form field."""
    body: dict[str, Any] = {"point": point, "input": text, "facts": facts}
    if candidate is not None:
        body["candidate"] = {
            "decision": candidate.decision,
            "confidence": candidate.confidence,
            "reason": candidate.reason,
        }
    if raw is not None:
        body["candidate_raw"] = raw
    serializer = DecideInputSerializer(data=body)
    if serializer.is_valid():
        return dict(serializer.validated_data), {}
    errors: dict[str, str] = {}
    for name, detail in serializer.errors.items():
        if name == "candidate" and isinstance(detail, dict):
            for field, messages in detail.items():
                errors[f"candidate_{field}"] = str(messages[0])
        else:
            errors[name if name in _FORM_FIELDS else "point"] = str(detail[0] if isinstance(detail, list) else detail)
    return None, errors


# Form fields the page shows an error beside; any other error (e.g. the body as a whole) shows at the top.
_FORM_FIELDS = frozenset({"point", "input", "facts", "candidate_raw", "session_fields", "session_history"})


def _side(request: DecideRequest, session: SimulatedSession, under: Under) -> dict[str, Any]:

    try:
        simulation = decision_simulate(
            request=request,
            session_state=session.state,
            revision=under.revision,
            change_request=under.change_request,
            session_fields=session.fields,
            session_history=session.history,
        )
    except DomainError as exc:
        return {"problem": exc.detail, "errors": exc.errors}
    record = simulation_record(request=request, simulation=simulation, session_state=session.state)
    if simulation.change_request is not None:
        label = gettext("change request #%(number)s (on revision %(revision)s)") % {
            "number": simulation.change_request,
            "revision": simulation.revision,
        }
    else:
        label = gettext("revision %(number)s") % {"number": simulation.revision}
    return {
        "label": label,
        "needs_candidate": simulation.decision.needs_candidate,
        "decision": simulation.decision.decision,
        "why": why_context(record, simulated=label),
    }


def simulator_view(model_admin: Any, request: HttpRequest) -> HttpResponse:
    """The simulator page (GET: the empty form; POST: simulate, or keep the request as a regression case)."""
    if not request.user.has_perm(SIMULATOR_PERMISSION):
        raise PermissionDenied
    data = request.POST if request.method == "POST" else request.GET
    form = {k: data.get(k, "") for k in data}
    form.setdefault("under", CURRENT)
    form.setdefault("candidate_mode", "none")
    sides: list[dict[str, Any]] = []
    errors: dict[str, str] = {}
    machines = dict(StateMachine.objects.values_list("key", "states"))
    points = [
        (key, outcomes, machines.get(machine, []))
        for key, outcomes, machine in DecisionPoint.objects.order_by("key").values_list("key", "outcomes", "machine")
    ]
    if request.method == "POST":
        decide_request, session, errors = _request(data)
        unders: list[Under] = []
        for field in ("under", "compare"):
            try:
                chosen = Under.parse(data.get(field, ""))
            except ValueError:
                errors[field] = gettext("Choose the current revision, a revision or an open change request.")
                continue
            if chosen is not None and chosen not in unders:
                unders.append(chosen)
        if decide_request is not None and not errors:
            if "save_case" in data:
                _save_case(request, decide_request, session, data)
            sides = [_side(decide_request, session, under) for under in unders or [Under()]]
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": gettext("Rule simulator"),
        "subtitle": None,
        "form": form,
        "errors": errors,
        "points": [{"key": key, "outcomes": outcomes, "states": states or []} for key, outcomes, states in points],
        "choices": _choices(),
        "sides": sides,
        "can_save": request.user.has_perm(CASE_PERMISSION),
        "outcomes": next((o for k, o, _ in points if k == form.get("point")), []),
        "changelist_url": reverse("admin:rules_decisionrecord_changelist"),
    }
    return TemplateResponse(request, "admin/rules/simulator.html", context)


def _save_case(request: HttpRequest, decide_request: DecideRequest, session: SimulatedSession, data: Any) -> None:
    if not request.user.has_perm(CASE_PERMISSION):
        raise PermissionDenied
    try:
        case = regression_case_from_simulation(
            request=decide_request,
            session_state=session.state,
            session_fields=session.fields,
            session_history=session.history,
            expected=data.get("expected", ""),
            note=data.get("note", "").strip(),
            actor=actor_of(request),
        )
    except DomainError as exc:
        messages.error(request, gettext("Not saved. %(why)s") % {"why": exc.detail})
        return
    messages.success(
        request,
        gettext("Saved as regression case %(case)s: %(point)s must keep deciding %(outcome)s.")
        % {"case": case.pk, "point": case.point, "outcome": case.expected},
    )
