"""A fact_matches rule decides over real HTTP against a running server, configured from YAML."""

from __future__ import annotations

import pytest

from agents.runtimes.services import agent_create
from rules.config.yaml_import import config_import
from rules.models import DecisionRecord
from tests.support.http import call

CONFIG = r"""
version: 1
thresholds: []
keyword_lists: []
points:
  - key: order_lookup
    facts: {order_no: string}
    outcomes: [lookup, ask_again]
    default_outcome: ask_again
    when_no_candidate: default
    rules:
      - key: express_order
        priority: 10
        category: business
        outcome: lookup
        conditions:
          - fact_matches: {fact: order_no, pattern: '^E\d{10}$'}
machines: []
"""


@pytest.fixture
def server(live_server, transactional_db):
    config_import(text=CONFIG, source="fact_matches.yaml", actor=None, reason="e2e")
    _, token = agent_create(name="e2e_orders", point_keys=["order_lookup"], actor=None, reason="e2e")
    return live_server.url, token


@pytest.mark.parametrize(
    ("facts", "decision", "rule"),
    [
        ({"order_no": "E0123456789"}, "lookup", "express_order"),
        ({"order_no": "e0123456789"}, "lookup", "express_order"),  # case is ignored
        ({"order_no": "E01234"}, "ask_again", None),
        ({}, "ask_again", None),  # a missing fact never matches
    ],
)
def test_a_text_fact_matching_a_pattern_decides_over_http(server, facts, decision, rule):
    status, content_type, answer = call(server, "POST", "/api/v1/decisions", {"point": "order_lookup", "facts": facts})
    assert (status, content_type) == (201, "application/json")
    assert (answer["decision"], (answer["rule"] or {}).get("key")) == (decision, rule)
    if rule:
        assert answer["reason"] == f"express_order: order_no {facts['order_no']!r} matches /^E\\d{{10}}$/"
    assert DecisionRecord.objects.get(pk=answer["id"]).decision == decision


def test_a_fact_that_is_not_text_is_refused_as_the_declared_type_says(server):
    status, content_type, problem = call(
        server, "POST", "/api/v1/decisions", {"point": "order_lookup", "facts": {"order_no": 123}}
    )
    assert (status, content_type, problem["code"]) == (422, "application/problem+json", "invalid_request")
    assert "order_no" in problem["errors"]["facts"]
