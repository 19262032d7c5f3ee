"""Issue 21's governance: the new evasion options and ``unless`` phrases on a list or rule that is high-risk
wait for a second person, through the services (the shell's and the admin's path)."""

from __future__ import annotations

import copy

import pytest

from rules.config import records
from rules.engine.evasion import EVASION_OPTIONS
from rules.errors import ApprovalRequired
from rules.models import Condition, KeywordList


@pytest.mark.parametrize("option", EVASION_OPTIONS)
def test_turning_off_an_evasion_option_of_the_high_risk_list_waits_for_approval(demo, editor, option):
    keyword_list = KeywordList.objects.get(key="high_risk")
    assert getattr(keyword_list, option) is True  # the demo's list has every option on
    setattr(keyword_list, option, False)
    with pytest.raises(ApprovalRequired):
        records.keyword_list_save(keyword_list=keyword_list, actor=editor, reason=f"turn off {option}")
    assert getattr(KeywordList.objects.get(key="high_risk"), option) is True


def test_leaving_the_segmented_mode_of_the_high_risk_list_waits_for_approval(demo, editor):
    keyword_list = KeywordList.objects.get(key="high_risk")
    keyword_list.match_mode = "substring"
    with pytest.raises(ApprovalRequired):
        records.keyword_list_save(keyword_list=keyword_list, actor=editor, reason="back to substrings")


@pytest.mark.parametrize("unless", [[], ["不是要投诉", "投诉"], ["不是要投诉", "不是投诉", "不想投诉", "不打算投诉"]])
def test_changing_the_unless_phrases_of_a_high_risk_rule_waits_for_approval(demo, editor, unless):
    condition = Condition.objects.get(rule__key="high_risk_keyword", kind="input_contains")
    before = list(condition.unless)
    assert "不是要投诉" in before
    condition.unless = unless
    with pytest.raises(ApprovalRequired):
        records.condition_save(condition=condition, actor=editor, reason="other weak signals")
    assert Condition.objects.get(pk=condition.pk).unless == before


def test_turning_an_option_off_on_a_list_no_high_risk_rule_uses_applies_at_once(demo, editor):
    # Not refund_triggers: its rule decides before a risk rule, so its options are governed too (rules.governance.risk).
    records.keyword_list_save(keyword_list=KeywordList(key="thanks", name="Thanks"), actor=editor, reason="new")
    keyword_list = KeywordList.objects.get(key="thanks")
    assert keyword_list.fold_variants is True  # a new list's default
    keyword_list.fold_variants = False
    records.keyword_list_save(keyword_list=keyword_list, actor=editor, reason="thanks as written only")
    assert KeywordList.objects.get(key="thanks").fold_variants is False


@pytest.mark.parametrize("option", EVASION_OPTIONS)
def test_the_impact_preview_replays_a_point_whose_list_changes_an_option(option):
    """A changed option changes what the point decides, so its traffic is replayed (not skipped as unchanged)."""

    from rules.config.document.validate import config_from_yaml
    from rules.governance.impact import impact_points_affected
    from tests.support import DEMO

    live = config_from_yaml(DEMO.read_text(encoding="utf-8"))
    proposed = copy.deepcopy(live)
    listed = next(kl for kl in proposed["keyword_lists"] if kl["key"] == "high_risk")
    listed[option] = not listed[option]
    assert impact_points_affected(live, proposed) == ["intent_routing"]


def test_turning_unless_negated_off_on_the_high_risk_rule_waits_for_approval(demo, editor):
    condition = Condition.objects.get(rule__key="high_risk_keyword", kind="input_contains")
    assert condition.unless_negated is True  # the demo reads negated hits as weak signals
    condition.unless_negated = False
    with pytest.raises(ApprovalRequired):
        records.condition_save(condition=condition, actor=editor, reason="every negated hit to a person")
    assert Condition.objects.get(pk=condition.pk).unless_negated is True
