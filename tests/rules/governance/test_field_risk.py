"""Which changes to a machine's field declarations need approval (rules/governance/field_risk.py)."""

from __future__ import annotations

import copy

import pytest

from rules.config.document.diff import config_diff
from rules.governance.risk import change_risks, record_approval_note
from tests.support.documents import DEMO_DOCUMENT as DEMO
from tests.support.documents import machine, rule

PHONE = {"name": "phone", "type": "string", "pattern": r"^1[3-9]\d{9}$", "pii": True}
ORDER = {"name": "order_id", "type": "string", "required_in": ["refund_review"]}
NOTE = {"name": "note", "type": "string", "required_in": ["received"]}


def _base():
    """The demo with fields on after_sales, and the refund rule made a risk rule: it now routes to refund_review."""
    doc = copy.deepcopy(DEMO)
    rule(doc, "intent_routing", "refund_trigger")["category"] = "risk"
    machine(doc, "after_sales")["fields"] = [copy.deepcopy(f) for f in (PHONE, ORDER, NOTE)]
    return doc


def _risks(edit):
    before = _base()
    after = copy.deepcopy(before)
    edit(machine(after, "after_sales")["fields"])
    return [r.why for r in change_risks(before, after, config_diff(before, after))]


def _field(fields, name):
    return next(f for f in fields if f["name"] == name)


def test_turning_pii_off_unmasks_the_log_so_is_high_risk():
    assert _risks(lambda fields: _field(fields, "phone").pop("pii")) == [
        "stops masking the personal data of the field phone"
    ]


def test_removing_a_pii_field_is_high_risk_too():
    assert _risks(lambda fields: fields.remove(_field(fields, "phone"))) == [
        "stops masking the personal data of the field phone"
    ]


def test_turning_pii_on_or_declaring_a_new_field_is_not():
    assert _risks(lambda fields: _field(fields, "note").update(pii=True)) == []
    assert _risks(lambda fields: fields.append({"name": "email", "type": "string", "pii": True})) == []


@pytest.mark.parametrize(
    ("edit", "names"),
    [
        (lambda fields: _field(fields, "phone").update(required_in=["refund_review"]), "phone"),
        (lambda fields: _field(fields, "order_id").update(pattern=r"\d{12}"), "order_id"),
        (lambda fields: _field(fields, "order_id").pop("required_in"), "order_id"),
        (lambda fields: fields.remove(_field(fields, "order_id")), "order_id"),
        (
            lambda fields: fields.append({"name": "amount", "type": "number", "required_in": ["refund_review"]}),
            "amount",
        ),
    ],
)
def test_a_field_required_where_a_high_risk_rule_sends_sessions_is_governed_as_the_rule(edit, names):
    assert _risks(edit) == [
        f"changes the field {names}, required to enter refund_review, where a high-risk rule sends sessions"
    ]


def test_fields_required_where_no_high_risk_rule_routes_change_freely():
    assert _risks(lambda fields: _field(fields, "note").update(required_in=["received", "intent_clarify"])) == []
    assert _risks(lambda fields: _field(fields, "note").update(pattern=".+")) == []
    assert _risks(lambda fields: _field(fields, "order_id").update(description="the order")) == []


def test_a_rule_that_is_off_routes_nowhere():
    before = _base()
    rule(before, "intent_routing", "refund_trigger")["mode"] = "off"
    after = copy.deepcopy(before)
    _field(machine(after, "after_sales")["fields"], "order_id")["pattern"] = r"\d{12}"
    assert change_risks(before, after, config_diff(before, after)) == []


def test_the_admin_note_names_pii_and_required_fields():
    note = record_approval_note("machine", "after_sales", DEMO)
    assert "pii" in note and "a field required in a state a high-risk rule sends sessions to" in note


# --- fields that rules read (session_field) -----------------------------------------------------------


def _reading(category: str, *, priority: int = 5, mode: str = "enforce"):
    """The base with a rule of intent_routing reading the session's note field."""
    doc = _base()
    reader = {
        "key": "repeat_caller",
        "priority": priority,
        "category": category,
        "match": "all",
        "mode": mode,
        "outcome": "intent_clarify",  # not a handoff: only the category or the place makes it matter
        "conditions": [{"session_field": "note", "pattern": "again"}],
    }
    doc["points"][0]["rules"].append(reader)
    return doc


def _field_risks(before, edit):
    after = copy.deepcopy(before)
    edit(machine(after, "after_sales")["fields"])
    return [r.why for r in change_risks(before, after, config_diff(before, after))]


READ = (
    "changes the field note, which the rule intent_routing.repeat_caller reads (a high-risk rule, or one deciding "
    "before one)"
)


@pytest.mark.parametrize(
    "edit",
    [
        lambda fields: _field(fields, "note").update(type="array"),
        lambda fields: _field(fields, "note").update(normalize=["trim"]),
        lambda fields: fields.remove(_field(fields, "note")),
    ],
)
def test_a_field_a_high_risk_rule_reads_is_governed_as_the_rule(edit):
    assert _field_risks(_reading("compliance"), edit) == [READ]
    # A business rule that decides before a high-risk one guards it: the same.
    assert _field_risks(_reading("business", priority=5), edit) == [READ]


def test_a_field_only_low_risk_rules_read_changes_freely():
    # After every high-risk rule (priority 99): it decides nothing a high-risk rule would have.
    assert (
        _field_risks(_reading("quality", priority=99), lambda fields: _field(fields, "note").update(type="array")) == []
    )
    # Off: it reads nothing.
    assert _field_risks(_reading("risk", mode="off"), lambda fields: _field(fields, "note").update(type="array")) == []
    # Its wording, or turning pii on, changes no decision.
    assert _field_risks(_reading("risk"), lambda fields: _field(fields, "note").update(description="x", pii=True)) == []


def test_changing_a_high_risk_rule_that_reads_the_session_is_high_risk():
    before = _reading("risk")
    after = copy.deepcopy(before)
    rule(after, "intent_routing", "repeat_caller")["conditions"] = [{"session_keyword_seen": "high_risk", "last": 3}]
    assert [r.why for r in change_risks(before, after, config_diff(before, after))] == [
        "changes conditions of a high-risk rule (a risk rule)"
    ]
