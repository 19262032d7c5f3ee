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
from agents.sessions.codes import PROPOSED_BY
from agents.sessions.decide import decision_make
from agents.sessions.events import session_event
from agents.sessions.field_patch import session_fields_update
from agents.sessions.interrupts import session_interrupt, session_report_anomaly, session_resume
from agents.sessions.models import Session
from agents.sessions.presenters import SessionState, session_state
from agents.sessions.selectors import session_get_for_agent, session_latest_anomaly_codes
from agents.sessions.services import (
    SESSION_ID,
    SESSION_ID_MESSAGE,
    Move,
    session_action,
    session_context_problem,
    session_create,
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
from rules.serializers import DecideInputSerializer, LlmSerializer, candidate_from

# The one key pattern (rules.validators), anchored for DRF's RegexField.
KEY = rf"^{KEY_PATTERN.pattern}$"


def session_output(session: Session, *, full: bool = False) -> dict[str, Any]:
    """A session's own answer (create, detail): its first fields as before, and the session object under
    ``session``, as every answer about a session carries it."""
    shown = session_state(session)
    body: dict[str, Any] = {
        key: shown[key]  # type: ignore[literal-required]
        for key in ("session_id", "machine", "state", "seq", "allowed_transitions", "allowed_actions")
    }
    if full:
        body.update(
            {
                "interrupt_stack": list(session.stack),
                "terminal": session.state in session.machine.terminal_states,
                "anomalies": {"count": session.anomaly_count, "latest": session_latest_anomaly_codes(session)},
                "handoff_reason": shown["handoff_reason"],
                # A person has taken the session from the human queue (their username), else null.
                "claimed_by": shown["claimed_by"],
                "feedback": shown["feedback"],
                "seconds_in_state": round((timezone.now() - session.state_entered_at).total_seconds(), 3),
                "context": session.context,
                "fields": shown["fields"],
                "missing": shown["missing"],
            }
        )
    body["session"] = shown
    return body


def move_output(move: Move) -> dict[str, Any]:
    body = {"from": move.from_state, "state": move.state, "seq": move.seq, "session": move.session}
    if move.normalised is not None:  # a move with field updates says which values were normalised
        body["normalised"] = move.normalised
    return body


class StrictUUIDField(serializers.UUIDField):
    """A UUID as text only: DRF's own field also takes an integer, as ``uuid.UUID(int=…)``."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            self.fail("invalid", value=data)
        return super().to_internal_value(data)


class DecisionCreateApi(AgentApi):
    class TokensSerializer(StrictSerializer):
        prompt = StrictIntegerField(min_value=0, max_value=10_000_000, required=False, allow_null=True)
        completion = StrictIntegerField(min_value=0, max_value=10_000_000, required=False, allow_null=True)

    class InputSerializer(DecideInputSerializer):
        session_id = StrictCharField(max_length=128, required=False, allow_blank=True, default="")
        tokens = serializers.JSONField(required=False, allow_null=True)
        # Only here, not in the shared DecideInputSerializer: the simulator decides no model's candidate.
        llm = serializers.JSONField(required=False, allow_null=True)
        apply = StrictBooleanField(required=False, default=False)
        expected_state = StrictCharField(max_length=64, required=False)

        def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
            attrs = super().validate(attrs)
            if "expected_state" in attrs and not attrs["apply"]:
                raise serializers.ValidationError(
                    {
                        "expected_state": [
                            "Only with apply: true (the state the move starts from); "
                            "a decide that moves nothing needs none."
                        ]
                    }
                )
            return attrs

        def validate_llm(self, value: Any) -> Any:
            if value is None:
                return None
            nested = LlmSerializer(data=value)
            nested.is_valid(raise_exception=True)
            return nested.validated_data

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
        llm = data.get("llm") or {}
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
                llm_model=llm.get("model", ""),
                llm_prompt_version=llm.get("prompt_version", ""),
                llm_latency_ms=llm.get("latency_ms"),
                expected_state=data.get("expected_state", ""),
            ),
            idempotency_key=key,
            apply=data["apply"],
        )
        code = status.HTTP_200_OK if result.record is None else status.HTTP_201_CREATED
        if result.record is not None:
            request_log.note(decision_id=str(result.record.pk))
        body: dict[str, Any] = dict(decision_body(result))
        if result.session is not None:
            body["feedback"] = result.session["feedback"]
            body["session"] = result.session
        if result.prompt is not None:
            body["prompt"] = result.prompt
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
        updates = serializers.DictField(required=False, allow_empty=True)
        proposed_by = serializers.ChoiceField(choices=PROPOSED_BY, required=False, default="runtime")

    def post(self, request: Request, session_id: str) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        move = session_transition(
            proposed_by=data["proposed_by"],
            agent=request_agent(request),
            session_id=session_id,
            to=data["to"],
            expected_state=data["expected_state"],
            reason=data["reason"],
            decision_id=data.get("decision_id"),
            idempotency_key=idempotency_key(request),
            updates=data.get("updates"),
        )
        return Response(move_output(move))


class SessionFieldsApi(SessionApi):
    class InputSerializer(StrictSerializer):
        expected_state = StrictCharField(max_length=64)
        # Each value is checked against its declaration by the service (all of them, each named).
        updates = serializers.DictField(allow_empty=False)

    def patch(self, request: Request, session_id: str) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        updated = session_fields_update(
            agent=request_agent(request),
            session_id=session_id,
            expected_state=data["expected_state"],
            updates=data["updates"],
            idempotency_key=idempotency_key(request),
        )
        shown = updated.session
        return Response({"fields": shown["fields"], "normalised": updated.normalised, "session": shown})


class SessionEventApi(SessionApi):
    class InputSerializer(StrictSerializer):
        event = StrictCharField(max_length=64)
        expected_state = StrictCharField(max_length=64)
        decision_id = StrictUUIDField(required=False, allow_null=True)
        updates = serializers.DictField(required=False, allow_empty=True)
        proposed_by = serializers.ChoiceField(choices=PROPOSED_BY, required=False, default="runtime")

    def post(self, request: Request, session_id: str) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        sent = session_event(
            agent=request_agent(request),
            session_id=session_id,
            event=data["event"],
            expected_state=data["expected_state"],
            decision_id=data.get("decision_id"),
            proposed_by=data["proposed_by"],
            idempotency_key=idempotency_key(request),
            updates=data.get("updates"),
        )
        move = sent.move
        body = {"event": sent.event, "from": move.from_state, "to": move.state, "seq": move.seq}
        body["session"] = move.session
        if move.normalised is not None:  # an event with field updates says which values were normalised
            body["normalised"] = move.normalised
        return Response(body)


class SessionActionApi(SessionApi):
    class InputSerializer(StrictSerializer):
        type = StrictCharField(max_length=64)
        params = serializers.DictField(required=False, default=dict)

    def post(self, request: Request, session_id: str) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        shown: SessionState = session_action(
            agent=request_agent(request), session_id=session_id, action=serializer.validated_data["type"]
        )
        return Response({"allowed": True, "allowed_actions": shown["allowed_actions"], "session": shown})


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
            idempotency_key=idempotency_key(request),
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
            idempotency_key=idempotency_key(request),
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
        reported = session_report_anomaly(
            agent=agent,
            session_id=session_id,
            code=data["code"],
            detail=data["detail"],
            raw=data["raw"],
            idempotency_key=idempotency_key(request),
        )
        session = session_get_for_agent(agent=agent, session_id=session_id)
        body = session_output(session, full=True)
        body["handed_off"] = reported.handed_off  # whether this report handed it off
        return Response(body, status=status.HTTP_201_CREATED)
