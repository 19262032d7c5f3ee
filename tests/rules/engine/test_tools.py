"""Tool contracts compiled per revision (``rules.engine.tools``): the compiled validators against
``jsonschema`` (the reference implementation of JSON Schema 2020-12) on generated inputs, and the
canonical form of a contract; no database."""

from __future__ import annotations

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rules.config.tool_definitions import canonical_tool, tool_problems
from rules.engine.model import CompileError
from rules.engine.tools import compile_tools
from tests.support.tools import PHONE

SCHEMA = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{8}$"},
        "receiver_phone": PHONE,
        "address": {"type": "object", "properties": {"city": {"type": "string", "minLength": 1}}, "required": ["city"]},
        "items": {"type": "array", "items": {"type": "integer", "minimum": 1}, "maxItems": 3},
        "tags": {"type": "array", "prefixItems": [{"type": "string"}]},
    },
    "required": ["order_id"],
    "additionalProperties": False,
}
TOOL = {"name": "update_order", "input_schema": SCHEMA, "risk": "write"}
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False) | st.text(max_size=12)
json_values = st.recursive(
    scalars | st.sampled_from(["AB12345678", "13800138000", "abc"]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=12,
)
keys = st.sampled_from(["order_id", "receiver_phone", "address", "items", "tags", "param_name"])
inputs = st.dictionaries(keys, json_values, max_size=5) | json_values


def _reference(value):
    validator = jsonschema.Draft202012Validator(SCHEMA)
    return sorted({"".join(f"/{p}" for p in e.absolute_path) for e in validator.iter_errors(value)})


@FUZZ
@given(inputs)
def test_the_compiled_validator_reports_what_the_reference_does(value):
    # Every place with a problem is named. Not how many messages each place gets: the two libraries split
    # some problems differently (two required members missing are two errors in jsonschema, one in
    # jsonschema-rs), so the places are compared, not the count of errors at each.
    compiled = compile_tools({"tools": [canonical_tool(TOOL)]})["update_order"]
    assert sorted({e.pointer for e in compiled.input_errors(value)}) == _reference(value)


def test_a_schema_that_does_not_compile_is_a_compile_error():
    broken = {**TOOL, "input_schema": {"type": "object", "properties": {"p": {"type": "string", "pattern": "(["}}}}
    with pytest.raises(CompileError, match="tool update_order input_schema"):
        compile_tools({"tools": [canonical_tool(broken)]})


backoffs = st.fixed_dictionaries(
    {},
    optional={
        "kind": st.sampled_from(["fixed", "exponential"]),
        "base_ms": st.integers(1, 1000),
        "jitter": st.sampled_from([0, 0.25, 1, 1.0]),
    },
)
error_codes = st.lists(
    st.fixed_dictionaries(
        {"code": st.from_regex(r"[A-Z_]{1,12}", fullmatch=True), "retryable": st.booleans()},
        optional={"description": st.text(max_size=10), "backoff": backoffs},
    ),
    max_size=4,
    unique_by=lambda e: e["code"],
)


@FUZZ
@given(error_codes, st.sampled_from(["read_only", "write", "destructive"]))
def test_the_canonical_form_is_valid_and_a_fixed_point(codes, risk):
    for code in codes:
        if "backoff" in code:
            code["backoff"]["cap_ms"] = 5_000  # at least any base_ms drawn
    tool = {**TOOL, "risk": risk, "error_codes": codes}
    assert tool_problems(tool, machines={}) == {}
    canonical = canonical_tool(tool)
    assert tool_problems(canonical, machines={}) == {}
    assert canonical_tool(canonical) == canonical
    assert [e["code"] for e in canonical.get("error_codes", [])] == sorted(e["code"] for e in codes)
