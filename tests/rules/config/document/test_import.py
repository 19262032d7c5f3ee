"""``config_import``: one revision per import, all or nothing, nothing re-saved that did not change."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import IntegrityError

from agents.runtimes.services import agent_create
from rules.config import yaml_import as apply
from rules.config.document.validate import config_from_yaml
from rules.config.revisions import config_change
from rules.config.yaml_import import ImportResult, config_import
from rules.errors import ConfigError
from rules.models import (
    Condition,
    ConfigRevision,
    DecisionPoint,
    KeywordList,
    KeywordTerm,
    Rule,
    StateMachine,
    Threshold,
)
from tests.support.configio import AUDITED, DEMO_FILE, EMPTY_YAML, FULL_YAML, db_state

# Imports one after another over a live configuration, high-risk records included, to check what each
# writes (records, fields, history, revisions); an import held for approval is tests/rules/governance's
# (test_paths.py, test_change_requests.py).
pytestmark = [
    pytest.mark.django_db,
    pytest.mark.applies_config_at_once(reason="checks what each import writes, record by record"),
]

DEMO = DEMO_FILE.read_text(encoding="utf-8")


def run(text: str, actor=None, reason: str = "test import", dry_run: bool = False) -> ImportResult:
    return config_import(text=text, source="test.yaml", actor=actor, reason=reason, dry_run=dry_run)


def test_the_demo_imports_as_one_revision_with_the_user_and_reason(actor):
    result = run(DEMO, actor, reason="load the after-sales demo")

    assert result.changed is True
    assert ConfigRevision.objects.count() == 1
    revision = ConfigRevision.objects.get()
    assert result.revision == revision.number == 1
    assert revision.created_by == actor
    assert revision.reason == "load the after-sales demo"
    for model in AUDITED:
        rows = model.history.all()
        assert rows.exists(), model
        assert {r.history_user for r in rows} == {actor}, model
        assert {r.history_change_reason for r in rows} == {"load the after-sales demo"}, model

    assert Threshold.objects.get(key="min_confidence").value == Decimal("0.65")
    assert Threshold.objects.get(key="auto_refund_limit").high_risk is True
    assert list(KeywordList.objects.get(key="high_risk").terms.values_list("term", flat=True)) == [
        "投诉",
        "起诉",
        "媒体曝光",
        "12315",
        "报警",
        "police",
    ]
    routing = DecisionPoint.objects.get(key="intent_routing")
    assert [(r.key, r.priority, r.category, r.outcome) for r in routing.rules.order_by("priority")] == [
        ("high_risk_keyword", 10, "compliance", "human_handoff"),
        ("refund_trigger", 20, "business", "refund_review"),
        ("low_confidence", 50, "quality", "intent_clarify"),
        ("candidate_not_whitelisted", 60, "risk", "human_handoff"),
    ]
    refund = Rule.objects.get(point__key="refund_approval", key="over_auto_refund_limit")
    condition = refund.conditions.get()
    assert (condition.kind, condition.fact, condition.operator, condition.threshold.key) == (
        "fact",
        "refund_amount",
        ">",
        "auto_refund_limit",
    )
    change_address = StateMachine.objects.get(key="change_address")
    assert change_address.handoff_state == "human_handoff"
    assert change_address.timeouts == {"awaiting_intent": 30, "collecting_params": 30, "executing": 30}
    assert change_address.transitions["human_handoff"] == ["completed", "failed"]


def test_the_diff_lists_what_is_added():
    result = run(DEMO)
    assert result.diff[:3] == [
        "+ threshold auto_refund_limit: value 500 CNY, bounds 0 … 100000, high risk",
        "+ threshold min_confidence: value 0.65 ratio, bounds 0 … 1, high risk",
        "+ keyword list high_risk: segmented match, 6 terms [投诉, 起诉, 媒体曝光, '12315', 报警, police]",
    ]
    assert (
        "+ rule refund_approval.over_auto_refund_limit: priority 10, risk: {fact: refund_amount, op: '>', "
        "threshold: auto_refund_limit} → human_handoff" in result.diff
    )
    assert "+ machine change_address: 7 states, initial created, handoff human_handoff" in result.diff
    assert "+ tool verify_phone: read_only, 1 error codes" in result.diff
    assert result.diff[-1] == "+ MCP server orders: http://127.0.0.1:8765/mcp, auth none"


def test_reimporting_the_same_file_writes_nothing(actor):
    run(DEMO, actor)
    before = db_state()
    result = run(DEMO, actor, reason="again")
    assert result == ImportResult(diff=[], changed=False, revision=None)
    assert db_state() == before


def test_only_changed_records_and_fields_are_written(actor):
    run(DEMO, actor)
    before = db_state()
    changed = (
        DEMO.replace("value: 0.65", "value: 0.7")
        .replace("      - 报警\n", "      - 报警\n      - 律师\n")
        .replace("      - 退钱\n", "")
        .replace("priority: 50", "priority: 40")
        .replace(
            "      executing: [completed, failed, human_handoff, collecting_params]",
            "      executing: [completed, human_handoff, collecting_params]",
        )
    )
    result = run(changed, actor, reason="tune")

    assert result.diff == [
        "~ threshold min_confidence: value 0.65 → 0.7",
        "~ keyword list high_risk: terms added 律师",
        "~ keyword list refund_triggers: terms removed 退钱",
        "~ rule intent_routing.low_confidence: priority 50 → 40",
        "~ machine change_address: transitions.executing [completed, failed, human_handoff, collecting_params] → "
        "[completed, human_handoff, collecting_params]",
    ]
    assert result.revision == 2
    after = db_state()
    assert after["revisions"] == before["revisions"] + 1
    added = {name: after["history"][name] - count for name, count in before["history"].items()}
    # One row per written record: the threshold, two terms, the rule, the machine. Lists, points and
    # conditions whose documents did not change are not re-saved.
    assert added == {
        "Threshold": 1,
        "KeywordList": 0,
        "KeywordTerm": 2,
        "DecisionPoint": 0,
        "Rule": 1,
        "Condition": 0,
        "StateMachine": 1,
    }
    rule = Rule.objects.get(key="low_confidence")
    assert rule.history.first().history_change_reason == "tune"


def test_dry_run_changes_nothing_but_reports_the_diff(actor):
    run(DEMO, actor)
    before = db_state()
    changed = DEMO.replace("value: 0.65", "value: 0.7").replace("priority: 60", "priority: 70")
    result = run(changed, actor, dry_run=True)
    assert result.changed is True
    assert result.revision is None
    assert result.diff == [
        "~ threshold min_confidence: value 0.65 → 0.7",
        "~ rule intent_routing.candidate_not_whitelisted: priority 60 → 70",
    ]
    assert db_state() == before


def test_dry_run_on_an_empty_database_writes_nothing():
    before = db_state()
    result = run(FULL_YAML, dry_run=True)
    assert result.changed is True and len(result.diff) > 10
    assert db_state() == before


def test_records_missing_from_the_file_are_deleted_with_history(actor):
    run(FULL_YAML, actor)
    before = db_state()
    result = run(DEMO, actor, reason="replace everything")

    for line in (
        "- threshold refund_limit",
        "- threshold tiny",
        "- keyword list abuse",
        "- keyword list order_numbers",
        "- point routing",
        "- rule routing.big_refund",
        "- point second",
        "- machine flow",
    ):
        assert line in result.diff
    assert not Threshold.objects.filter(key__in=["refund_limit", "tiny"]).exists()
    assert not KeywordList.objects.filter(key="abuse").exists()
    assert not DecisionPoint.objects.filter(key="routing").exists()
    assert not StateMachine.objects.filter(key="flow").exists()
    assert ConfigRevision.objects.count() == before["revisions"] + 1
    deletions = Threshold.history.filter(history_type="-")
    assert {d.key for d in deletions} == {"refund_limit", "tiny"}
    assert {(d.history_user, d.history_change_reason) for d in deletions} == {(actor, "replace everything")}
    conditions = sum(len(r["conditions"]) for p in config_from_yaml(FULL_YAML)["points"] for r in p["rules"])
    removed = Condition.history.filter(history_type="-", history_change_reason="replace everything")
    assert removed.count() == conditions
    assert KeywordTerm.history.filter(history_type="-", term="idiot").exists()

    run(EMPTY_YAML, actor)
    for model in AUDITED:
        assert not model.objects.exists(), model


def test_removing_a_point_mentions_the_agents_that_use_it(actor):
    run(DEMO, actor)
    agent_create(name="shop_bot", point_keys=["refund_approval"], actor=actor, reason="t")
    without = DEMO[: DEMO.index("  - key: refund_approval")] + DEMO[DEMO.index("machines:") :]
    without = without.replace("threshold: auto_refund_limit", "")
    result = run(without, actor, dry_run=True)
    assert "- point refund_approval (agents shop_bot lose access to it)" in result.diff


def test_a_condition_can_change_kind_and_a_list_can_become_regex(actor):
    run(DEMO, actor)
    changed = DEMO.replace("          - input_contains: refund_triggers", "          - candidate_in: [refund_request]")
    changed = changed.replace(
        "    match: substring\n    terms:\n      - 退款\n      - 退钱\n      - 退货退款",
        "    match: regex\n    terms:\n      - 退(款|钱)",
    )
    result = run(changed, actor)
    assert result.diff == [
        "~ keyword list refund_triggers: match substring → regex",
        "~ keyword list refund_triggers: terms added 退(款|钱)",
        "~ keyword list refund_triggers: terms removed 退款, 退钱, 退货退款",
        "~ rule intent_routing.refund_trigger: conditions[0] {input_contains: refund_triggers} → "
        "{candidate_in: [refund_request]}",
    ]
    condition = Rule.objects.get(key="refund_trigger").conditions.get()
    assert (condition.kind, condition.keyword_list, condition.outcomes) == ("candidate_in", None, ["refund_request"])
    assert list(KeywordList.objects.get(key="refund_triggers").terms.values_list("term", flat=True)) == ["退(款|钱)"]


def test_an_outcome_can_be_dropped_together_with_the_rule_using_it(actor):
    run(DEMO, actor)
    # The point loses refund_review while its rule moves to human_handoff: the rule must be written first.
    changed = (
        DEMO.replace("      - refund_review\n      - intent_clarify", "      - intent_clarify")
        .replace("outcome: refund_review", "outcome: human_handoff")
        .replace("      refund_review: refund_review\n", "")
    )
    run(changed, actor)
    assert "refund_review" not in DecisionPoint.objects.get(key="intent_routing").outcomes
    assert Rule.objects.get(key="refund_trigger").outcome == "human_handoff"


def test_a_list_used_by_a_removed_rule_can_be_removed_in_the_same_import(actor):
    run(DEMO, actor)
    start, end = DEMO.index("      - key: refund_trigger"), DEMO.index("      - key: low_confidence")
    changed = DEMO[:start] + DEMO[end:]
    start, end = DEMO.index("  - key: refund_triggers"), DEMO.index("points:")
    changed = changed.replace(DEMO[start:end], "\n")
    result = run(changed, actor)
    assert result.diff == ["- keyword list refund_triggers", "- rule intent_routing.refund_trigger"]
    assert not KeywordList.objects.filter(key="refund_triggers").exists()


def test_an_invalid_file_writes_nothing(actor):
    run(DEMO, actor)
    before = db_state()
    with pytest.raises(ConfigError) as exc:
        run(DEMO.replace("value: 0.65", "value: 1.65").replace("outcome: refund_review", "outcome: refund"), actor)
    assert exc.value.problems == [
        "thresholds[0].value: 1.65 is outside the allowed bounds 0 … 1 ratio (line 15)",
        "points[0].rules[1].outcome: 'refund' is not an outcome of intent_routing (line 127)",
    ]
    assert db_state() == before


def fail_on(monkeypatch, name: str, error: Exception, when=lambda **kw: True) -> None:
    """Make the record service ``name`` raise ``error`` (after the earlier writes of the import)."""
    original = getattr(apply.records, name)

    def failing(**kwargs):
        if when(**kwargs):
            raise error
        return original(**kwargs)

    monkeypatch.setattr(apply.records, name, failing)


def test_a_refusal_during_apply_names_the_record_and_rolls_everything_back(actor, monkeypatch):
    run(DEMO, actor)
    before = db_state()
    changed = DEMO.replace("value: 0.65", "value: 0.7").replace("priority: 60", "priority: 70")
    changed = changed.replace("            threshold: auto_refund_limit", "            value: 1000")
    fail_on(
        monkeypatch,
        "condition_save",
        ValidationError({"value": "The value is refused."}),
    )
    with pytest.raises(ConfigError) as exc:
        run(changed, actor)
    assert exc.value.problems == [
        "rule refund_approval.over_auto_refund_limit conditions[0]: value: The value is refused."
    ]
    # The threshold and the other rule were written before the refusal; both are rolled back.
    assert db_state() == before


def test_a_database_refusal_at_the_end_rolls_back_the_earlier_writes(actor, monkeypatch):
    from rules.config import yaml_import as apply_module

    run(DEMO, actor)
    before = db_state()

    def refuse(**kwargs):
        raise IntegrityError("sessions still use it")

    monkeypatch.setattr(apply_module, "machine_delete", refuse)
    changed = DEMO.replace("value: 0.65", "value: 0.7")
    changed = changed[: changed.index("  - key: change_address")]
    with pytest.raises(ConfigError) as exc:
        run(changed, actor)
    assert exc.value.problems == ["machine change_address: the database refused the change: sessions still use it"]
    assert db_state() == before


def test_a_failing_dry_run_also_writes_nothing(actor, monkeypatch):
    run(DEMO, actor)
    before = db_state()
    fail_on(monkeypatch, "threshold_save", ValidationError("no"))
    with pytest.raises(ConfigError) as exc:
        run(DEMO.replace("value: 0.65", "value: 0.7"), actor, dry_run=True)
    assert exc.value.problems == ["threshold min_confidence: no"]
    assert db_state() == before


def test_an_import_inside_an_outer_change_joins_its_revision(actor):
    with config_change(actor=actor, reason="outer"):
        result = run(DEMO, actor)
        assert result.changed is True
        assert ConfigRevision.objects.count() == 0
    assert ConfigRevision.objects.count() == 1
    assert ConfigRevision.objects.get().reason == "outer"


def test_history_user_may_be_nobody():
    run(DEMO, None, reason="bootstrap")
    assert ConfigRevision.objects.get().created_by is None
    assert {r.history_user for r in Threshold.history.all()} == {None}


def test_the_default_reason_names_the_source():
    config_import(text=DEMO, source="demo/after_sales.yaml", actor=None, reason="")
    assert ConfigRevision.objects.get().reason == "import_config demo/after_sales.yaml"


def test_a_user_is_recorded_even_when_it_is_not_staff():
    user = get_user_model().objects.create_user(username="ci-bot")
    run(DEMO, user)
    assert ConfigRevision.objects.get().created_by == user


def test_conditions_are_matched_by_position(actor):
    two = DEMO.replace(
        "          - candidate_confidence_below: min_confidence\n",
        "          - candidate_confidence_below: min_confidence\n          - session_state_in: [received]\n",
    )
    run(two, actor)
    before = Condition.history.count()
    only_second = DEMO.replace(
        "          - candidate_confidence_below: min_confidence\n", "          - session_state_in: [received]\n"
    )
    result = run(only_second, actor)
    assert result.diff == [
        "~ rule intent_routing.low_confidence: conditions[0] {candidate_confidence_below: min_confidence} → "
        "{session_state_in: [received]}",
        "~ rule intent_routing.low_confidence: conditions[1] removed {session_state_in: [received]}",
    ]
    assert Condition.history.count() == before + 2  # one rewritten, one deleted
    assert [c.kind for c in Rule.objects.get(key="low_confidence").conditions.all()] == ["session_state_in"]
