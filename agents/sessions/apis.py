"""The agent API of this app: deciding (which may move a session) and the sessions themselves.

One view per operation; each validates, calls a service and shapes the answer with a presenter.
"""

from __future__ import annotations

from typing import Any

from django.core.validators import RegexValidator
from django.utils import timezone
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from agents.errors import UnknownSession
from agents.sessions.decide import decision_make
from agents.sessions.feedback import session_feedback
from agents.sessions.handoff import session_handoff_reason
from agents.sessions.models import Session
from agents.sessions.selectors import session_get_for_agent, session_latest_anomaly_codes
from agents.sessions.services import (
    SESSION_ID,
    SESSION_ID_MESSAGE,
    AgentRef,
    Move,
    session_action,
    session_allowed_actions,
    session_allowed_targets,
    session_context_problem,
    session_create,
    session_interrupt,
    session_report_anomaly,
    session_resume,
    session_transition,
)
from decision_service import request_log
from decision_service.api.base import AgentApi, idempotency_key, request_agent
from decision_service.api.fields import (
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
)
from rules.config.validators import KEY as KEY_PATTERN
from rules.decisions.compute import DecideRequest
from rules.decisions.presenters import decision_body
from rules.serializers import DecideInputSerializer, candidate_from

# The one key pattern (rules.validators), anchored for DRF's RegexField.
KEY = rf"^{KEY_PATTERN.pattern}$"


def session_output(session: Session, *, full: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {
        "session_id": session.key,
        "machine": session.machine.key,
        "state": session.state,
        "seq": session.seq,
        "allowed_transitions": session_allowed_targets(session),
        "allowed_actions": session_allowed_actions(session),
    }
    if full:
        body.update(
            {
                "interrupt_stack": list(session.stack),
                "terminal": session.state in session.machine.terminal_states,
                "anomalies": {"count": session.anomaly_count, "latest": session_latest_anomaly_codes(session)},
                "handoff_reason": session_handoff_reason(session),
                # A person has taken the session from the human queue (their username), else null.
                "claimed_by": session.claimed_by.get_username() if session.claimed_by else None,
                "feedback": session_feedback(session),
                "seconds_in_state": round((timezone.now() - session.state_entered_at).total_seconds(), 3),
                "context": session.context,
            }
        )
    return body


def move_output(move: Move) -> dict[str, Any]:
    return {"from": move.from_state, "state": move.state, "seq": move.seq}


class StrictUUIDField(serializers.UUIDField):
    """A UUID as text only: DRF's own field also takes an integer, as ``uuid.UUID(int=…)``."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            self.fail("invalid", value=data)
        return super().to_internal_value(data)


def decision_session_feedback(*, agent: AgentRef, session_id: str) -> dict[str, Any]:
    """Feedback hints for the agent's next prompt, when the decision belongs to a known session."""
    session = Session.objects.filter(agent_id=agent.pk, key=session_id).first()
    return {"feedback": session_feedback(session) if session else []}


class DecisionCreateApi(AgentApi):
    class TokensSerializer(StrictSerializer):
        prompt = StrictIntegerField(min_value=0, max_value=10_000_000, required=False, allow_null=True)
        completion = StrictIntegerField(min_value=0, max_value=10_000_000, required=False, allow_null=True)

    class InputSerializer(DecideInputSerializer):
        session_id = StrictCharField(max_length=128, required=False, allow_blank=True, default="")
        tokens = serializers.JSONField(required=False, allow_null=True)
        apply = StrictBooleanField(required=False, default=False)

        def validate_tokens(self, value: Any) -> Any:
            if value is None:
                return None
            nested = DecisionCreateApi.TokensSerializer(data=value)
            nested.is_valid(raise_exception=True)
            return nested.validated_data

    def post(self, request: Request) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        request_log.note(point=data["point"])
        key = idempotency_key(request)
        tokens = data.get("tokens") or {}
        agent = request_agent(request)
        result = decision_make(
            agent=agent,
            request=DecideRequest(
                point=data["point"],
                input=data["input"],
                session_id=data["session_id"],
                candidate=candidate_from(data),
                candidate_raw=data.get("candidate_raw"),
                facts=data["facts"],
                tokens_prompt=tokens.get("prompt"),
                tokens_completion=tokens.get("completion"),
            ),
            idempotency_key=key,
            apply=data["apply"],
        )
        code = status.HTTP_200_OK if result.record is None else status.HTTP_201_CREATED
        if result.record is not None:
            request_log.note(decision_id=str(result.record.pk))
        body: dict[str, Any] = dict(decision_body(result))
        if data["session_id"]:
            if result.feedback is not None:
                body["feedback"] = result.feedback
            else:  # a replayed answer: what the session shows now
                body.update(decision_session_feedback(agent=agent, session_id=data["session_id"]))
        if data["apply"]:
            body["session"] = result.session_move
        return Response(body, status=code)


class SessionApi(AgentApi):
    """An operation on one session, named by the ``session_id`` path segment."""

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)  # authentication first: a stranger learns nothing
        # No session can have a NUL in its id (creation refuses it), and PostgreSQL cannot even
        # compare text holding one: answer as for any other id this agent has no session with.
        session_id = kwargs.get("session_id", "")
        if "\x00" in session_id:
            raise UnknownSession(f"This agent has no session {session_id!r}.")


