"""Facts masked for the decision log, table-driven: one row per shape personal data takes in facts.

Each row gives the facts as sent, the facts as they must be logged and the record of what was masked
(locations and kinds, never values). Fact masking reuses the input's patterns, so a row for every kind
and every way of writing a phone number catches a pattern that stops applying to facts; the rows for
paths, own patterns and the opt-out catch a point's settings being ignored.
"""

from __future__ import annotations

import json

import pytest

from rules.engine.masking import WHOLE, Masker, masked_fact_names

DEFAULT = Masker()

ROWS = [
    # (id, masker, facts as sent, facts as logged, record)
    (
        "mobile number in a string",
        DEFAULT,
        {"customer_phone": "13800138000"},
        {"customer_phone": "[phone]"},
        {"patterns": {"customer_phone": ["phone"]}},
    ),
    (
        "spaced and dashed numbers",
        DEFAULT,
        {"a": "138 0013 8000", "b": "138-0013-8000"},
        {"a": "[phone]", "b": "[phone]"},
        {"patterns": {"a": ["phone"], "b": ["phone"]}},
    ),
    (
        "+86 and 0086",
        DEFAULT,
        {"a": "+86 138 0013 8000", "b": "008613800138000"},
        {"a": "[phone]", "b": "[phone]"},
        {"patterns": {"a": ["phone"], "b": ["phone"]}},
    ),
    (
        "international numbers",
        DEFAULT,
        {"a": "+44-20-7946-0958", "b": "ring +1 555 123 4567"},
        {"a": "[phone]", "b": "ring [phone]"},
        {"patterns": {"a": ["phone"], "b": ["phone"]}},
    ),
    (
        "a phone number sent as a whole number",
        DEFAULT,
        {"member_no": 13800138000, "order_total": 800},
        {"member_no": "[phone]", "order_total": 800},
        {"patterns": {"member_no": ["phone"]}},
    ),
    (
        "an ID card number, as text and as a number",
        DEFAULT,
        {"a": "身份证 11010119900307123X", "b": 110101199003071234},
        {"a": "身份证 [id_card]", "b": "[id_card]"},
        {"patterns": {"a": ["id_card"], "b": ["id_card"]}},
    ),
    (
        "e-mail",
        DEFAULT,
        {"note": "write to first.last+tag@mail.example.co.uk"},
        {"note": "write to [email]"},
        {"patterns": {"note": ["email"]}},
    ),
    (
        "several kinds in one value",
        DEFAULT,
        {"note": "13800138000 or a@b.cn"},
        {"note": "[phone] or [email]"},
        {"patterns": {"note": ["email", "phone"]}},
    ),
    (
        "items of a list, by index",
        DEFAULT,
        {"contacts": ["none", "a@b.cn", "13800138000"]},
        {"contacts": ["none", "[email]", "[phone]"]},
        {"patterns": {"contacts.1": ["email"], "contacts.2": ["phone"]}},
    ),
    (
        "nested mappings and lists at any depth",
        DEFAULT,
        {"customer": {"name": "王", "phones": ["13800138000", {"work": "+86 139 0013 9000"}]}},
        {"customer": {"name": "王", "phones": ["[phone]", {"work": "[phone]"}]}},
        {"patterns": {"customer.phones.0": ["phone"], "customer.phones.1.work": ["phone"]}},
    ),
    (
        "booleans, floats, short numbers and plain text are kept",
        DEFAULT,
        {"vip": True, "amount": 1380.5, "count": 3, "note": "order 20260101", "empty": ""},
        {"vip": True, "amount": 1380.5, "count": 3, "note": "order 20260101", "empty": ""},
        {},
    ),
    (
        "a fact path masks the value whole, whatever it holds",
        Masker(fact_paths=["address"]),
        {"address": "上海市浦东新区世纪大道 100 号", "note": "fine"},
        {"address": WHOLE, "note": "fine"},
        {"paths": ["address"]},
    ),
    (
        "a fact path masks a list or a number whole",
        Masker(fact_paths=["tags", "order_total"]),
        {"tags": ["a", "b"], "order_total": 800},
        {"tags": WHOLE, "order_total": WHOLE},
        {"paths": ["order_total", "tags"]},
    ),
    (
        "a dotted path names a nested value, in every item of a list",
        Masker(fact_paths=["orders.address"]),
        {"orders": [{"address": "北京路 1 号", "id": 1}, {"address": "南京路 2 号", "id": 2}]},
        {"orders": [{"address": WHOLE, "id": 1}, {"address": WHOLE, "id": 2}]},
        {"paths": ["orders.0.address", "orders.1.address"]},
    ),
    (
        "a point's own pattern applies to facts under its name",
        Masker(extra={"member_card": r"MC-\d{6}"}),
        {"note": "card MC-123456, phone 13800138000"},
        {"note": "card [member_card], phone [phone]"},
        {"patterns": {"note": ["member_card", "phone"]}},
    ),
    (
        "a skipped built-in is not applied to facts",
        Masker(skip=["email"]),
        {"note": "a@b.cn 13800138000"},
        {"note": "a@b.cn [phone]"},
        {"patterns": {"note": ["phone"]}},
    ),
    (
        "opted out: facts are logged as sent, paths included",
        Masker(facts=False, fact_paths=["address"]),
        {"address": "上海", "phone": "13800138000"},
        {"address": "上海", "phone": "13800138000"},
        {},
    ),
]


@pytest.mark.parametrize(("masker", "facts", "logged", "record"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_facts_are_masked_at_any_depth_and_the_record_says_where_and_what(masker, facts, logged, record):
    result = masker.mask_facts(facts)
    assert result.facts == logged
    assert result.record == record


@pytest.mark.parametrize(("masker", "facts", "logged", "record"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_no_masked_value_survives_in_the_facts_or_the_record(masker, facts, logged, record):
    result = masker.mask_facts(facts)
    stored = json.dumps([result.facts, result.record], ensure_ascii=False)
    for location in [*record.get("paths", []), *record.get("patterns", {})]:
        value = facts
        for step in location.split("."):
            value = value[int(step)] if isinstance(value, list) else value[step]
        for leaf in _leaves(value):
            assert leaf not in stored, f"{leaf!r} from {location} is still stored"


def _leaves(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    elif not isinstance(value, bool):
        text = str(value)
        if len(text) > 3:  # "王" or "1" occur in placeholders and indexes by chance
            yield text


def test_the_masked_fact_names_are_the_top_level_facts_touched():
    record = {"paths": ["orders.0.address"], "patterns": {"note": ["phone"], "contacts.1": ["email"]}}
    assert masked_fact_names(record) == {"orders", "note", "contacts"}
    assert masked_fact_names({}) == frozenset()


def test_the_reason_shows_a_masked_fact_as_logged():
    facts = {"address": "上海市 1 号", "note": "call 13800138000", "amount": 800}
    masker = Masker(fact_paths=["address"])
    masked = masker.mask_facts(facts)
    reason = "r1: address '上海市 1 号' matches /上海/; note 'call 13800138000' matches /call/; amount 800 > 500"
    assert Masker.mask_fact_values(reason, facts, masked) == (
        "r1: address '[masked]' matches /上海/; note 'call [phone]' matches /call/; amount 800 > 500"
    )
