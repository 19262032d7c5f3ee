"""The agent API of governed tool calls: the check before a call, the result after it, and the action
check that judges an action's params by its tool's contract. One view per operation."""

from __future__ import annotations

import re
from typing import Any, TypeGuard

from django.core.validators import RegexValidator
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from agents.sessions.apis import SessionActionApi, SessionApi
from agents.sessions.presenters import SessionState
from agents.tools.errors import UnknownOperation
from agents.tools.results import tool_call_result
from agents.tools.services import Started, action_check, tool_call_check
from decision_service.api.base import AgentApi, request_agent
from decision_service.api.fields import StrictCharField, StrictIntegerField, StrictSerializer
from rules.decisions.presenters import timestamp

OPERATION_ID = r"^[A-Za-z0-9_.:-]{1,64}\Z"
OPERATION_ID_MESSAGE = "1 to 64 letters, digits, _ . : or -."
ERROR_CODE = r"^[A-Za-z0-9_.:-]{1,64}\Z"  # as a contract's error codes (rules.config.tool_definitions)
DURATION_MAX_MS = 86_400_000  # a day

# The lean reading of a valid body. These two operations are sent around every tool call, and DRF's
# serializer was about a sixth of a check's server time (copying its fields for each request, then each
# field's validators; bench/RESULTS.md "One statement each"). A body that is plainly valid — every value
# one the serializer takes unchanged — is read here; anything else goes through the serializer, whose
# answer (and problem+json) is the only one an invalid body ever gets. tests/agents/tools/test_lean_bodies.py
# checks that the serializer takes every body the lean reading takes, and makes the same data of it.
_OPERATION_ID = re.compile(OPERATION_ID)
_ERROR_CODE = re.compile(ERROR_CODE)
_SURROGATE = re.compile("[\ud800-\udfff]")
_CHECK_FIELDS = frozenset({"tool", "input", "expected_state", "operation_id"})
_RESULT_FIELDS = frozenset({"output", "error", "duration_ms"})


def _unchanged_text(value: Any, max_length: int, *, blank: bool = False) -> TypeGuard[str]:
    """A string ``StrictCharField`` takes as it is: not blank (unless ``blank``), nothing for it to trim, no
    NUL or surrogate character, within ``max_length``."""
    return (
        isinstance(value, str)
        and (blank or value != "")
        and len(value) <= max_length
        and value == value.strip()
        and "\x00" not in value
        and _SURROGATE.search(value) is None
    )


def plain_check_body(data: Any) -> dict[str, Any] | None:
    """``ToolCallCreateApi.InputSerializer``'s validated data for a plainly valid body; None otherwise."""
    if not isinstance(data, dict) or not data.keys() <= _CHECK_FIELDS:
        return None
    if not (
        _unchanged_text(data.get("tool"), 64)
        and isinstance(data.get("input"), dict)
        and _unchanged_text(data.get("expected_state"), 64)
    ):
        return None
    if "operation_id" in data:
        operation_id = data["operation_id"]
        if not (_unchanged_text(operation_id, 64) and _OPERATION_ID.search(operation_id)):
            return None
    return data


def plain_result_body(data: Any) -> dict[str, Any] | None:
    """``ToolCallResultApi.InputSerializer``'s validated data for a plainly valid body; None otherwise."""
    if not isinstance(data, dict) or not data.keys() <= _RESULT_FIELDS or ("output" in data) == ("error" in data):
        return None
    duration = data.get("duration_ms")
    if isinstance(duration, bool) or not isinstance(duration, int) or not 0 <= duration <= DURATION_MAX_MS:
        return None
    if "output" in data:  # any JSON the parser took (it refuses what JSONField would)
        return {"output": data["output"], "duration_ms": duration}
    error = data["error"]
    if not isinstance(error, dict) or not error.keys() <= {"code", "message"}:
        return None
    code, message = error.get("code"), error.get("message", "")
    if not (_unchanged_text(code, 64) and _ERROR_CODE.search(code) and _unchanged_text(message, 2000, blank=True)):
        return None
    return {"error": {"code": code, "message": message}, "duration_ms": duration}


def started_output(started: Started) -> dict[str, Any]:
    return {
        "operation_id": started.operation_id,
        "attempt": started.attempt,
        "deadline": timestamp(started.deadline),
        "timeout_ms": started.timeout_ms,
        "session": started.session,
    }


class ToolCallCreateApi(SessionApi):
    class InputSerializer(StrictSerializer):
        tool = StrictCharField(max_length=64)
        input = serializers.DictField(allow_empty=True)
        expected_state = StrictCharField(max_length=64)
        operation_id = StrictCharField(
            max_length=64, required=False, validators=[RegexValidator(OPERATION_ID, OPERATION_ID_MESSAGE)]
        )

    def post(self, request: Request, session_id: str) -> Response:
        data = plain_check_body(request.data)
        if data is None:
            serializer = self.InputSerializer(data=request.data)
            serializer.is_valid(raise_exception=True)
            data = serializer.validated_data
        started = tool_call_check(
            agent=request_agent(request),
            session_id=session_id,
            tool=data["tool"],
            input=data["input"],
            expected_state=data["expected_state"],
            operation_id=data.get("operation_id"),
        )
        return Response(started_output(started), status=status.HTTP_201_CREATED)


class ToolErrorSerializer(StrictSerializer):
    code = StrictCharField(max_length=64, validators=[RegexValidator(ERROR_CODE, OPERATION_ID_MESSAGE)])
    message = StrictCharField(max_length=2000, required=False, allow_blank=True, default="")


class ToolCallResultApi(AgentApi):
    class InputSerializer(StrictSerializer):
        output = serializers.JSONField(required=False, allow_null=True)
        error = ToolErrorSerializer(required=False)
        duration_ms = StrictIntegerField(min_value=0, max_value=DURATION_MAX_MS)

        def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
            if ("output" in attrs) == ("error" in attrs):
                message = "Exactly one of output and error."
                raise serializers.ValidationError({"output": [message], "error": [message]})
            return attrs

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)  # authentication first: a stranger learns nothing
        operation_id = kwargs.get("operation_id", "")
        if "\x00" in operation_id:  # no operation has one, and PostgreSQL cannot compare text holding one
            raise UnknownOperation(f"This agent has no operation {operation_id!r}.")

    def post(self, request: Request, operation_id: str) -> Response:
        data = plain_result_body(request.data)
        if data is None:
            serializer = self.InputSerializer(data=request.data)
            serializer.is_valid(raise_exception=True)
            data = serializer.validated_data
        answer = tool_call_result(
            agent=request_agent(request),
            operation_id=operation_id,
            output=data.get("output"),
            error=data.get("error"),
            duration_ms=data["duration_ms"],
        )
        return Response(answer)


class ToolActionApi(SessionActionApi):
    """``/actions`` as before (the state's whitelist), and an action that names a tool with a contract has
    its ``params`` checked against the tool's input schema."""

    def post(self, request: Request, session_id: str) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        shown: SessionState = action_check(
            agent=request_agent(request),
            session_id=session_id,
            action=data["type"],
            # Sent or not: asking whether an action is allowed here, without its params, is no invalid input.
            params=data["params"] if "params" in request.data else None,
        )
        return Response({"allowed": True, "allowed_actions": shown["allowed_actions"], "session": shown})