class SessionCreateApi(AgentApi):
    class InputSerializer(StrictSerializer):
        machine = StrictCharField(max_length=64)
        # Every other session route has the id as one path segment: an id with "/" could never be used.
        session_id = StrictCharField(
            max_length=128, required=False, validators=[RegexValidator(SESSION_ID, SESSION_ID_MESSAGE)]
        )
        context = serializers.DictField(required=False, default=dict)

        def validate_context(self, value: dict[str, Any]) -> dict[str, Any]:
            # The service refuses it too (session_create); here it is shown as the field's error.
            if problem := session_context_problem(value):
                raise serializers.ValidationError(problem)
            return value

    def post(self, request: Request) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        session = session_create(
            agent=request_agent(request),
            machine_key=data["machine"],
            session_id=data.get("session_id"),
            context=data["context"],
        )
        return Response(session_output(session), status=status.HTTP_201_CREATED)


class SessionDetailApi(SessionApi):
    def get(self, request: Request, session_id: str) -> Response:
        session = session_get_for_agent(agent=request_agent(request), session_id=session_id)
        return Response(session_output(session, full=True))


class SessionTransitionApi(SessionApi):
    class InputSerializer(StrictSerializer):
        to = StrictCharField(max_length=64)
        expected_state = StrictCharField(max_length=64)
        reason = StrictCharField(max_length=2000, required=False, allow_blank=True, default="")
        decision_id = StrictUUIDField(required=False, allow_null=True)

    def post(self, request: Request, session_id: str) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        move = session_transition(
            agent=request_agent(request),
            session_id=session_id,
            to=data["to"],
            expected_state=data["expected_state"],
            reason=data["reason"],
            decision_id=data.get("decision_id"),
            idempotency_key=idempotency_key(request),
        )
        return Response(move_output(move))


class SessionActionApi(SessionApi):
    class InputSerializer(StrictSerializer):
        type = StrictCharField(max_length=64)
        params = serializers.DictField(required=False, default=dict)

    def post(self, request: Request, session_id: str) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        whitelist = session_action(
            agent=request_agent(request), session_id=session_id, action=serializer.validated_data["type"]
        )
        return Response({"allowed": True, "allowed_actions": whitelist})


class SessionInterruptApi(SessionApi):
    class InputSerializer(StrictSerializer):
        to = StrictCharField(max_length=64)
        expected_state = StrictCharField(max_length=64)
        reason = StrictCharField(max_length=2000, required=False, allow_blank=True, default="")

    def post(self, request: Request, session_id: str) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        move = session_interrupt(
            agent=request_agent(request),
            session_id=session_id,
            to=data["to"],
            expected_state=data["expected_state"],
            reason=data["reason"],
        )
        return Response(move_output(move))


class SessionResumeApi(SessionApi):
    class InputSerializer(StrictSerializer):
        expected_state = StrictCharField(max_length=64)
        reason = StrictCharField(max_length=2000, required=False, allow_blank=True, default="")

    def post(self, request: Request, session_id: str) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        move = session_resume(
            agent=request_agent(request),
            session_id=session_id,
            expected_state=data["expected_state"],
            reason=data["reason"],
        )
        return Response(move_output(move))


class SessionAnomalyCreateApi(SessionApi):
    class InputSerializer(StrictSerializer):
        code = serializers.RegexField(KEY, max_length=64)
        detail = StrictCharField(max_length=2000, required=False, allow_blank=True, default="")
        raw = StrictCharField(max_length=20_000, required=False, allow_blank=True, default="", trim_whitespace=False)

    def post(self, request: Request, session_id: str) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        agent = request_agent(request)
        handoff = session_report_anomaly(
            agent=agent, session_id=session_id, code=data["code"], detail=data["detail"], raw=data["raw"]
        )
        session = session_get_for_agent(agent=agent, session_id=session_id)
        body = session_output(session, full=True)
        body["handed_off"] = handoff is not None
        return Response(body, status=status.HTTP_201_CREATED)
