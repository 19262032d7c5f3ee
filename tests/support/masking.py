"""Fact masking's test configuration: the demo with two more points, ``contact_check`` (its own pattern,
a fact path, rules that read a masked fact) and ``raw_facts`` (opted out), and facts full of personal data."""

from __future__ import annotations

from rest_framework.test import APIClient

from rules.config.yaml_import import config_import
from tests.support import DEMO_TEXT, agent_api

POINTS = """  - key: contact_check
    facts:
      address: string
      note: string
      contacts: string_list
      member_no: integer
      vip: boolean
    outcomes: [keep, escalate]
    default_outcome: keep
    when_no_candidate: default
    mask_patterns:
      member_card: 'MC-\\d{6}'
    mask_fact_paths: [address]
    rules:
      - key: shanghai_address
        priority: 10
        category: business
        outcome: escalate
        conditions:
          - fact_matches: {fact: address, pattern: '上海'}
      - key: known_member
        priority: 20
        category: business
        outcome: escalate
        conditions:
          - fact: member_no
            op: '>'
            value: 0
  - key: raw_facts
    facts:
      note: string
    outcomes: [keep]
    default_outcome: keep
    when_no_candidate: default
    mask_facts: false

"""
ADDRESS = "上海市浦东新区世纪大道 100 号"
PHONE = "138 0013 8000"
ID_CARD = "11010119900307123X"
EMAIL = "first.last@example.com"
MEMBER_CARD = "MC-123456"
MEMBER_NO = 13900139000  # a phone number sent as a whole number
RAW_VALUES = [ADDRESS, "世纪大道", PHONE, "13800138000", ID_CARD, EMAIL, MEMBER_CARD, str(MEMBER_NO)]
FACTS = {
    "address": ADDRESS,
    "note": f"call {PHONE} or mail {EMAIL}, card {MEMBER_CARD}",
    "contacts": ["none", f"+86 {PHONE}", ID_CARD],
    "member_no": MEMBER_NO,
    "vip": True,
}


def masking_agent_api() -> APIClient:
    """Load the demo with the two masking points (the first configuration) and return an agent's client."""
    text = DEMO_TEXT.replace("\nmachines:", "\n" + POINTS + "machines:", 1)
    assert POINTS in text
    config_import(text=text, source="t", actor=None, reason="fact masking points")
    return agent_api("bot", ["contact_check", "raw_facts", "refund_approval"])
