from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError

from rules.config import records
from rules.config.revisions import config_change
from rules.models import ConfigRevision, KeywordTerm, Rule, Threshold
from tests.support import factories as f

# Each test writes records one service call at a time to check that service's own validation and history;
# the same writes held for approval are tests/rules/governance's.
pytestmark = [
    pytest.mark.django_db,
    pytest.mark.applies_config_at_once(reason="checks each record service one write at a time"),
]


def test_threshold_update_records_user_and_reason_in_history(actor):
    t = f.threshold(actor=actor)
    t.value = Decimal("0.7")
    records.threshold_save(threshold=t, actor=actor, reason="fewer clarifications on weekends")

    latest = t.history.first()
    assert latest.value == Decimal("0.7")
    assert latest.history_user == actor
    assert latest.history_change_reason == "fewer clarifications on weekends"
    assert latest.history_type == "~"
    assert t.history.count() == 2


def test_threshold_outside_its_bounds_is_refused_with_the_bounds_named(actor):
    t = f.threshold()
    t.value = Decimal("1.5")
    with pytest.raises(ValidationError) as exc:
        records.threshold_save(threshold=t, actor=actor, reason="typo")
    assert exc.value.message_dict["value"] == ["1.5 is outside the allowed bounds 0 … 1."]
    assert Threshold.objects.get(key="min_confidence").value == Decimal("0.65")
    assert t.history.count() == 1


def test_each_change_cuts_one_revision_with_the_whole_configuration(actor):
    t = f.threshold()
    first = ConfigRevision.objects.get()
    assert first.number == 1
    assert first.snapshot["thresholds"][0] == {
        "key": "min_confidence",
        "value": 0.65,
        "min": 0,
        "max": 1,
        "high_risk": False,
    }

    t.value = Decimal("0.7")
    records.threshold_save(threshold=t, actor=actor, reason="raise")
    second = ConfigRevision.objects.order_by("-number").first()
    assert second.number == 2
    assert second.snapshot["thresholds"][0]["value"] == 0.7
    assert second.created_by == actor and second.reason == "raise"
    # The earlier snapshot is untouched: decisions made under it can be replayed exactly.
    first.refresh_from_db()
    assert first.snapshot["thresholds"][0]["value"] == 0.65


def test_writes_inside_one_config_change_make_one_revision(actor):
    with config_change(actor=actor, reason="new point"):
        t = f.threshold(actor=actor)
        kl = f.keyword_list(actor=actor)
        p = f.point(actor=actor)
        r = f.rule(p, actor=actor)
        f.condition(r, kind="input_contains", keyword_list=kl, actor=actor)
        f.condition(r, kind="candidate_confidence_below", threshold=t, actor=actor)
    assert ConfigRevision.objects.count() == 1
    snap = ConfigRevision.objects.get().snapshot
    assert snap["points"][0]["rules"][0]["conditions"] == [
        {"input_contains": "high_risk"},
        {"candidate_confidence_below": "min_confidence"},
    ]


def test_a_failing_write_rolls_back_the_whole_change(actor):
    f.threshold()
    with pytest.raises(ValidationError), config_change(actor=actor, reason="half"):
        f.keyword_list(key="refund_triggers", terms=["退款"], actor=actor)
        f.threshold(key="auto_refund_limit", value="-1", lo="0", hi="100000", actor=actor)
    assert not KeywordTerm.objects.exists()
    assert ConfigRevision.objects.count() == 1


def test_saving_without_a_change_cuts_no_revision(actor):
    t = f.threshold()
    records.threshold_save(threshold=t, actor=actor, reason="no-op")
    assert ConfigRevision.objects.count() == 1


def test_terms_are_normalised_and_duplicates_refused(actor):
    kl = f.keyword_list(terms=["１２３１５", "Refund", "  投诉 "])
    assert list(kl.terms.values_list("term", flat=True)) == ["12315", "refund", "投诉"]
    with pytest.raises(ValidationError, match="Already in list high_risk: 12315, refund"):
        records.keyword_terms_add(keyword_list=kl, terms=["12315", "REFUND", "新词"], actor=actor, reason="x")
    assert kl.terms.count() == 3  # nothing of the refused batch was added
    with pytest.raises(ValidationError, match="already in list"):
        records.keyword_term_save(term=KeywordTerm(keyword_list=kl, term="ＲＥＦＵＮＤ"), actor=actor, reason="x")


def test_regex_list_refuses_a_term_that_does_not_compile(actor):
    kl = f.keyword_list(key="order_ids", terms=[r"\d{12}"], match_mode="regex")
    with pytest.raises(ValidationError, match="Not a valid regular expression"):
        records.keyword_terms_add(keyword_list=kl, terms=["(unclosed"], actor=actor, reason="x")


