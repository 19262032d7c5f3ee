"""The decide request's input, shared by the agent API (``POST /api/v1/decisions``) and the staff rule
simulator (``POST /api/v1/simulations``), so that both accept and refuse exactly the same candidate."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from decision_service.api.fields import StrictCharField, StrictFloatField, StrictIntegerField, StrictSerializer
from rules.engine import Candidate


class CandidateSerializer(StrictSerializer):
    """The model's proposal. Its outcome is ``decision``; ``intent`` is taken for it too, as the raw-output
    parser takes it (``rules.engine.candidate.parse_candidate``): models often say ``intent``."""

    decision = StrictCharField(max_length=128, required=False)
    intent = StrictCharField(max_length=128, required=False)
    confidence = StrictFloatField(min_value=0.0, max_value=1.0)
    reason = StrictCharField(max_length=2000, required=False, allow_blank=True, default="")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        decision, intent = attrs.pop("decision", None), attrs.pop("intent", None)
        if decision is None and intent is None:
            raise serializers.ValidationError({"decision": ["This field is required (or its other name, intent)."]})
        if decision is not None and intent is not None and decision != intent:
            raise serializers.ValidationError(
                {"intent": ["intent is another name for decision: send one, or the same value in both."]}
            )
        return {**attrs, "decision": decision if decision is not None else intent}


class LlmSerializer(StrictSerializer):
    """Which model and prompt made the candidate, and how long the model took (``llm`` of a decide)."""

    model = StrictCharField(max_length=128, required=False, allow_blank=True, default="")
    prompt_version = StrictCharField(max_length=64, required=False, allow_blank=True, default="")
    latency_ms = StrictIntegerField(min_value=0, max_value=86_400_000, required=False, allow_null=True, default=None)


class DecideInputSerializer(StrictSerializer):
    """What a decision is made from: the point, the user's input, the facts and the model's proposal."""

    point = StrictCharField(max_length=64)
    input = StrictCharField(max_length=10_000, required=False, allow_blank=True, default="", trim_whitespace=False)
    candidate = serializers.JSONField(required=False, allow_null=True)
    candidate_raw = StrictCharField(
        max_length=20_000, required=False, allow_null=True, allow_blank=True, trim_whitespace=False
    )
    facts = serializers.DictField(required=False, default=dict)

    def validate_candidate(self, value: Any) -> Any:
        if value is None:
            return None
        nested = CandidateSerializer(data=value)
        nested.is_valid(raise_exception=True)
        return nested.validated_data

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("candidate") is not None and attrs.get("candidate_raw") is not None:
            raise serializers.ValidationError({"candidate_raw": ["Send either candidate or candidate_raw, not both."]})
        return attrs


def candidate_from(data: dict[str, Any]) -> Candidate | None:
    """The engine's candidate from validated input, or None when the caller sent none."""
    candidate = data.get("candidate")
    if not candidate:
        return None
    return Candidate(candidate["decision"], candidate["confidence"], candidate["reason"])
