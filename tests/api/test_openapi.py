"""``docs/openapi.yaml`` is valid, served, and describes every route and field the code has."""

from __future__ import annotations

import ast
import re
from typing import Any

import pytest
import yaml
from django.core.validators import RegexValidator
from django.urls import URLPattern, URLResolver, get_resolver
from hypothesis import given, settings
from hypothesis import strategies as st
from openapi_spec_validator import validate
from rest_framework import serializers

from agents import errors as agent_errors
from agents import urls as agents_urls
from agents.queue import apis as queue_apis
from agents.sessions import apis as session_apis
from agents.tools import apis as tool_apis
from agents.tools import approval_apis, breaker_apis
from agents.tools import errors as tool_errors
from agents.traces import apis as trace_apis
from decision_service.api import middleware
from decision_service.api.errors import _DRF_CODES
from decision_service.errors import DatabaseUnavailable
from rules import urls as rules_urls
from rules.errors import (
    ChangeRequestChanged,
    ChangeRequestSuperseded,
    ConfigError,
    DomainError,
    DuplicateChangeRequest,
    EngineUnavailable,
    IdempotencyConflict,
    InvalidRequest,
    NoChanges,
    NotFound,
    NotPending,
    OverrideReasonRequired,
    PermissionDenied,
    PointNotAllowed,
    SelfApprovalForbidden,
    UnknownPoint,
)
from rules.governance import apis as staff_apis
from rules.serializers import CandidateSerializer
from tests.support import SPEC

HTTP_METHODS = ("get", "post", "put", "patch", "delete")


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    return yaml.safe_load(SPEC.read_text(encoding="utf-8"))


def _resolve(spec: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        *_, kind, name = node["$ref"].split("/")
        node = spec["components"][kind][name]
    return node


def test_the_file_is_valid_openapi(spec):
    validate(spec)


def test_the_document_is_served_without_a_token(client):
    response = client.get("/api/v1/openapi.yaml", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/yaml; charset=utf-8"
    assert response.content == SPEC.read_bytes()
    refused = client.post("/api/v1/openapi.yaml")
    assert refused.status_code == 405 and refused["Content-Type"] == "application/problem+json"
    assert refused.json()["code"] == "method_not_allowed"


def _api_routes() -> dict[str, set[str]]:
    """``/api/v1/...`` path (OpenAPI style) → the HTTP methods its view implements."""
    routes: dict[str, set[str]] = {}

    def walk(patterns: list[Any], prefix: str) -> None:
        for p in patterns:
            route = prefix + str(p.pattern)
            if isinstance(p, URLResolver):
                walk(p.url_patterns, route)
            elif isinstance(p, URLPattern) and route.startswith("api/") and p.name != "api-unknown":
                view = p.callback.view_class
                path = "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)
                routes[path] = {m for m in HTTP_METHODS if hasattr(view, m)}

    walk(get_resolver().url_patterns, "")
    return routes


def test_every_api_route_is_described_with_exactly_its_methods(spec):
    routes = _api_routes()
    # rules/urls.py and agents/urls.py are mounted under /api/v1/: all their routes are among those found.
    mounted = len(rules_urls.urlpatterns) + len(agents_urls.urlpatterns)
    assert len([r for r in routes if r != "/api/v1/openapi.yaml"]) == mounted
    assert set(spec["paths"]) == set(routes)
    for path, methods in routes.items():
        assert set(spec["paths"][path]) == methods, path
        for method in methods:
            parameters = [_resolve(spec, p) for p in spec["paths"][path][method].get("parameters", [])]
            assert set(re.findall(r"{(\w+)}", path)) == {p["name"] for p in parameters if p["in"] == "path"}, path


@pytest.mark.parametrize(
    ("serializer", "name"),
    [
        (session_apis.DecisionCreateApi.InputSerializer, "DecideRequest"),
        (CandidateSerializer, "Candidate"),
        (session_apis.DecisionCreateApi.TokensSerializer, "Tokens"),
        (session_apis.SessionCreateApi.InputSerializer, "SessionCreateRequest"),
        (session_apis.SessionTransitionApi.InputSerializer, "TransitionRequest"),
        (session_apis.SessionActionApi.InputSerializer, "ActionRequest"),
        (session_apis.SessionInterruptApi.InputSerializer, "InterruptRequest"),
        (session_apis.SessionResumeApi.InputSerializer, "ResumeRequest"),
        (session_apis.SessionAnomalyCreateApi.InputSerializer, "AnomalyRequest"),
        (tool_apis.ToolCallCreateApi.InputSerializer, "ToolCallRequest"),
        (tool_apis.ToolCallResultApi.InputSerializer, "ToolResultRequest"),
        (tool_apis.ToolErrorSerializer, "ToolError"),
        (trace_apis.TraceEventSerializer, "TraceEvent"),
        (trace_apis.TraceBatchSerializer, "TraceBatch"),
        (staff_apis.ChangeRequestCreateApi.InputSerializer, "ChangeRequestCreate"),
        (staff_apis.ChangeRequestApproveApi.InputSerializer, "ChangeRequestApprove"),
        (staff_apis.SimulationCreateApi.InputSerializer, "SimulationRequest"),
        (queue_apis.QueueClaimApi.serializer_class, "QueueNote"),
        (queue_apis.QueueReturnApi.serializer_class, "QueueReturn"),
        (queue_apis.QueueResolveApi.serializer_class, "QueueResolve"),
        (breaker_apis.BreakerChangeApi.serializer_class, "ToolBreakerChangeRequest"),
        (approval_apis.QueueApproveApi.serializer_class, "ApprovalNote"),
        (approval_apis.QueueRejectApi.serializer_class, "RejectionNote"),
    ],
)
def test_request_schemas_match_the_serializers(spec, serializer, name):
    schema = spec["components"]["schemas"][name]
    fields = serializer().fields
    assert schema["additionalProperties"] is False  # StrictSerializer refuses unknown fields
    assert set(schema["properties"]) == set(fields)
    assert set(schema.get("required", [])) == {n for n, f in fields.items() if f.required}
    for field_name, field in fields.items():
        prop = _resolve(spec, schema["properties"][field_name])
        if getattr(field, "max_length", None) is not None:
            # A list's length is its number of items (JSON Schema's maxItems), a text's its characters.
            bound = "maxItems" if isinstance(field, serializers.ListField | serializers.ListSerializer) else "maxLength"
            assert prop[bound] == field.max_length, field_name
        if getattr(field, "min_value", None) is not None:
            assert (prop["minimum"], prop["maximum"]) == (field.min_value, field.max_value), field_name
        patterns = [v.regex.pattern for v in field.validators if isinstance(v, RegexValidator)]
        if patterns:  # Python's \Z is JSON Schema's $ (which, unlike Python's, never matches before a newline)
            assert [prop["pattern"]] == [p.replace("\\Z", "$") for p in patterns], field_name
        if isinstance(field, serializers.CharField) and not patterns:
            # DRF refuses NUL in every text field, and a blank one where it is not allowed: the spec
            # says so with a pattern (test_the_text_patterns_mean_what_the_server_does checks them).
            expected = spec_pattern(spec, "nonBlank" if not field.allow_blank else "nulFree")
            assert prop.get("pattern") == expected, field_name
        if isinstance(field, serializers.DictField):
            assert prop["type"] == "object", field_name
        if isinstance(field, serializers.UUIDField):
            assert prop["format"] == "uuid" and ("null" in prop["type"]) == field.allow_null, field_name


def spec_pattern(spec: dict[str, Any], which: str) -> str:
    """The spec's two text patterns, as written on DecideRequest (nulFree: session_id, nonBlank: point)."""
    props = spec["components"]["schemas"]["DecideRequest"]["properties"]
    return props["session_id" if which == "nulFree" else "point"]["pattern"]


# Every character Python's str.strip() removes, a few it keeps, NUL and "/", mixed with ordinary text.
_AWKWARD = "".join(c for c in map(chr, range(0x3001)) if c.isspace()) + "\x00/\ufeff\u200b\u180eab中"


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from(_AWKWARD) | st.characters(), max_size=12))
def test_the_text_patterns_mean_what_the_server_does(spec, text):
    # JSON Schema's $ never matches before a final newline; Python's \Z is the same.
    def matches(pattern: str) -> bool:
        return re.search(pattern.replace("$", "\\Z"), text) is not None

    assert matches(spec_pattern(spec, "nulFree")) == ("\x00" not in text)
    assert matches(spec_pattern(spec, "nonBlank")) == ("\x00" not in text and text.strip() != "")
    session_id = spec["components"]["schemas"]["SessionCreateRequest"]["properties"]["session_id"]["pattern"]
    assert matches(session_id) == ("\x00" not in text and "/" not in text and text.strip() != "")


