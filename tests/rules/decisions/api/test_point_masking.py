"""A point's own mask settings reach the decision log, through the API, and other points keep theirs."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from rules.config.yaml_import import config_import
from rules.models import DecisionRecord
from tests.support import DEMO, agent_api, decide

pytestmark = pytest.mark.django_db

POINT = "  - key: intent_routing\n    name: Intent routing\n"
OWN_SETTINGS = (
    "    mask_skip: [email]\n    mask_patterns:\n      order_no: 'ORD-\\d{6}'\n      wechat: 'wxid_[a-z0-9]+'\n"
)
TEXT = "邮箱 a.b@example.com 订单 ORD-123456 微信 wxid_abc123 手机 138 0013 8000"


@pytest.fixture
def client(db) -> APIClient:
    demo = DEMO.read_text(encoding="utf-8")
    assert POINT in demo
    config_import(text=demo.replace(POINT, POINT + OWN_SETTINGS), source="t", actor=None, reason="mask settings")
    return agent_api("bot")


def test_a_point_s_own_skip_and_patterns_decide_what_is_masked_in_the_log(client):
    candidate = {"decision": "general_query", "confidence": 0.9}
    made = decide(client, {"point": "intent_routing", "input": TEXT, "candidate": candidate})
    assert made.status_code == 201, made.content
    record = DecisionRecord.objects.get(pk=made.json()["id"])
    # email is skipped for this point; its own patterns mask under their names; phone stays on.
    assert record.input == "邮箱 a.b@example.com 订单 [order_no] 微信 [wechat] 手机 [phone]"
    assert record.masked == {"order_no": 1, "wechat": 1, "phone": 1}
    logged = client.get(f"/api/v1/decisions/{record.pk}").json()
    assert (logged["input"], logged["masked"]) == (record.input, record.masked)


def test_a_point_without_own_settings_masks_only_the_built_ins(client):
    made = decide(client, {"point": "refund_approval", "input": TEXT, "facts": {"refund_amount": 1}})
    record = DecisionRecord.objects.get(pk=made.json()["id"])
    assert record.input == "邮箱 [email] 订单 ORD-123456 微信 wxid_abc123 手机 [phone]"
    assert record.masked == {"email": 1, "phone": 1}


def test_the_raw_output_and_the_reason_are_masked_with_the_point_s_settings(client):
    raw = '{"decision": "general_query", "confidence": 0.9, "reason": "ORD-654321 from a.b@example.com"}'
    made = decide(client, {"point": "intent_routing", "input": "有几种颜色", "candidate_raw": raw})
    record = DecisionRecord.objects.get(pk=made.json()["id"])
    assert "ORD-654321" not in record.candidate_raw and "a.b@example.com" in record.candidate_raw
    assert "ORD-654321" not in record.candidate_reason
