"""The check's and the result's lean reading of a valid body (``agents.tools.apis.plain_check_body``,
``plain_result_body``) against the serializers it stands in for: whatever body the lean reading takes, the
serializer takes too and makes the same data of it. Anything else goes to the serializer, so every
refusal's answer is the serializer's (tests/api/corpus pins them)."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from agents.tools.apis import ToolCallCreateApi, ToolCallResultApi, plain_check_body, plain_result_body

# Strings near the edges the serializers care about: blank, space to trim, NUL, a lone surrogate, long,
# characters an operation id or error code may not hold.
_edgy_text = st.one_of(
    st.sampled_from(
        ["", " ", "a", " a", "a ", "\ta", "a\x00", "\ud800", "x" * 64, "x" * 65, "a b", "a/b", "c1", "E_1"]
    ),
    st.text(min_size=0, max_size=70),
    st.text(alphabet="ab_.:- \t\x00", min_size=0, max_size=66),
)
_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _edgy_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
_value = st.one_of(_edgy_text, _json, st.integers(-5, 86_400_005), st.sampled_from([0, 3, 86_400_000, True, False]))


def _body(keys: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(st.sampled_from([*keys, "other"]), _value, max_size=len(keys) + 1)


def _error_body() -> st.SearchStrategy[dict[str, Any]]:
    error = st.dictionaries(st.sampled_from(["code", "message", "other"]), _edgy_text | _json, max_size=3)
    return st.fixed_dictionaries({"error": error | _json}, optional={"duration_ms": _value, "output": _json})


def _agrees(lean: dict[str, Any] | None, serializer: Any) -> None:
    if lean is None:
        return  # the serializer answers, valid or not
    assert serializer.is_valid(), (lean, serializer.errors)
    assert _plain(serializer.validated_data) == _plain(lean)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(
        _body(["tool", "input", "expected_state", "operation_id"]),
        st.fixed_dictionaries(
            {"tool": _edgy_text, "input": _json, "expected_state": _edgy_text}, optional={"operation_id": _edgy_text}
        ),
        _json,
    )
)
@example({"tool": "verify_phone", "input": {"phone": "13800138000"}, "expected_state": "init", "operation_id": "c1"})
@example({"tool": "verify_phone", "input": {}, "expected_state": "init"})
def test_a_check_body_the_lean_reading_takes_is_the_serializers(body):
    _agrees(plain_check_body(body), ToolCallCreateApi.InputSerializer(data=body))


@settings(max_examples=400, deadline=None)
@given(st.one_of(_body(["output", "error", "duration_ms"]), _error_body(), _json))
@example({"output": {"verified": True}, "duration_ms": 3})
@example({"output": None, "duration_ms": 0})
@example({"error": {"code": "RATE_LIMIT_EXCEEDED"}, "duration_ms": 86_400_000})
@example({"error": {"code": "E", "message": ""}, "duration_ms": 1})
def test_a_result_body_the_lean_reading_takes_is_the_serializers(body):
    _agrees(plain_result_body(body), ToolCallResultApi.InputSerializer(data=body))


def test_the_lean_reading_takes_the_common_bodies():
    """Not a proof of speed (bench/ measures it): that the bodies runtimes send do take the short way."""
    check = {"tool": "verify_phone", "input": {"phone": "1"}, "expected_state": "init", "operation_id": "op-1"}
    assert plain_check_body(check) == check
    assert plain_result_body({"output": {"ok": 1}, "duration_ms": 3}) == {"output": {"ok": 1}, "duration_ms": 3}
    assert plain_result_body({"error": {"code": "E1", "message": "m"}, "duration_ms": 3}) is not None
    # Each refusal the serializer owns: trimming, blank, unknown field, both or neither of output and error.
    assert plain_check_body({**check, "tool": " verify_phone"}) is None
    assert plain_check_body({**check, "operation_id": "a b"}) is None
    assert plain_check_body({**check, "extra": 1}) is None
    assert plain_result_body({"output": 1, "error": {"code": "E"}, "duration_ms": 3}) is None
    assert plain_result_body({"duration_ms": 3}) is None
    assert plain_result_body({"output": 1, "duration_ms": True}) is None
