"""The staff API: change requests, for teams that keep their rules in git and for scripts; the rule
simulator.

Staff API tokens only (``StaffApi``); what a user may do (propose, approve, withdraw) is decided by the
change request services, whatever the caller. Reads ask for the permission their admin page asks for:
the requests for ``rules.view_changerequest``, the simulator for ``rules.view_rule``.
"""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from decision_service.api.base import StaffApi, require_permission, route
from decision_service.api.fields import StrictBooleanField, StrictCharField, StrictIntegerField, StrictSerializer
from rules.config.document.merge import config_merge_from_yaml
from rules.config.document.validate import config_from_yaml
from rules.config.selectors import config_document
from rules.decisions.compute import DecideRequest
from rules.decisions.presenters import change_request_body, simulation_body
from rules.engine.conditions.session_keyword_seen import MAX_LAST
from rules.governance.change_requests import (
    change_request_approve,
    change_request_propose,
    change_request_reject,
    change_request_schedule,
    change_request_withdraw,
)
from rules.governance.simulate import decision_simulate
from rules.models import ChangeRequest, ChangeRequestState
from rules.serializers import DecideInputSerializer, candidate_from

READ_CHANGE_REQUESTS = "rules.view_changerequest"
SIMULATE = "rules.view_rule"  # as the admin's simulator page (rules.governance.admin.simulator.SIMULATOR_PERMISSION)


class _DecisionSerializer(StrictSerializer):
    reason = StrictCharField(max_length=2000, required=False, allow_blank=True, default="")


def _request(pk: int) -> ChangeRequest:
    return get_object_or_404(ChangeRequest, pk=pk)


class ChangeRequestListApi(StaffApi):
    query_parameters = ("state",)

    def get(self, request: Request) -> Response:
        require_permission(request, READ_CHANGE_REQUESTS)
        state = request.query_params.get("state")
        requests = ChangeRequest.objects.order_by("-created_at", "-pk")
        if state is not None:  # given, even empty, it must be a state (as the spec says)
            if state not in ChangeRequestState.values:
                raise serializers.ValidationError({"state": [f"One of: {', '.join(ChangeRequestState.values)}."]})
            requests = requests.filter(state=state)
        return Response({"change_requests": [change_request_body(r) for r in requests[:200]]})


# A JSON encoder that escapes non-ASCII text writes an astral character in 12 bytes, so this many
# characters always fit in ARBITER_MAX_STAFF_REQUEST_BYTES (4 MiB) and a longer document is answered
# with a 400 that names the field, never a 413 (tests/api/test_body_limit.py checks the sum).
CONFIG_MAX_CHARS = 300_000


class ChangeRequestCreateApi(StaffApi):
    class InputSerializer(StrictSerializer):
        reason = StrictCharField(max_length=500)
        config = StrictCharField(max_length=CONFIG_MAX_CHARS, trim_whitespace=False)
        apply_at = serializers.DateTimeField(required=False, allow_null=True)
        # ``config`` holds only the records it touches, merged onto the live configuration (merge.py).
        partial = StrictBooleanField(required=False, default=False)

    def post(self, request: Request) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        if data["partial"]:
            document = config_merge_from_yaml(data["config"], config_document())
        else:
            document = config_from_yaml(data["config"])
        created = change_request_propose(document=document, actor=request.user, reason=data["reason"])
        if data.get("apply_at") and created.state == ChangeRequestState.PENDING:
            created = change_request_schedule(request=created, actor=request.user, apply_at=data["apply_at"])
        return Response(change_request_body(created), status=status.HTTP_201_CREATED)


class ChangeRequestDetailApi(StaffApi):
    def get(self, request: Request, request_id: int) -> Response:
        require_permission(request, READ_CHANGE_REQUESTS)
        return Response(change_request_body(_request(request_id)))


class ChangeRequestApproveApi(StaffApi):
    class InputSerializer(_DecisionSerializer):
        # The request's digest as the approver read it (GET …/<id>): an approval is of that change only.
        digest = StrictCharField(max_length=2000)
        override_reason = StrictCharField(max_length=2000, required=False, allow_blank=True, default="")

    def post(self, request: Request, request_id: int) -> Response:
        data = _valid(self.InputSerializer, request)
        done = change_request_approve(
            request=_request(request_id),
            actor=request.user,
            digest=data["digest"],
            reason=data["reason"],
            override_reason=data["override_reason"],
        )
        return Response(change_request_body(done))


class ChangeRequestRejectApi(StaffApi):
    def post(self, request: Request, request_id: int) -> Response:
        data = _valid(_DecisionSerializer, request)
        done = change_request_reject(request=_request(request_id), actor=request.user, reason=data["reason"])
        return Response(change_request_body(done))


class ChangeRequestWithdrawApi(StaffApi):
    def post(self, request: Request, request_id: int) -> Response:
        data = _valid(_DecisionSerializer, request)
        done = change_request_withdraw(request=_request(request_id), actor=request.user, reason=data["reason"])
        return Response(change_request_body(done))


def _valid(serializer_class: type[serializers.Serializer], request: Request) -> Any:
    # No body at all is the same as {} (then a required field is named as missing).
    empty = request.META.get("CONTENT_LENGTH") in (None, "", "0") and "HTTP_TRANSFER_ENCODING" not in request.META
    serializer = serializer_class(data={} if empty else request.data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


# GET lists and POST proposes on the same path: one class per operation, joined for the route.
ChangeRequestsApi = route(ChangeRequestListApi, ChangeRequestCreateApi)


class SimulationCreateApi(StaffApi):
    """What ``POST /api/v1/decisions`` would answer, under the current revision, a past one or an open
    change request's proposal; nothing is written."""

    class InputSerializer(DecideInputSerializer):
        session_state = StrictCharField(max_length=64, required=False, allow_blank=True, default="")
        # What rules read of the session beyond its state: its fields, and the keyword lists each of its
        # latest logged decisions hit, newest first (rules.governance.simulate).
        session_fields = serializers.DictField(required=False, default=dict)
        session_history = serializers.ListField(
            # 20 lists a decision: more than any point scans, and the longest request stays within the
            # staff body limit (tests/api/test_body_limit.py).
            child=serializers.ListField(child=StrictCharField(max_length=64), max_length=20),
            required=False,
            default=list,
            max_length=MAX_LAST,
        )
        revision = StrictIntegerField(min_value=1, max_value=2_147_483_647, required=False, allow_null=True)
        change_request = StrictIntegerField(min_value=1, max_value=2_147_483_647, required=False, allow_null=True)

        def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
            attrs = super().validate(attrs)
            if attrs.get("revision") is not None and attrs.get("change_request") is not None:
                raise serializers.ValidationError(
                    {"change_request": ["Send either revision or change_request, not both."]}
                )
            return attrs

    def post(self, request: Request) -> Response:
        require_permission(request, SIMULATE)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        simulation = decision_simulate(
            request=DecideRequest(
                point=data["point"],
                input=data["input"],
                candidate=candidate_from(data),
                candidate_raw=data.get("candidate_raw"),
                facts=data["facts"],
            ),
            session_state=data["session_state"],
            revision=data.get("revision"),
            change_request=data.get("change_request"),
            session_fields=data["session_fields"],
            session_history=data["session_history"],
        )
        return Response(simulation_body(simulation))
