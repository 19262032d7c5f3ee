"""The decision API: one view per operation; each validates, calls a service and shapes the answer."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from decision_service.api.auth import AgentTokenAuthentication, request_agent
from decision_service.api.fields import (
    StrictBooleanField,
    StrictCharField,
    StrictFloatField,
    StrictIntegerField,
    StrictSerializer,
)
from decision_service.api.parsers import LimitedJSONParser
from rules.engine import Candidate, CompiledPoint, Decision
from rules.errors import InvalidRequest
from rules.models import DecisionRecord
from rules.selectors import points_for_agent
from rules.services.decisions import (
    DecideRequest,
    DecideResult,
    Replay,
    decision_get_for_agent,
    decision_make,
    decision_replay,
    point_for_agent,
)


class AgentApi(APIView):
    authentication_classes = [AgentTokenAuthentication]
    permission_classes = [IsAuthenticated]
    parser_classes = [LimitedJSONParser]


def _rule_out(rule: Any) -> dict[str, Any] | None:
    return None if rule is None else {"key": rule.key, "priority": rule.priority, "category": rule.category}


def _matched_out(decision: Decision) -> list[dict[str, Any]]:
    return [
        {"key": m.key, "priority": m.priority, "outcome": m.outcome, "shadow": m.shadow} for m in decision.matched_rules
    ]


def _candidate_out(candidate: Candidate | None) -> dict[str, Any] | None:
    if candidate is None:
        return None
    return {"decision": candidate.decision, "confidence": candidate.confidence, "reason": candidate.reason}


def decision_output(result: DecideResult) -> dict[str, Any]:
    # Built as a plain dict rather than through a serializer: this is the hot path of every agent turn.
    d = result.decision
    record = result.record
    return {
        "id": str(record.id) if record else None,
        "point": d.point,
        "decision": d.decision,
        "ruled_by": d.ruled_by,
        "rule": _rule_out(d.rule),
        "matched_rules": _matched_out(d),
        "candidate": _candidate_out(d.candidate),
        "overridden": d.overridden,
        "needs_candidate": d.needs_candidate,
        "reason": d.reason,
        "revision": result.revision,
        "evaluated_us": result.evaluated_us,
        "created_at": record.created_at.isoformat().replace("+00:00", "Z") if record else None,
    }


def decision_session_output(*, agent: Any, session_id: str) -> dict[str, Any]:
    """Feedback hints for the agent's next prompt, when the decision belongs to a known session."""
    from agents.models import Session
    from agents.services.sessions import session_feedback

    session = Session.objects.filter(agent=agent, key=session_id).first()
    return {"feedback": session_feedback(session) if session else []}


class DecisionCreateApi(AgentApi):
    class CandidateSerializer(StrictSerializer):
        decision = StrictCharField(max_length=128)
        confidence = StrictFloatField(min_value=0.0, max_value=1.0)
        reason = StrictCharField(max_length=2000, required=False, allow_blank=True, default="")

    class TokensSerializer(StrictSerializer):
        prompt = StrictIntegerField(min_value=0, max_value=10_000_000, required=False, allow_null=True)
        completion = StrictIntegerField(min_value=0, max_value=10_000_000, required=False, allow_null=True)

    class InputSerializer(StrictSerializer):
        point = StrictCharField(max_length=64)
        session_id = StrictCharField(max_length=128, required=False, allow_blank=True, default="")
        input = StrictCharField(max_length=10_000, required=False, allow_blank=True, default="", trim_whitespace=False)
        candidate = serializers.JSONField(required=False, allow_null=True)
        candidate_raw = StrictCharField(
            max_length=20_000, required=False, allow_null=True, allow_blank=True, trim_whitespace=False
        )
        facts = serializers.DictField(required=False, default=dict)
        tokens = serializers.JSONField(required=False, allow_null=True)
        apply = StrictBooleanField(required=False, default=False)

        def validate_candidate(self, value: Any) -> Any:
            if value is None:
                return None
            nested = DecisionCreateApi.CandidateSerializer(data=value)
            nested.is_valid(raise_exception=True)
            return nested.validated_data

        def validate_tokens(self, value: Any) -> Any:
            if value is None:
                return None
            nested = DecisionCreateApi.TokensSerializer(data=value)
            nested.is_valid(raise_exception=True)
            return nested.validated_data

        def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
            if attrs.get("candidate") is not None and attrs.get("candidate_raw") is not None:
                raise serializers.ValidationError(
                    {"candidate_raw": ["Send either candidate or candidate_raw, not both."]}
                )
            return attrs

    def post(self, request: Request) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        key = request.headers.get("Idempotency-Key", "").strip()
        if len(key) > 200:
            raise InvalidRequest(
                "The Idempotency-Key header is too long.", errors={"Idempotency-Key": ["At most 200 characters."]}
            )
        candidate = data.get("candidate")
        tokens = data.get("tokens") or {}
        result = decision_make(
            agent=request_agent(request),
            request=DecideRequest(
                point=data["point"],
                input=data["input"],
                session_id=data["session_id"],
                candidate=Candidate(candidate["decision"], candidate["confidence"], candidate["reason"])
                if candidate
                else None,
                candidate_raw=data.get("candidate_raw"),
                facts=data["facts"],
                tokens_prompt=tokens.get("prompt"),
                tokens_completion=tokens.get("completion"),
            ),
            idempotency_key=key,
            apply=data["apply"],
        )
        code = status.HTTP_200_OK if result.record is None else status.HTTP_201_CREATED
        body = decision_output(result)
        if data["session_id"]:
            body.update(decision_session_output(agent=request_agent(request), session_id=data["session_id"]))
        if data["apply"]:
            body["session"] = result.session_move
        return Response(body, status=code)


