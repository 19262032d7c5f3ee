"""The client and docs/openapi.yaml cannot drift apart: every path and method has a client method (on
both clients), each method's answer type is the schema the operation documents, each TypedDict has
the schema's properties (required ones required), and every documented error code has its class."""

from __future__ import annotations

import typing
from typing import Any, get_args, get_origin, get_type_hints

import arbiter_client as ac
import pytest
import yaml
from arbiter_client import _calls, types
from arbiter_client._transport import Call

from tests.support import ROOT

DOCUMENT = yaml.safe_load((ROOT / "docs" / "openapi.yaml").read_text(encoding="utf-8"))
SCHEMAS = DOCUMENT["components"]["schemas"]
OPERATIONS = [
    (path, method, op)
    for path, ops in DOCUMENT["paths"].items()
    for method, op in ops.items()
    if method != "parameters"
]


def _answer_schemas(op: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The operation's success answers that are JSON objects, by the name the client gives them."""
    found = {}
    for code, response in op["responses"].items():
        schema = response.get("content", {}).get("application/json", {}).get("schema")
        if code.startswith("2") and schema is not None:
            if "$ref" in schema:
                name = schema["$ref"].rsplit("/", 1)[1]
                found[name] = SCHEMAS[name]
            else:
                found[op["operationId"][0].upper() + op["operationId"][1:]] = schema
    return found


def _answer_types(build: Any) -> list[Any]:
    hint = get_type_hints(build, vars(types) | vars(_calls))["return"]
    assert get_origin(hint) is Call, build
    (answer,) = get_args(hint)
    return list(get_args(answer)) if get_origin(answer) in (typing.Union, __import__("types").UnionType) else [answer]


def test_every_path_and_method_of_the_document_has_a_client_method() -> None:
    ids = {op["operationId"] for _, _, op in OPERATIONS}
    assert set(_calls.OPERATIONS) == ids
    for operation_id, name in _calls.OPERATIONS.items():
        build = getattr(_calls, name)
        assert getattr(ac.Arbiter, name).__wrapped__ is build, operation_id
        assert getattr(ac.AsyncArbiter, name).__wrapped__ is build, operation_id


@pytest.mark.parametrize(("path", "method", "op"), OPERATIONS, ids=[f"{m} {p}" for p, m, _ in OPERATIONS])
def test_each_call_sends_its_method_to_its_path_and_answers_its_schema(path: str, method: str, op: Any) -> None:
    build = getattr(_calls, _calls.OPERATIONS[op["operationId"]])
    params = [p for p in get_type_hints(build) if p != "return"]
    required = [
        name
        for name, parameter in __import__("inspect").signature(build).parameters.items()
        if parameter.default is parameter.empty
    ]
    sample = {name: (1 if name in ("request_id", "session_pk") else "x") for name in required}
    call = build(**sample)
    assert call.method == method.upper()
    assert call.path == path.format(**{k: sample.get(k, sample.get(k)) for k in sample}), params
    schemas = _answer_schemas(op)
    answers = _answer_types(build)
    if not schemas:  # text answers (the CSV report, the document itself)
        assert answers == [str]
        return
    assert sorted(a.__name__ for a in answers) == sorted(schemas)


def _typed_dicts() -> dict[str, Any]:
    return {name: value for name, value in vars(types).items() if typing.is_typeddict(value)}


def _schema_of(name: str) -> dict[str, Any]:
    if name in SCHEMAS:
        return SCHEMAS[name]
    for _, _, op in OPERATIONS:
        found = _answer_schemas(op)
        if name in found:
            return found[name]
    raise AssertionError(f"{name} is in no schema")


@pytest.mark.parametrize("name", sorted(_typed_dicts()))
def test_each_answer_type_has_the_properties_of_its_schema(name: str) -> None:
    typed = _typed_dicts()[name]
    schema = _schema_of(name)
    assert set(typed.__annotations__) == set(schema["properties"]), name
    assert typed.__required_keys__ == frozenset(schema.get("required", [])), name


def test_every_documented_error_code_has_its_class_and_no_class_an_undocumented_code() -> None:
    codes = set(SCHEMAS["ProblemCode"]["enum"])
    assert set(ac.ERRORS_BY_CODE) == codes
    for code, cls in ac.ERRORS_BY_CODE.items():
        error = ac.error_from_problem(400, {"code": code, "detail": "d"})
        assert type(error) is cls and error.code == code
