"""Keyword-evasion matching is part of the revision: old decisions replay as they were decided.

A revision written before the matching learnt to see through evasion (its keyword lists have neither
option) keeps matching as it did; a list's options are read from the revision a decision was made under,
so turning one off later changes today's answer, never the replay.
"""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from agents.runtimes.services import agent_create
from rules.config.records import keyword_list_save
from rules.config.runtime import engines
from rules.config.selectors import config_document
from rules.config.yaml_import import config_import
from rules.decisions.replay import decision_replay
from rules.engine.evasion import EVASION_OPTIONS
from rules.models import ConfigRevision, DecisionRecord, KeywordList
from tests.support import DEMO, approved, decide

EVADED = "我要投\u200b诉"  # a zero-width space inside 投诉
CANDIDATE = {"decision": "general_query", "confidence": 0.9}


@pytest.fixture
def client(db):
    engines.clear()
    config_import(text=DEMO.read_text(encoding="utf-8"), source="t", actor=None, reason="evasion replay test")
    _, token = agent_create(name="bot", point_keys=["intent_routing"], actor=None, reason="t")
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    yield c
    engines.clear()


def _decided(client, text: str) -> DecisionRecord:
    response = decide(client, {"point": "intent_routing", "input": text, "candidate": CANDIDATE})
    assert response.status_code == 201, response.content
    return DecisionRecord.objects.get(pk=response.json()["id"])


def _new_revision(*, fold: bool = True, pinyin: bool = True, reason: str) -> None:
    high_risk = KeywordList.objects.get(key="high_risk")
    high_risk.fold_traditional = fold
    high_risk.match_pinyin = pinyin
    high_risk.description = f"{high_risk.description} ({reason})"
    approved(lambda: keyword_list_save(keyword_list=high_risk, actor=None, reason=reason))


@pytest.mark.applies_config_at_once(
    reason="stands for an old revision by rewriting its snapshot, which a change request would be judged against"
)
def test_a_decision_made_before_evasion_matching_replays_as_it_was_decided(client):
    latest = ConfigRevision.objects.order_by("-number").first()
    assert latest is not None
    # Stand for a revision written before rules 0011: its keyword lists hold none of the options (neither
    # rules 0011's nor rules 0019's).
    old = dict(latest.snapshot)
    options = ("fold_traditional", "ignore_cjk_gaps", *EVASION_OPTIONS)
    old["keyword_lists"] = [{k: v for k, v in kl.items() if k not in options} for kl in old["keyword_lists"]]
    ConfigRevision.objects.filter(pk=latest.pk).update(snapshot=old)
    engines.clear()

    before = _decided(client, EVADED)
    assert (before.decision, before.ruled_by) == ("general_query", "llm_candidate")  # the old matching missed it

    _new_revision(reason="any change writes a revision with the options")
    after = _decided(client, EVADED)
    assert (after.decision, after.ruled_by, after.rule_key) == ("human_handoff", "hard_rule", "high_risk_keyword")
    assert after.revision > before.revision

    replay = decision_replay(record=before)
    assert replay.identical
    assert replay.replayed.decision == "general_query"
    assert replay.current is not None and replay.current.decision == "human_handoff"  # today's answer differs
    assert decision_replay(record=after).identical


def test_turning_an_option_off_later_does_not_change_the_replay(client):
    folded = _decided(client, "我要投訴")  # Traditional spelling
    assert (folded.decision, folded.rule_key) == ("human_handoff", "high_risk_keyword")
    assert folded.keyword_hits == {"high_risk": ["投诉"]}

    # Pinyin off too: it would still read 訴 as su, so 投訴 as 投诉.
    _new_revision(fold=False, pinyin=False, reason="fold off")
    unfolded = _decided(client, "我要投訴")
    assert (unfolded.decision, unfolded.ruled_by) == ("general_query", "llm_candidate")

    replay = decision_replay(record=folded)
    assert replay.identical and replay.replayed.decision == "human_handoff"
    assert replay.current is not None and replay.current.decision == "general_query"
    api = client.get(f"/api/v1/decisions/{folded.pk}/replay").json()
    assert api["identical"] is True, api


def test_the_revision_records_each_lists_options(client):
    # Pinyin off too: it would still read 訴 as su, so 投訴 as 投诉.
    _new_revision(fold=False, pinyin=False, reason="fold off")
    latest = ConfigRevision.objects.order_by("-number").first()
    assert latest is not None
    lists = {kl["key"]: kl for kl in latest.snapshot["keyword_lists"]}
    assert (lists["high_risk"]["fold_traditional"], lists["high_risk"]["ignore_cjk_gaps"]) == (False, True)
    assert config_document()["keyword_lists"] == latest.snapshot["keyword_lists"]