def _domain_errors(module: object) -> set[type[DomainError]]:
    return {
        value
        for value in vars(module).values()
        if isinstance(value, type) and issubclass(value, DomainError) and value is not DomainError
    }


def test_problem_codes_are_exactly_those_the_api_can_send(spec):
    # rules/errors.py also holds errors only the configuration tools raise: the API's are listed here.
    # agents/errors.py holds the session API's refusals only: every one of them can be sent.
    domain = {UnknownPoint, PointNotAllowed, IdempotencyConflict, InvalidRequest, NotFound, EngineUnavailable}
    domain.add(DatabaseUnavailable)  # any operation that needs the database, while it cannot be reached
    # The staff API's refusals (change requests).
    domain |= {
        ConfigError,
        NoChanges,
        NotPending,
        SelfApprovalForbidden,
        ChangeRequestSuperseded,
        ChangeRequestChanged,
        DuplicateChangeRequest,
        OverrideReasonRequired,
        PermissionDenied,
    }
    domain |= _domain_errors(agent_errors)
    # agents/tools/errors.py: the tool-call API's refusals and the staff approvals' (not_awaiting_approval).
    domain |= _domain_errors(tool_errors)
    sent = {code for code, _ in _DRF_CODES.values()} | {str(e.code) for e in domain} | {"server_error"}
    sent |= set(middleware.PROBLEM_CODES)
    assert set(spec["components"]["schemas"]["ProblemCode"]["enum"]) == sent


def _extension_members_sent() -> dict[str, set[str]]:
    """Keys of every literal ``extra={…}`` a refusal is raised with in the API's code, by file."""
    root = SPEC.parents[1]
    sent: dict[str, set[str]] = {}
    for package in ("agents", "rules", "decision_service"):
        for path in (root / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.keyword) and node.arg == "extra" and isinstance(node.value, ast.Dict):
                    keys = {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
                    sent.setdefault(str(path.relative_to(root)), set()).update(keys)
    return sent


def test_every_problem_extension_member_the_code_sends_is_described(spec):
    sent = _extension_members_sent()
    assert sent, "no refusal with extension members found: has the code moved?"
    described = set(spec["components"]["schemas"]["Problem"]["properties"])
    for path, keys in sent.items():
        assert keys <= described, (path, keys - described)
