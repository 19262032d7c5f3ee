"""Facts in the decision log, through the API: a point's own fact settings, the record of what was
masked, no raw value anywhere in the stored row, and replays that say a masked fact made them inexact.

The demo configuration gains two points: ``contact_check`` (its own pattern, a fact path, rules that
read a masked fact) and ``raw_facts`` (opted out of fact masking).
"""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.utils import timezone

from rules.config.selectors import config_document
from rules.decisions.compute import DecideRequest
from rules.errors import ConfigError
from rules.governance.impact import impact_compute
from rules.governance.regressions import regression_case_pin, regressions_check
from rules.governance.simulate import regression_case_from_simulation
from rules.models import DecisionRecord, RegressionCase
from tests.support import decide
from tests.support.masking import (
    ADDRESS,
    EMAIL,
    FACTS,
    MEMBER_NO,
    PHONE,
    RAW_VALUES,
    masking_agent_api,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def client(db):
    return masking_agent_api()


def _row_json(record: DecisionRecord) -> str:
    """Every column of the stored row, read back from the database, as one JSON text."""
    row = DecisionRecord.objects.filter(pk=record.pk).values().get()
    return json.dumps(row, ensure_ascii=False, default=str)


def test_a_point_s_own_fact_settings_decide_what_is_stored(client):
    made = decide(client, {"point": "contact_check", "input": "地址改一下", "facts": FACTS})
    assert made.status_code == 201, made.content
    # The agent's answer is about its own request: the reason there may name the facts as sent.
    assert made.json()["decision"] == "escalate"
    record = DecisionRecord.objects.get(pk=made.json()["id"])
    assert record.facts == {
        "address": "[masked]",
        "note": "call [phone] or mail [email], card [member_card]",
        "contacts": ["none", "[phone]", "[id_card]"],
        "member_no": "[phone]",
        "vip": True,
    }
    assert record.masked_facts == {
        "paths": ["address"],
        "patterns": {
            "contacts.1": ["phone"],
            "contacts.2": ["id_card"],
            "member_no": ["phone"],
            "note": ["email", "member_card", "phone"],
        },
    }
    assert record.reason == "shanghai_address: address '[masked]' matches /上海/"
    stored = _row_json(record)
    for value in RAW_VALUES:
        assert value not in stored, f"{value!r} survives in the stored row"
    logged = client.get(f"/api/v1/decisions/{record.pk}").json()
    assert (logged["facts"], logged["masked_facts"]) == (record.facts, record.masked_facts)


def test_a_point_that_opts_out_stores_its_facts_as_sent(client):
    note = f"call {PHONE}"
    made = decide(client, {"point": "raw_facts", "facts": {"note": note}})
    record = DecisionRecord.objects.get(pk=made.json()["id"])
    assert (record.facts, record.masked_facts) == ({"note": note}, {})


def test_facts_without_personal_data_are_stored_as_sent(client):
    made = decide(client, {"point": "refund_approval", "facts": {"refund_amount": 800}})
    record = DecisionRecord.objects.get(pk=made.json()["id"])
    assert (record.facts, record.masked_facts) == ({"refund_amount": 800}, {})


def test_a_replay_of_a_decision_on_a_masked_fact_is_not_called_identical(client):
    made = decide(client, {"point": "contact_check", "facts": {"address": ADDRESS}})
    assert made.json()["decision"] == "escalate"
    replay = client.get(f"/api/v1/decisions/{made.json()['id']}/replay").json()
    # Without the address the rule cannot hold: the replay says why it differs, and never claims agreement.
    assert replay["identical"] is False
    assert replay["masked_facts"] == ["address"]
    assert replay["replayed"]["decision"] == "keep"


def test_a_replay_that_agrees_by_chance_is_not_called_identical_when_a_rule_read_a_masked_fact(client):
    # Neither rule held (an address outside Shanghai, no member number): the replay without the address
    # agrees, but only because the rule's fact is gone, which the replay cannot know.
    made = decide(client, {"point": "contact_check", "facts": {"address": "北京市朝阳区 1 号"}})
    assert made.json()["decision"] == "keep"
    replay = client.get(f"/api/v1/decisions/{made.json()['id']}/replay").json()
    assert replay["replayed"]["decision"] == replay["recorded"]["decision"] == "keep"
    assert (replay["identical"], replay["masked_facts"]) == (False, ["address"])


def test_a_rule_on_a_masked_number_is_named_too(client):
    made = decide(client, {"point": "contact_check", "facts": {"address": ADDRESS, "member_no": MEMBER_NO}})
    replay = client.get(f"/api/v1/decisions/{made.json()['id']}/replay").json()
    assert replay["identical"] is False
    assert replay["masked_facts"] == ["address", "member_no"]


def test_a_masked_fact_no_rule_reads_leaves_the_replay_exact(client):
    made = decide(client, {"point": "contact_check", "facts": {"note": f"call {PHONE}", "member_no": 7}})
    record = DecisionRecord.objects.get(pk=made.json()["id"])
    assert record.masked_facts == {"patterns": {"note": ["phone"]}}
    replay = client.get(f"/api/v1/decisions/{record.pk}/replay").json()
    assert (replay["identical"], replay["masked_facts"], replay["replayed"]["decision"]) == (True, [], "escalate")


def test_the_impact_preview_counts_replays_that_read_a_masked_fact(client):
    decide(client, {"point": "contact_check", "facts": {"address": ADDRESS}})
    decide(client, {"point": "contact_check", "facts": {"note": "nothing personal"}})
    live = config_document()
    proposed = json.loads(json.dumps(live))
    point = next(p for p in proposed["points"] if p["key"] == "contact_check")
    point["default_outcome"] = "escalate"
    impact = impact_compute(live_document=live, proposed_document=proposed, now=timezone.now() + dt.timedelta(1))
    assert (impact["evaluated"], impact["masked_facts"]) == (2, 1)


def test_a_regression_case_kept_from_the_simulator_holds_masked_facts(client):
    request = DecideRequest(point="contact_check", facts={"note": f"mail {EMAIL}", "member_no": 7})
    case = regression_case_from_simulation(request=request, session_state="", expected="escalate", actor=None)
    case = RegressionCase.objects.get(pk=case.pk)
    assert case.facts == {"note": "mail [email]", "member_no": 7}
    assert case.masked_facts == {"patterns": {"note": ["email"]}}
    assert regressions_check() == (1, [])


def test_a_request_whose_rules_read_a_masked_fact_cannot_be_pinned(client):
    request = DecideRequest(point="contact_check", facts={"address": ADDRESS})
    with pytest.raises(ConfigError, match="read address, masked in the log"):
        regression_case_from_simulation(request=request, session_state="", expected="escalate", actor=None)
    made = decide(client, {"point": "contact_check", "facts": {"address": ADDRESS}})
    record = DecisionRecord.objects.get(pk=made.json()["id"])
    with pytest.raises(ConfigError, match="read address, masked in the log"):
        regression_case_pin(record=record, actor=None)
    assert not RegressionCase.objects.exists()
