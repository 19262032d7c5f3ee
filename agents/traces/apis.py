"""``POST /api/v1/sessions/<id>/trace``: the runtime reports its model calls and its own tool calls.

One event (an object with ``type``) or a batch (``{"turn_id": …, "events": […]}``). The shape is checked
here (unknown fields, types, sizes); what each type of event may carry is checked by
``agents.traces.attributes`` through the service, which answers with every problem at once.
"""

from __future__ import annotations

from django.core.validators import RegexValidator
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agents.sessions.apis import SessionApi
from agents.traces.attributes import DURATION_MAX_MS, ID, ID_MESSAGE, TYPES
from agents.traces.services import trace_record
from decision_service.api.base import request_agent
from decision_service.api.fields import StrictCharField, StrictIntegerField, StrictSerializer
from decision_service.errors import InvalidRequest

EVENTS_MAX = 100
_ID = RegexValidator(rf"^{ID.pattern}\Z", ID_MESSAGE)


class TraceEventSerializer(StrictSerializer):
    """The common shape; ``event_problems`` (in the service) judges the fields of each type."""

    type = serializers.ChoiceField(choices=list(TYPES))
    event_id = StrictCharField(max_length=64, required=False, validators=[_ID])
    turn_id = StrictCharField(max_length=64, required=False, validators=[_ID])
    status = serializers.ChoiceField(choices=["ok", "error"], required=False)
    point = StrictCharField(max_length=64, required=False)
    prompt_version = StrictCharField(max_length=64, required=False)
    latency_ms = StrictIntegerField(min_value=0, max_value=DURATION_MAX_MS, required=False)
    tool = StrictCharField(max_length=64, required=False)
    duration_ms = StrictIntegerField(min_value=0, max_value=DURATION_MAX_MS, required=False)
    error_code = StrictCharField(max_length=64, required=False, validators=[_ID])
    message = StrictCharField(max_length=2000, required=False)
    attributes = serializers.DictField(required=False)


class TraceBatchSerializer(StrictSerializer):
    turn_id = StrictCharField(max_length=64, required=False, validators=[_ID])
    events = TraceEventSerializer(many=True, allow_empty=False, max_length=EVENTS_MAX)


class SessionTraceApi(SessionApi):
    def post(self, request: Request, session_id: str) -> Response:
        body = request.data
        if not isinstance(body, dict):
            raise InvalidRequest(
                "Send one event or a batch as a JSON object.", errors={"non_field_errors": ["An object is required."]}
            )
        if "events" in body:
            batch = TraceBatchSerializer(data=body)
            batch.is_valid(raise_exception=True)
            events, turn_id = batch.validated_data["events"], batch.validated_data.get("turn_id", "")
        else:
            single = TraceEventSerializer(data=body)
            single.is_valid(raise_exception=True)
            events, turn_id = [single.validated_data], ""
        recorded = trace_record(
            agent=request_agent(request), session_id=session_id, events=[dict(e) for e in events], turn_id=turn_id
        )
        return Response(
            {
                "received": recorded.received,
                "kept": recorded.kept,
                "dropped": recorded.dropped,
                "duplicates": recorded.duplicates,
                "failed_turns": recorded.failed_turns,
                "sample_ratio": recorded.sample_ratio,
            }
        )
