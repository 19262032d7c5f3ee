"""The spec as schemathesis loads it, and the checks every test of the running server applies."""

from __future__ import annotations

import json
from typing import Any

import schemathesis
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ignored_auth,
    missing_required_header,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)

from tests.support import SPEC


def _schema(mode: str) -> Any:
    # schemathesis' defaults: NUL characters are generated, and negative data counts as refused only
    # with its default statuses. Whatever it finds is fixed in the API or the spec, never allowed here.
    config = schemathesis.Config.from_dict(
        {
            "seed": 20260101,  # reproducible runs; change it locally to explore further
            "generation": {"mode": mode},
            "output": {"truncation": {"max-payload-size": 2000}},
        }
    )
    return schemathesis.openapi.from_path(SPEC, config=config)


schema = _schema("all")
positive_schema = _schema("positive")

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
    negative_data_rejection,
    missing_required_header,
    unsupported_method,
    ignored_auth,
]

RESPONSE_CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
]


def problem_json_for_errors(ctx: Any, response: Any, case: Any) -> None:
    """Every refusal is application/problem+json with its status and a code."""
    if response.status_code < 400:
        return
    content_type = (response.headers.get("content-type") or [""])[0]
    assert content_type.split(";")[0].strip() == "application/problem+json", (
        f"{response.status_code} answered as {content_type!r}"
    )
    body = json.loads(response.content)
    assert body["status"] == response.status_code, body
    assert body["code"], body
