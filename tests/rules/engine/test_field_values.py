"""Session field values against their declarations (rules/engine/field_values.py): pure, no database."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rules.engine.field_values import (
    NORMALIZERS,
    NORMALIZERS_FOR_TYPE,
    FieldSpec,
    field_spec,
    field_specs,
    field_value_check,
    missing_fields,
    normalize_digits,
)

PHONE = field_spec(
    {"name": "phone", "type": "string", "pattern": r"^1[3-9]\d{9}$", "normalize": ["digits"], "required_in": ["work"]}
)
RETRY = field_spec({"name": "retry_count", "type": "integer", "min": 0, "max": 3, "default": 0})
ADDRESS = field_spec({"name": "address", "type": "string"})

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@st.composite
def specs(draw):
    kind = draw(st.sampled_from(sorted(NORMALIZERS_FOR_TYPE)))
    declaration = {"name": "f", "type": kind}
    allowed = sorted(NORMALIZERS_FOR_TYPE[kind])
    declaration["normalize"] = draw(st.lists(st.sampled_from(allowed), unique=True)) if allowed else []
    if kind == "enum":
        declaration["enum"] = draw(st.lists(st.text(min_size=1, max_size=4), min_size=1, max_size=4, unique=True))
    if kind == "string" and draw(st.booleans()):
        declaration["pattern"] = draw(st.sampled_from([r"\d+", r"[a-z ]*", r"^1[3-9]\d{9}$", r".*市.*"]))
    if kind in ("integer", "number") and draw(st.booleans()):
        declaration["min"], declaration["max"] = sorted(draw(st.lists(st.integers(-5, 5), min_size=2, max_size=2)))
    return field_spec(declaration)


def raw_values():
    words = st.sampled_from(["是", "对", "好", "ok", "Yes", "否", "不", "no", " 是 ", "2025年6月1日", "2025/6/1 8:30"])
    return json_values | words | st.text(alphabet="0123456789-+ ()１２３abc市北京", max_size=14)


@given(specs(), raw_values())
def test_without_normalize_the_value_accepted_is_the_value_sent(spec, raw):
    plain = FieldSpec(**{**spec.__dict__, "normalize": ()})
    check = field_value_check(plain, raw)
    assert check.normalised_by == ()
    if check.ok:
        assert check.value == raw and type(check.value) is type(raw)


@given(specs(), raw_values())
def test_a_value_accepted_is_accepted_again_as_itself_with_nothing_normalised(spec, raw):
    first = field_value_check(spec, raw)
    if first.ok:
        again = field_value_check(spec, first.value)
        assert again.ok and again.value == first.value and again.normalised_by == ()


@given(specs(), raw_values())
def test_only_the_normalisers_asked_for_are_named(spec, raw):
    check = field_value_check(spec, raw)
    assert set(check.normalised_by) <= set(spec.normalize)
    assert list(check.normalised_by) == [n for n in NORMALIZERS if n in check.normalised_by]


@given(st.text())
def test_digits_never_keeps_a_non_digit(text):
    assert all(c in "0123456789" for c in normalize_digits(text))
    check = field_value_check(field_spec({"name": "n", "type": "string", "normalize": ["digits"]}), text)
    assert check.ok and all(c in "0123456789" for c in check.value)


@given(st.text(), st.text())
def test_the_city_in_an_address_survives_when_nothing_asks_for_normalising(before, after):
    address = f"{before}北京市朝阳区{after}"
    check = field_value_check(ADDRESS, address)
    assert check.ok and check.value == address and "市" in check.value


def test_a_phone_sent_as_a_number_is_refused_not_coerced():
    check = field_value_check(PHONE, 13800138000)
    assert not check.ok and check.problem.code == "type"
    assert "in quotes" in check.problem.message


@pytest.mark.parametrize(
    ("raw", "value", "normalised_by"),
    [
        ("13800138000", "13800138000", ()),
        ("138-0013-8000", "13800138000", ("digits",)),
        ("１３８ ００１３ ８０００", "13800138000", ("digits",)),
    ],
)
def test_digits_then_the_pattern(raw, value, normalised_by):
    check = field_value_check(PHONE, raw)
    assert (check.value, check.normalised_by) == (value, normalised_by)


@pytest.mark.parametrize("raw", ["12800138000", "1380013800", "+86 138 0013 8000"])
def test_a_phone_the_pattern_refuses(raw):
    check = field_value_check(PHONE, raw)
    assert check.problem is not None and check.problem.code == "pattern"


@pytest.mark.parametrize("raw", ["138-0013-8000", "13800138000\n", " 13800138000"])
def test_without_digits_a_formatted_phone_is_refused_by_the_pattern(raw):
    # The whole value must match: re.search would let "$" match before a final newline.
    plain = field_spec({"name": "phone", "type": "string", "pattern": r"^1[3-9]\d{9}$"})
    assert field_value_check(plain, raw).problem.code == "pattern"


@pytest.mark.parametrize(("raw", "code"), [(-1, "min"), (4, "max"), (2.0, "type"), ("2", "type"), (True, "type")])
def test_retry_count_is_a_whole_number_from_0_to_3(raw, code):
    assert field_value_check(RETRY, raw).problem.code == code
    assert field_value_check(RETRY, 3).value == 3


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("是", True), ("好的", True), ("OK", True), ("yes。", True), ("否", False), ("不", False), ("No", False)],
)
def test_boolean_words(raw, expected):
    spec = field_spec({"name": "b", "type": "boolean", "normalize": ["boolean_words"]})
    check = field_value_check(spec, raw)
    assert check.value is expected and check.normalised_by == ("boolean_words",)
    assert field_value_check(field_spec({"name": "b", "type": "boolean"}), raw).problem.code == "type"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2025年6月1日", "2025-06-01"),
        ("2025/6/1", "2025-06-01"),
        ("2025.06.01 8:30", "2025-06-01T08:30:00"),
        ("2025年6月1日 8点30分", "2025-06-01T08:30:00"),
        ("2025-06-01 08:00+08:00", "2025-06-01T08:00:00+08:00"),
        ("20250601", "2025-06-01"),
    ],
)
def test_date_writes_common_formats_as_iso_8601(raw, expected):
    spec = field_spec({"name": "d", "type": "datetime", "normalize": ["date"]})
    check = field_value_check(spec, raw)
    assert check.value == expected and check.normalised_by == ("date",)


@pytest.mark.parametrize("raw", ["2025年13月1日", "tomorrow", "2025/6/31"])
def test_a_date_it_cannot_read_is_refused(raw):
    spec = field_spec({"name": "d", "type": "datetime", "normalize": ["date"]})
    assert field_value_check(spec, raw).problem.code == "type"


def test_a_datetime_without_normalize_takes_iso_8601_text_as_it_is():
    spec = field_spec({"name": "d", "type": "datetime"})
    assert field_value_check(spec, "2025-06-01 08:00").value == "2025-06-01 08:00"
    assert field_value_check(spec, "2025年6月1日").problem.code == "type"


def test_enum_and_trim():
    spec = field_spec({"name": "c", "type": "enum", "enum": ["web", "app"], "normalize": ["trim"]})
    assert field_value_check(spec, " app ").value == "app"
    assert field_value_check(spec, "APP").problem.code == "enum"


def test_arrays_and_objects_follow_their_json_schema():
    items = field_spec(
        {
            "name": "items",
            "type": "array",
            "max_length": 2,
            "schema": {"type": "array", "items": {"type": "object", "properties": {"quantity": {"type": "integer"}}}},
        }
    )
    assert field_value_check(items, [{"quantity": 2}]).ok
    problem = field_value_check(items, [{"quantity": "2"}]).problem
    assert problem.code == "schema" and "0/quantity" in problem.message
    assert field_value_check(items, [{}, {}, {}]).problem.code == "max_length"
    assert field_value_check(items, {"quantity": 2}).problem.code == "type"


def test_missing_fields_for_a_state():
    fields = field_specs(
        [
            {"name": "phone", "type": "string", "required_in": ["work"]},
            {"name": "retry_count", "type": "integer", "max": 3, "default": 0, "required_in": ["work"]},
            {"name": "note", "type": "string", "required_in": ["done"]},
        ]
    )
    assert missing_fields(fields, {}, "work") == ("phone",)
    assert missing_fields(fields, {"phone": 13800138000}, "work") == ("phone",)
    assert missing_fields(fields, {"phone": "13800138000"}, "work") == ()
    assert missing_fields(fields, {"retry_count": 9}, "work") == ("phone", "retry_count")
    assert missing_fields(fields, {}, "start") == ()