def test_rule_outcome_must_be_an_outcome_of_its_point(actor):
    p = f.point()
    with pytest.raises(ValidationError) as exc:
        f.rule(p, outcome="refund", actor=actor)
    assert exc.value.message_dict["outcome"] == ["'refund' is not an outcome of intent_routing."]
    assert not Rule.objects.exists()


def test_point_whitelist_and_default_must_be_outcomes(actor):
    with pytest.raises(ValidationError) as exc:
        f.point(candidate_whitelist=["general_query", "close_order"], default_outcome="nope")
    assert exc.value.message_dict["candidate_whitelist"] == ["Not an outcome of this point: close_order."]
    assert exc.value.message_dict["default_outcome"] == ["'nope' is not an outcome of this point."]


def test_removing_an_outcome_still_used_by_a_rule_is_refused(actor):
    p = f.point()
    f.rule(p, outcome="human_handoff")
    p.outcomes = ["general_query", "intent_clarify"]
    with pytest.raises(ValidationError, match="Still used by rules of this point: human_handoff"):
        records.point_save(point=p, actor=actor, reason="x")


@pytest.mark.parametrize(
    ("kwargs", "field", "message"),
    [
        ({"kind": "input_contains"}, "keyword_list", "Choose the keyword list"),
        ({"kind": "candidate_confidence_below"}, "threshold", "Choose the threshold"),
        ({"kind": "fact", "fact": "amount", "operator": ">", "value": 1}, "fact", "not a declared fact"),
        ({"kind": "fact", "fact": "refund_amount", "operator": ">"}, "value", "either a threshold or a literal"),
        ({"kind": "fact", "fact": "refund_amount", "operator": "==", "value": "ten"}, "value", "does not fit"),
        ({"kind": "candidate_in", "outcomes": ["refund"]}, "outcomes", "Not an outcome of intent_routing: refund"),
        (
            {"kind": "time_window", "window_start": "22:00", "window_end": "06:00", "timezone": "Mars/Base"},
            "timezone",
            "not a known time zone",
        ),
        ({"kind": "session_state_in", "states": []}, "states", "at least one state"),
    ],
)
def test_incomplete_or_inconsistent_conditions_are_refused(actor, kwargs, field, message):
    p = f.point(facts={"refund_amount": "number"})
    r = f.rule(p)
    with pytest.raises(ValidationError) as exc:
        f.condition(r, **kwargs)
    assert message in " ".join(exc.value.message_dict[field])


def test_deleting_a_threshold_or_list_in_use_is_refused_and_names_the_rule(actor):
    t = f.threshold()
    kl = f.keyword_list()
    r = f.rule(f.point(), key="guard")
    f.condition(r, kind="candidate_confidence_below", threshold=t)
    f.condition(r, kind="input_contains", keyword_list=kl)
    with pytest.raises(ValidationError, match=r"used by rules intent_routing\.guard"):
        records.threshold_delete(threshold=t, actor=actor, reason="cleanup")
    with pytest.raises(ValidationError, match=r"used by rules intent_routing\.guard"):
        records.keyword_list_delete(keyword_list=kl, actor=actor, reason="cleanup")


def test_deleting_a_rule_records_who_and_why_for_it_and_its_conditions(actor):
    r = f.rule(f.point(), key="guard")
    c = f.condition(r, kind="candidate_not_in_whitelist")
    records.rule_delete(rule=r, actor=actor, reason="retired")
    deleted = [r.history.model.objects.filter(key="guard").first(), c.history.model.objects.first()]
    for row in deleted:
        assert row.history_type == "-"
        assert row.history_user == actor
        assert row.history_change_reason == "retired"


def test_regex_terms_are_trimmed_but_not_case_folded(actor):
    kl = f.keyword_list(key="codes", terms=[r"  \D{2}\d{4} "], match_mode="regex")
    assert list(kl.terms.values_list("term", flat=True)) == [r"\D{2}\d{4}"]


def test_a_condition_keeps_only_the_inputs_its_kind_uses(actor):
    t = f.threshold()
    r = f.rule(f.point())
    c = f.condition(r, kind="candidate_not_in_whitelist", threshold=t, fact="stale", outcomes=["general_query"])
    c.refresh_from_db()
    assert (c.threshold, c.fact, c.outcomes) == (None, "", [])
    records.threshold_delete(threshold=t, actor=actor, reason="no longer used")  # not blocked by a stale link