def record_output(record: DecisionRecord) -> dict[str, Any]:
    return {
        "id": str(record.id),
        "created_at": record.created_at.isoformat().replace("+00:00", "Z"),
        "point": record.point,
        "agent": record.agent_name,
        "session_id": record.session_id,
        "input": record.input,
        "masked": record.masked,
        "facts": record.facts,
        "candidate": None
        if not record.candidate_decision
        else {
            "decision": record.candidate_decision,
            "confidence": record.candidate_confidence,
            "reason": record.candidate_reason,
        },
        "candidate_raw": record.candidate_raw or None,
        "candidate_invalid": record.candidate_invalid,
        "decision": record.decision,
        "ruled_by": record.ruled_by,
        "rule": None
        if not record.rule_key
        else {"key": record.rule_key, "priority": record.rule_priority, "category": record.rule_category},
        "matched_rules": record.matched_rules,
        "keyword_hits": record.keyword_hits,
        "overridden": record.overridden,
        "reason": record.reason,
        "revision": record.revision,
        "engine": record.engine,
        "evaluated_us": record.evaluated_us,
        "tokens": {"prompt": record.tokens_prompt, "completion": record.tokens_completion},
    }


class DecisionDetailApi(AgentApi):
    def get(self, request: Request, decision_id: str) -> Response:
        record = decision_get_for_agent(agent=request_agent(request), decision_id=decision_id)
        return Response(record_output(record))


def _replay_side(decision: Decision | None, revision: int) -> dict[str, Any] | None:
    if decision is None:
        return None
    return {
        "decision": decision.decision,
        "ruled_by": decision.ruled_by,
        "rule": _rule_out(decision.rule),
        "matched_rules": _matched_out(decision),
        "overridden": decision.overridden,
        "reason": decision.reason,
        "revision": revision,
    }


def replay_output(replay: Replay) -> dict[str, Any]:
    return {
        "recorded": _replay_side(replay.recorded, replay.revision),
        "replayed": _replay_side(replay.replayed, replay.revision),
        "identical": replay.identical,
        "revision": replay.revision,
        "current": _replay_side(replay.current, replay.current_revision),
    }


class DecisionReplayApi(AgentApi):
    def get(self, request: Request, decision_id: str) -> Response:
        record = decision_get_for_agent(agent=request_agent(request), decision_id=decision_id)
        return Response(replay_output(decision_replay(record=record)))


def point_output(point: CompiledPoint, revision: int) -> dict[str, Any]:
    spec = point.spec
    floor = spec.confidence_floor()
    return {
        "key": spec.key,
        "name": spec.name,
        "description": spec.description,
        "outcomes": sorted(spec.outcomes),
        "candidate_whitelist": sorted(spec.whitelist),
        "default_outcome": spec.default_outcome,
        "when_no_candidate": "ask" if spec.ask_when_no_candidate else "default",
        "facts": dict(spec.facts),
        "min_confidence": floor[1] if floor else None,
        "min_confidence_threshold": floor[0] if floor else None,
        "revision": revision,
    }


class PointListApi(AgentApi):
    def get(self, request: Request) -> Response:
        points, revision = points_for_agent(agent=request_agent(request))
        return Response({"revision": revision, "points": [point_output(p, revision) for p in points]})


class PointDetailApi(AgentApi):
    def get(self, request: Request, point_key: str) -> Response:
        point, revision = point_for_agent(agent=request_agent(request), point_key=point_key)
        return Response(point_output(point, revision))
