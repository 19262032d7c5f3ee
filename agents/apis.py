"""The session API: one view per operation; each validates, calls a service and shapes the answer."""

from __future__ import annotations

from typing import Any

from django.core.validators import RegexValidator
from django.utils import timezone
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from agents.models import Session
from agents.selectors import session_get_for_agent, session_latest_anomaly_codes
from agents.services.sessions import (
    Move,
    allowed_actions,
    allowed_targets,
    session_action,
    session_create,
    session_feedback,
    session_interrupt,
    session_report_anomaly,
    session_resume,
    session_transition,
)
from decision_service.api.auth import request_agent
from decision_service.api.fields import StrictCharField, StrictSerializer
from rules.apis import AgentApi
from rules.errors import InvalidRequest

KEY = r"^[a-z][a-z0-9_]{0,63}$"


def session_output(session: Session, *, full: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {
        "session_id": session.key,
        "machine": session.machine.key,
        "state": session.state,
        "seq": session.seq,
        "allowed_transitions": allowed_targets(session),
        "allowed_actions": allowed_actions(session),
    }
    if full:
        body.update(
            {
                "interrupt_stack": list(session.stack),
                "terminal": session.state in session.machine.terminal_states,
                "anomalies": {"count": session.anomaly_count, "latest": session_latest_anomaly_codes(session)},
                "handoff_reason": session.handoff_reason or None,
                "feedback": session_feedback(session),
                "seconds_in_state": round((timezone.now() - session.state_entered_at).total_seconds(), 3),
                "context": session.context,
            }
        )
    return body


def move_output(move: Move) -> dict[str, Any]:
    return {"from": move.from_state, "state": move.state, "seq": move.seq}


def _idempotency_key(request: Request) -> str:
    key = request.headers.get("Idempotency-Key", "").strip()
    if len(key) > 200:
        raise InvalidRequest("The Idempotency-Key header is too long.", errors={"Idempotency-Key": ["At most 200."]})
    return key


class StrictUUIDField(serializers.UUIDField):
    """A UUID as text only: DRF's own field also takes an integer, as ``uuid.UUID(int=…)``."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            self.fail("invalid", value=data)
        return super().to_internal_value(data)


def _holds_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(k) or _holds_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_nul(v) for v in value)
    return False


class SessionCreateApi(AgentApi):
    class InputSerializer(StrictSerializer):
        machine = StrictCharField(max_length=64)
        # Every other session route has the id as one path segment: an id with "/" could never be used.
        session_id = StrictCharField(
            max_length=128, required=False, validators=[RegexValidator(r"^[^/]+\Z", "Must not contain '/'.")]
        )
        context = serializers.DictField(required=False, default=dict)

        def validate_context(self, value: dict[str, Any]) -> dict[str, Any]:
            # PostgreSQL cannot store NUL in JSON: refuse it here rather than fail on insert.
            if _holds_nul(value):
                raise serializers.ValidationError("Must not contain NUL characters.")
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


class SessionDetailApi(AgentApi):
    def get(self, request: Request, session_id: str) -> Response:
        session = session_get_for_agent(agent=request_agent(request), session_id=session_id)
        return Response(session_output(session, full=True))


class SessionTransitionApi(AgentApi):
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
            idempotency_key=_idempotency_key(request),
        )
        return Response(move_output(move))


class SessionActionApi(AgentApi):
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


class SessionInterruptApi(AgentApi):
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


class SessionResumeApi(AgentApi):
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


class SessionAnomalyCreateApi(AgentApi):
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