def test_deleting_a_point_removes_it_from_agents_with_history(actor):
    from agents.runtimes.services import agent_create

    keep, gone = f.point(key="keep"), f.point(key="gone")
    agent, _ = agent_create(name="bot", point_keys=["keep", "gone"], actor=actor, reason="setup")
    records.point_delete(point=gone, actor=actor, reason="retired point")
    assert [p.key for p in agent.points.all()] == ["keep"]
    latest = agent.history.first()
    assert latest.history_change_reason == "retired point"
    assert [p.decisionpoint_id for p in latest.points.all()] == [keep.pk]


def test_a_point_cannot_drop_or_retype_a_fact_its_rules_compare(actor):
    p = f.point(facts={"refund_amount": "number"}, outcomes=("handoff", "approve"))
    r = f.rule(p, key="over_limit", outcome="handoff")
    f.condition(r, kind="fact", fact="refund_amount", operator=">", value=500)
    for facts in ({"amount": "number"}, {"refund_amount": "string"}):
        p.facts = facts
        with pytest.raises(ValidationError) as exc:
            records.point_save(point=p, actor=actor, reason="rename")
        assert "over_limit" in exc.value.message_dict["facts"][0]
    assert p.history.count() == 1


def test_changing_a_lists_match_mode_restores_every_term_in_the_new_form(actor):
    kl = f.keyword_list(key="codes", terms=[r"Refund\D+", "ABC"], match_mode="regex")
    kl.match_mode = "substring"
    records.keyword_list_save(keyword_list=kl, actor=actor, reason="plain terms now")
    assert sorted(kl.terms.values_list("term", flat=True)) == ["abc", r"refund\d+"]
    clash = f.keyword_list(key="clash", terms=["ABC", "abc"], match_mode="regex")
    clash.match_mode = "substring"
    with pytest.raises(ValidationError, match="would be the same term"):
        records.keyword_list_save(keyword_list=clash, actor=actor, reason="x")


def test_a_save_that_changes_nothing_writes_no_history(actor):
    t = f.threshold()
    same = Threshold.objects.get(pk=t.pk)
    records.threshold_save(threshold=same, actor=actor, reason="opened and saved")
    assert t.history.count() == 1


def test_numbers_that_are_not_finite_are_refused_as_literals(actor):
    p = f.point(facts={"refund_amount": "number"})
    r = f.rule(p)
    with pytest.raises(ValidationError, match="does not fit"):
        f.condition(r, kind="fact", fact="refund_amount", operator=">", value=float("inf"))


def test_a_configuration_the_configured_backend_cannot_run_is_refused_when_written(actor, settings):
    """durable-rules evaluates at most 64 simultaneously true conditions: 65 rules on 65 lists exceed it."""
    settings.ARBITER_ENGINE = "durable"
    p = f.point(outcomes=("a", "b"))
    with (
        pytest.raises(ValidationError, match=r"durable engine cannot run this configuration: .* 65 conditions"),
        config_change(actor=actor, reason="too wide for durable"),
    ):
        for i in range(65):
            kl = f.keyword_list(key=f"list_{i}", terms=[f"term{i}"], actor=actor)
            f.condition(f.rule(p, key=f"r{i}", outcome="a", actor=actor), kind="input_contains", keyword_list=kl)
    assert not Rule.objects.exists()
    settings.ARBITER_ENGINE = "native"
    f.rule(p, key="fine", outcome="a")  # the native backend has no such limit


@pytest.mark.parametrize("text", ["a\x00b", "a\udc80b"])
def test_text_that_cannot_be_stored_is_refused_before_the_database_sees_it(actor, text):
    # PostgreSQL refuses NUL (in text and in JSON) and no database can encode a lone surrogate: without
    # the check these were errors from the database driver, not a refusal naming the field.
    with pytest.raises(ValidationError) as exc:
        f.threshold(name=text)
    assert exc.value.message_dict["name"] == [
        "Text cannot hold a NUL character."
        if "\x00" in text
        else "Text cannot hold an unpaired surrogate (U+D800 to U+DFFF)."
    ]
    p = f.point(facts={"tier": "string"})
    r = f.rule(p)
    with pytest.raises(ValidationError) as exc:
        f.condition(r, kind="fact", fact="tier", operator="in", value=["gold", text])
    assert list(exc.value.message_dict) == ["value"]
    assert not Threshold.objects.exists() and not r.conditions.exists()


def test_inverted_threshold_bounds_name_both_bounds(actor):
    with pytest.raises(ValidationError) as exc:
        f.threshold(lo="2", hi="1", value="1.5")
    assert exc.value.message_dict["max_value"] == ["The upper bound 1 is below the lower bound 2."]
