"""The configuration admin, driven through Django's test client against a real database.

The configuration used here is built through the services, as operations staff's records would be.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents.runtimes.models import AgentRuntime
from rules.config.admin.fields import parse_literal, parse_literal_list, show_literal
from rules.config.records import condition_save, keyword_terms_add, threshold_save
from rules.models import (
    Condition,
    ConfigRevision,
    DecisionPoint,
    KeywordList,
    KeywordTerm,
    Rule,
    Threshold,
)
from tests.support.admin import REASON, build_config, form_data, messages_of

# These tests are about the admin's forms themselves (who and why, validation on the field, inlines, one
# revision per submission), on records that include high-risk ones; the same forms' path through approval
# is tested in tests/rules/governance/test_paths.py and test_admin_messages.py.
pytestmark = pytest.mark.applies_config_at_once(
    reason="tests the admin's forms on high-risk records; their approval path is tests/rules/governance"
)


@pytest.fixture
def config(actor):
    return build_config(actor)


@pytest.fixture
def admin_client_(staff_user) -> Client:
    client = Client()
    client.force_login(staff_user)
    return client


def revision_count() -> int:
    return ConfigRevision.objects.count()


# --- every page renders ----------------------------------------------------------------------------------

MODELS = [
    ("rules", "threshold"),
    ("rules", "keywordlist"),
    ("rules", "decisionpoint"),
    ("rules", "rule"),
    ("rules", "configrevision"),
    ("rules", "statemachine"),
    ("agents", "agentruntime"),
]


def _objects(config: dict[str, Any]) -> dict[str, Any]:
    return {
        "threshold": config["min_confidence"],
        "keywordlist": config["complaint_patterns"],
        "decisionpoint": config["point"],
        "rule": config["unsure_gold"],
        "configrevision": ConfigRevision.objects.order_by("-number").first(),
        "statemachine": config["machine"],
        "agentruntime": config["agent"],
    }


@pytest.mark.django_db
@pytest.mark.parametrize(("app", "model"), MODELS)
def test_changelist_and_add_pages_render(admin_client_, config, app, model):
    response = admin_client_.get(reverse(f"admin:{app}_{model}_changelist"))
    assert response.status_code == 200
    response = admin_client_.get(reverse(f"admin:{app}_{model}_changelist"), {"q": "a"})
    assert response.status_code == 200
    add = admin_client_.get(reverse(f"admin:{app}_{model}_add"))
    assert add.status_code == (403 if model == "configrevision" else 200)


@pytest.mark.django_db
@pytest.mark.parametrize(("app", "model"), MODELS)
def test_change_and_history_pages_render(admin_client_, config, app, model):
    obj = _objects(config)[model]
    response = admin_client_.get(reverse(f"admin:{app}_{model}_change", args=[obj.pk]))
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {}
    history = admin_client_.get(reverse(f"admin:{app}_{model}_history", args=[obj.pk]))
    assert history.status_code == 200


@pytest.mark.django_db
def test_every_rule_condition_and_list_filter_renders(admin_client_, config):
    url = reverse("admin:rules_rule_changelist")
    for query in (
        {"high_risk": "yes"},
        {"high_risk": "no"},
        {"category": "risk"},
        {"mode": "enforce"},
        {"point__id__exact": config["point"].pk},
    ):
        response = admin_client_.get(url, query)
        assert response.status_code == 200
    response = admin_client_.get(url, {"high_risk": "yes"})
    assert "big_refund" in response.content.decode()
    assert "unsure_gold" not in response.content.decode()
    response = admin_client_.get(reverse("admin:rules_threshold_changelist"), {"high_risk__exact": "1"})
    assert "auto_refund_limit" in response.content.decode()
    assert "0 … 10000 CNY" in response.content.decode()


@pytest.mark.django_db
def test_history_version_page_renders(admin_client_, config):
    threshold = config["min_confidence"]
    record = threshold.history.first()
    response = admin_client_.get(
        reverse("admin:rules_threshold_simple_history", args=[threshold.pk, record.history_id])
    )
    assert response.status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("model", ["threshold", "keywordlist", "decisionpoint", "rule"])
def test_pages_render_in_simplified_chinese(admin_client_, config, model):
    obj = _objects(config)[model]
    response = admin_client_.get(reverse(f"admin:rules_{model}_change", args=[obj.pk]), HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert response.status_code == 200
    assert 'lang="zh-hans"' in response.content.decode()


# --- thresholds ------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_editing_a_threshold_records_who_and_why(admin_client_, config, staff_user):
    threshold = config["min_confidence"]
    url = reverse("admin:rules_threshold_change", args=[threshold.pk])
    page = admin_client_.get(url)
    assert "Allowed range: 0 … 1 ratio" in page.content.decode()
    data = form_data(page)
    assert data["value"] == "0.65"
    before = revision_count()
    data.update(value="0.7", change_reason="Calibrated on March traffic")
    response = admin_client_.post(url, data)
    assert response.status_code == 302
    threshold.refresh_from_db()
    assert threshold.value == Decimal("0.7")
    record = threshold.history.order_by("-history_date", "-history_id").first()
    assert record.history_user == staff_user
    assert record.history_change_reason == "Calibrated on March traffic"
    assert revision_count() == before + 1
    latest = ConfigRevision.objects.order_by("-number").first()
    assert latest.reason == "Calibrated on March traffic"
    assert latest.created_by == staff_user


@pytest.mark.django_db
def test_empty_reason_becomes_edited_in_admin(admin_client_, config):
    threshold = config["auto_refund_limit"]
    url = reverse("admin:rules_threshold_change", args=[threshold.pk])
    data = form_data(admin_client_.get(url))
    data.update(value="800", change_reason="")
    assert admin_client_.post(url, data).status_code == 302
    assert threshold.history.order_by("-history_id").first().history_change_reason == "Edited in admin"


@pytest.mark.django_db
def test_out_of_bounds_threshold_shows_the_bounds_and_writes_nothing(admin_client_, config):
    threshold = config["min_confidence"]
    url = reverse("admin:rules_threshold_change", args=[threshold.pk])
    data = form_data(admin_client_.get(url))
    history_before, revisions_before = threshold.history.count(), revision_count()
    data.update(value="5", change_reason="typo")
    response = admin_client_.post(url, data)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["value"] == ["5 is outside the allowed bounds 0 … 1 ratio."]
    assert "5 is outside the allowed bounds 0 … 1 ratio." in response.content.decode()
    threshold.refresh_from_db()
    assert threshold.value == Decimal("0.65")
    assert threshold.history.count() == history_before
    assert revision_count() == revisions_before


@pytest.mark.django_db
def test_adding_a_threshold_goes_through_the_service(admin_client_, config, staff_user):
    url = reverse("admin:rules_threshold_add")
    data = form_data(admin_client_.get(url))
    data.update(key="max_turns", value="12", min_value="1", max_value="50", unit="turns", change_reason="New limit")
    response = admin_client_.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    threshold = Threshold.objects.get(key="max_turns")
    record = threshold.history.get()
    assert (record.history_type, record.history_user, record.history_change_reason) == ("+", staff_user, "New limit")


@pytest.mark.django_db
def test_deleting_a_threshold_in_use_is_refused_naming_the_rules(admin_client_, config):
    threshold = config["auto_refund_limit"]
    url = reverse("admin:rules_threshold_delete", args=[threshold.pk])
    confirm = admin_client_.get(url)
    assert confirm.status_code == 200
    assert "refund_approval.big_refund" in confirm.content.decode()
    before = revision_count()
    response = admin_client_.post(url, {"post": "yes", "change_reason": "cleanup"})
    assert response.status_code == 302
    assert messages_of(response) == [
        "Not deleted. The threshold auto_refund_limit is used by rules refund_approval.big_refund; "
        "change those rules first."
    ]
    assert Threshold.objects.filter(pk=threshold.pk).exists()
    assert revision_count() == before


@pytest.mark.django_db
def test_bulk_delete_of_a_threshold_in_use_deletes_nothing(admin_client_, config):
    unused = threshold_save(threshold=Threshold(key="unused_limit", value=Decimal(1)), actor=None, reason=REASON)
    url = reverse("admin:rules_threshold_changelist")
    ids = [str(unused.pk), str(config["min_confidence"].pk)]
    response = admin_client_.post(
        url, {"action": "delete_selected", "_selected_action": ids, "post": "yes"}, follow=True
    )
    assert response.status_code == 200
    assert any("refund_approval.unsure_gold" in m for m in messages_of(response))
    assert Threshold.objects.filter(pk=unused.pk).exists()


@pytest.mark.django_db
def test_deleting_an_unused_threshold_records_the_reason(admin_client_, staff_user):
    unused = threshold_save(threshold=Threshold(key="unused_limit", value=Decimal(1)), actor=None, reason=REASON)
    url = reverse("admin:rules_threshold_delete", args=[unused.pk])
    response = admin_client_.post(url, {"post": "yes", "change_reason": "Never used"})
    assert response.status_code == 302
    assert not Threshold.objects.filter(pk=unused.pk).exists()
    record = Threshold.history.filter(id=unused.pk, history_type="-").get()
    assert (record.history_user, record.history_change_reason) == (staff_user, "Never used")
    assert ConfigRevision.objects.order_by("-number").first().reason == "Never used"


@pytest.mark.django_db
def test_reverting_a_threshold_goes_through_the_service(admin_client_, config, staff_user):
    threshold = config["min_confidence"]
    original = threshold.history.get()
    threshold.value = Decimal("0.9")
    threshold_save(threshold=threshold, actor=None, reason="Experiment")
    url = reverse("admin:rules_threshold_simple_history", args=[threshold.pk, original.history_id])
    data = form_data(admin_client_.get(url))
    assert data["value"] == "0.65"
    before = revision_count()
    response = admin_client_.post(url, data)
    assert response.status_code == 302
    threshold.refresh_from_db()
    assert threshold.value == Decimal("0.65")
    record = threshold.history.order_by("-history_id").first()
    assert (record.history_user, record.history_change_reason) == (
        staff_user,
        "Reverted in admin to an earlier version",
    )
    assert revision_count() == before + 1


# --- keyword lists ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_bulk_paste_with_a_duplicate_names_it_and_adds_nothing(admin_client_, config):
    keyword_list = config["refund_words"]
    url = reverse("admin:rules_keywordlist_change", args=[keyword_list.pk])
    data = form_data(admin_client_.get(url))
    terms_before, revisions_before = list(keyword_list.terms.values_list("term", flat=True)), revision_count()
    data.update(bulk_terms="chargeback\nREFUND\n", change_reason="More words")
    response = admin_client_.post(url, data)
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["bulk_terms"] == ["Already in list refund_words: refund."]
    assert "Already in list refund_words: refund." in response.content.decode()
    assert list(keyword_list.terms.values_list("term", flat=True)) == terms_before
    assert revision_count() == revisions_before


@pytest.mark.django_db
def test_bulk_paste_stores_normalised_terms(admin_client_, config, staff_user):
    url = reverse("admin:rules_keywordlist_add")
    data = form_data(admin_client_.get(url))
    data.update(key="refund_cn", match_mode="substring", bulk_terms="Ｒefund\n退款", change_reason="New list")
    before = revision_count()
    response = admin_client_.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    keyword_list = KeywordList.objects.get(key="refund_cn")
    assert list(keyword_list.terms.order_by("id").values_list("term", flat=True)) == ["refund", "退款"]
    assert revision_count() == before + 1
    term_record = KeywordTerm.history.filter(keyword_list_id=keyword_list.pk).first()
    assert (term_record.history_user, term_record.history_change_reason) == (staff_user, "New list")


@pytest.mark.django_db
def test_inline_terms_are_saved_and_deleted_through_the_service(admin_client_, config):
    keyword_list = config["refund_words"]
    url = reverse("admin:rules_keywordlist_change", args=[keyword_list.pk])
    data = form_data(admin_client_.get(url))
    # Delete "money back" (third row) and rename "refund" to "REFUNDS".
    data["terms-2-DELETE"] = "on"
    data["terms-0-term"] = "REFUNDS"
    response = admin_client_.post(url, data)
    assert response.status_code == 302
    assert sorted(keyword_list.terms.values_list("term", flat=True)) == ["refunds", "退款"]
    deleted = KeywordTerm.history.filter(history_type="-", term="money back").get()
    assert deleted.history_change_reason == "Edited in admin"


@pytest.mark.django_db
def test_switching_to_regex_with_a_bad_pattern_is_refused_at_the_term(admin_client_, config):
    keyword_list = config["refund_words"]
    keyword_terms_add(keyword_list=keyword_list, terms=["(unclosed"], actor=None, reason=REASON)
    url = reverse("admin:rules_keywordlist_change", args=[keyword_list.pk])
    data = form_data(admin_client_.get(url))
    data.update(match_mode="regex")
    response = admin_client_.post(url, data)
    assert response.status_code == 200
    rows = response.context["inline_admin_formsets"][0].formset.forms
    bad = next(row for row in rows if row.instance.term == "(unclosed")
    assert "Not a valid regular expression" in " ".join(bad.errors["term"])
    keyword_list.refresh_from_db()
    assert keyword_list.match_mode == "substring"


# --- decision points -------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_point_is_edited_as_lines(admin_client_, config):
    point = config["point"]
    url = reverse("admin:rules_decisionpoint_change", args=[point.pk])
    page = admin_client_.get(url)
    data = form_data(page)
    assert data["outcomes"] == "approve\ndeny\nhandoff"
    assert sorted(data["facts"].splitlines()) == ["customer_tier: string", "refund_amount: number"]
    assert "big_refund" in page.content.decode()  # the rules overview
    data.update(
        outcomes="approve\ndeny\nhandoff\nescalate",
        candidate_whitelist="approve, deny\nescalate",
        facts="refund_amount: number\ncustomer_tier: string\nis_vip: boolean",
    )
    response = admin_client_.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    point.refresh_from_db()
    assert point.outcomes == ["approve", "deny", "handoff", "escalate"]
    assert point.candidate_whitelist == ["approve", "deny", "escalate"]
    assert point.facts == {"refund_amount": "number", "customer_tier": "string", "is_vip": "boolean"}


@pytest.mark.django_db
def test_storing_the_raw_model_output_is_switched_on_in_the_admin_as_a_revision(admin_client_, config, staff_user):
    point = config["point"]
    assert point.store_raw_output is False  # the seed's default: the parsed candidate only
    url = reverse("admin:rules_decisionpoint_change", args=[point.pk])
    data = form_data(admin_client_.get(url))
    assert "store_raw_output" not in data  # an unticked box
    data["store_raw_output"] = "on"
    response = admin_client_.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    point.refresh_from_db()
    assert point.store_raw_output is True
    latest = point.history.order_by("-history_id").first()
    assert (latest.store_raw_output, latest.history_user) == (True, staff_user)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        (
            {"candidate_whitelist": "approve\nrefund_now"},
            "candidate_whitelist",
            "Not an outcome of this point: refund_now.",
        ),
        ({"facts": "refund_amount number"}, "facts", "Line 1: write the fact as"),
        ({"facts": "refund_amount: money"}, "facts", "unknown type 'money'"),
        ({"outcomes": "approve\ndeny"}, "outcomes", "Still used by rules of this point: handoff."),
    ],
)
def test_point_errors_are_shown_on_the_form(admin_client_, config, changes, field, message):
    point = config["point"]
    url = reverse("admin:rules_decisionpoint_change", args=[point.pk])
    data = form_data(admin_client_.get(url))
    data.update(changes)
    response = admin_client_.post(url, data)
    assert response.status_code == 200
    assert message in " ".join(response.context["adminform"].form.errors[field])


@pytest.mark.django_db
def test_deleting_a_point_deletes_its_rules_through_the_services(admin_client_, config, staff_user):
    point = config["point"]
    url = reverse("admin:rules_decisionpoint_delete", args=[point.pk])
    confirm = admin_client_.get(url)
    assert confirm.status_code == 200
    assert "big_refund" in confirm.content.decode()
    assert 'name="change_reason"' in confirm.content.decode()
    before = revision_count()
    response = admin_client_.post(url, {"post": "yes", "change_reason": "Point retired"})
    assert response.status_code == 302
    assert not DecisionPoint.objects.exists()
    assert not Rule.objects.exists()
    assert revision_count() == before + 1
    assert Rule.history.filter(history_type="-", history_change_reason="Point retired").count() == 2


# --- rules and conditions --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_one_rule_submission_with_inline_changes_is_one_revision(admin_client_, config, staff_user):
    rule = config["big_refund"]
    url = reverse("admin:rules_rule_change", args=[rule.pk])
    data = form_data(admin_client_.get(url))
    before = revision_count()
    # Change the rule, edit the first condition, delete the second and add a new one.
    data.update(priority="5", change_reason="Tighter refund rule")
    data["conditions-0-operator"] = ">="
    data["conditions-1-DELETE"] = "on"
    total = int(data["conditions-TOTAL_FORMS"])
    data["conditions-TOTAL_FORMS"] = str(total + 1)
    data.update(
        {
            f"conditions-{total}-kind": "candidate_not_in_whitelist",
            f"conditions-{total}-position": "3",
            f"conditions-{total}-rule": str(rule.pk),
        }
    )
    response = admin_client_.post(url, data)
    assert response.status_code == 302, response.context and response.context["errors"]
    assert revision_count() == before + 1
    rule.refresh_from_db()
    assert rule.priority == 5
    kinds = list(rule.conditions.order_by("position").values_list("kind", "operator"))
    assert kinds == [("fact", ">="), ("candidate_not_in_whitelist", "")]
    for history in (Rule.history, Condition.history):
        latest = history.order_by("-history_id").first()
        assert (latest.history_user, latest.history_change_reason) == (staff_user, "Tighter refund rule")
    assert Condition.history.filter(history_type="-", history_change_reason="Tighter refund rule").count() == 1


@pytest.mark.django_db
def test_condition_values_are_typed_in_plain_words(admin_client_, config):
    rule = config["unsure_gold"]
    url = reverse("admin:rules_rule_change", args=[rule.pk])
    data = form_data(admin_client_.get(url))
    tier = next(k for k, v in data.items() if k.endswith("-fact") and v == "customer_tier")
    prefix = tier.removesuffix("-fact")
    assert data[f"{prefix}-value"] == "gold, platinum"
    data[f"{prefix}-value"] = "gold, 500"
    outcomes = next(k for k, v in data.items() if k.endswith("-outcomes") and v == "approve")
    data[outcomes] = "approve, deny"
    response = admin_client_.post(url, data)
    assert response.status_code == 302, response.context and response.context["errors"]
    condition = rule.conditions.get(fact="customer_tier")
    assert condition.value == ["gold", "500"]  # a text fact compares with text
    assert rule.conditions.get(kind="candidate_in").outcomes == ["approve", "deny"]


@pytest.mark.django_db
def test_condition_errors_are_shown_in_the_row(admin_client_, config):
    rule = config["big_refund"]
    url = reverse("admin:rules_rule_change", args=[rule.pk])
    data = form_data(admin_client_.get(url))
    data["conditions-0-fact"] = "refund_total"
    response = admin_client_.post(url, data)
    assert response.status_code == 200
    inline = response.context["inline_admin_formsets"][0].formset
    assert inline.forms[0].errors["fact"] == ["'refund_total' is not a declared fact of refund_approval."]


@pytest.mark.django_db
def test_a_service_refusal_on_a_new_rule_reaches_the_row_and_saves_nothing(admin_client_, config):
    """On the add page the conditions cannot be checked against the point before saving; the service does."""
    point = config["point"]
    url = reverse("admin:rules_rule_add")
    page = admin_client_.get(url, {"point": point.pk})
    data = form_data(page)
    data.update(point=str(point.pk), key="new_rule", priority="30", category="business", outcome="deny", mode="enforce")
    data.update(
        {
            "conditions-0-kind": "fact",
            "conditions-0-fact": "unknown_fact",
            "conditions-0-operator": "==",
            "conditions-0-value": "1",
        }
    )
    rules_before, revisions_before = Rule.objects.count(), revision_count()
    response = admin_client_.post(url, data)
    assert response.status_code == 200
    inline = response.context["inline_admin_formsets"][0].formset
    assert inline.forms[0].errors["fact"] == ["'unknown_fact' is not a declared fact of refund_approval."]
    assert "Nothing was saved" in " ".join(response.context["adminform"].form.non_field_errors())
    assert Rule.objects.count() == rules_before
    assert revision_count() == revisions_before
    # The same submission, corrected, saves the rule and its condition as one revision.
    data["conditions-0-fact"] = "refund_amount"
    response = admin_client_.post(url, data)
    assert response.status_code == 302
    new_rule = Rule.objects.get(key="new_rule")
    assert list(new_rule.conditions.values_list("fact", "operator", "value")) == [("refund_amount", "==", 1)]
    assert revision_count() == revisions_before + 1


@pytest.mark.django_db
def test_rule_outcome_is_a_dropdown_of_the_points_outcomes(admin_client_, config):
    rule = config["big_refund"]
    response = admin_client_.get(reverse("admin:rules_rule_change", args=[rule.pk]))
    choices = [value for value, _ in response.context["adminform"].form.fields["outcome"].choices]
    assert choices == ["", "approve", "deny", "handoff"]


@pytest.mark.django_db
def test_deleting_a_rule_goes_through_the_service(admin_client_, config, staff_user):
    rule = config["unsure_gold"]
    before = revision_count()
    response = admin_client_.post(
        reverse("admin:rules_rule_delete", args=[rule.pk]), {"post": "yes", "change_reason": "Retired"}
    )
    assert response.status_code == 302
    assert not Rule.objects.filter(pk=rule.pk).exists()
    assert revision_count() == before + 1
    deleted = Condition.history.filter(history_type="-", history_change_reason="Retired")
    assert deleted.count() == 6
    assert {r.history_user for r in deleted} == {staff_user}


# --- keys are fixed once created -------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("app", "model", "name", "fixed"),
    [
        ("rules", "threshold", "min_confidence", ["key"]),
        ("rules", "keywordlist", "refund_words", ["key"]),
        ("rules", "decisionpoint", "point", ["key"]),
        ("rules", "rule", "big_refund", ["key", "point"]),
        ("rules", "statemachine", "machine", ["key"]),
        ("agents", "agentruntime", "agent", ["name"]),
    ],
)
def test_keys_are_read_only_on_change_pages(admin_client_, config, app, model, name, fixed):
    obj = config[name]
    change = admin_client_.get(reverse(f"admin:{app}_{model}_change", args=[obj.pk]))
    form = change.context["adminform"].form
    for field in fixed:
        assert field not in form.fields
        assert not re.search(rf'name="{field}"', change.content.decode())
    add = admin_client_.get(reverse(f"admin:{app}_{model}_add"))
    assert fixed[0] in add.context["adminform"].form.fields


@pytest.mark.django_db
def test_posting_a_new_key_does_not_change_it(admin_client_, config):
    threshold = config["min_confidence"]
    url = reverse("admin:rules_threshold_change", args=[threshold.pk])
    data = form_data(admin_client_.get(url))
    data["key"] = "renamed"
    assert admin_client_.post(url, data).status_code == 302
    threshold.refresh_from_db()
    assert threshold.key == "min_confidence"


# --- revisions -------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_revisions_are_read_only_and_show_the_snapshot(admin_client_, config, staff_user):
    revision = ConfigRevision.objects.order_by("-number").first()
    url = reverse("admin:rules_configrevision_change", args=[revision.pk])
    response = admin_client_.get(url)
    body = response.content.decode()
    assert f"{revision.number}" in body
    assert "Test configuration" in body
    assert "&quot;auto_refund_limit&quot;" in body or '"auto_refund_limit"' in body
    assert "revision " in body  # the diff header
    assert not response.context["has_change_permission"]
    assert admin_client_.post(url, {"reason": "x"}).status_code == 403
    assert admin_client_.get(reverse("admin:rules_configrevision_delete", args=[revision.pk])).status_code == 403
    assert staff_user.username in admin_client_.get(reverse("admin:rules_configrevision_changelist")).content.decode()


# --- the text ↔ value conversions ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [("500", 500), ("0.5", 0.5), ("yes", True), ("False", False), ("gold", "gold"), ('"500"', "500")],
)
def test_literals_read_as_people_type_them(text, value):
    assert parse_literal(text) == value
    assert parse_literal(show_literal(value)) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [("gold, platinum", ["gold", "platinum"]), ("1, 2.5", [1, 2.5]), ('"a, b", c', ["a, b", "c"]), ("[1, 2]", [1, 2])],
)
def test_literal_lists_read_as_people_type_them(text, value):
    assert parse_literal_list(text) == value
    assert parse_literal_list(show_literal(value)) == value


@pytest.mark.django_db
def test_agent_exists_for_admin_tests(config):
    assert AgentRuntime.objects.filter(name="support_bot").exists()


@pytest.mark.django_db
def test_a_fact_matches_condition_is_added_and_edited_in_the_rule_row(admin_client_, config):
    rule = config["big_refund"]
    url = reverse("admin:rules_rule_change", args=[rule.pk])
    data = form_data(admin_client_.get(url))
    total = int(data["conditions-TOTAL_FORMS"])
    row = f"conditions-{total}"
    data["conditions-TOTAL_FORMS"] = str(total + 1)
    data.update(
        {
            f"{row}-kind": "fact_matches",
            f"{row}-position": "9",
            f"{row}-rule": str(rule.pk),
            f"{row}-fact": "customer_tier",
            f"{row}-value": "  ^gold\\b  ",
            f"{row}-operator": ">",  # left over in a hidden input: emptied, as every input the kind does not use
        }
    )
    response = admin_client_.post(url, data)
    assert response.status_code == 302, response.context and response.context["errors"]
    condition = rule.conditions.get(kind="fact_matches")
    assert (condition.fact, condition.value, condition.operator) == ("customer_tier", r"^gold\b", "")
    assert str(condition) == r"customer_tier matches /^gold\b/"

    # Shown as typed (not as a quoted literal), and refused with the regex term's limits.
    data = form_data(admin_client_.get(url))
    prefix = next(k for k, v in data.items() if k.endswith("-kind") and v == "fact_matches").removesuffix("-kind")
    assert data[f"{prefix}-value"] == r"^gold\b"
    data[f"{prefix}-value"] = "(gold"
    data[f"{prefix}-fact"] = "refund_amount"
    response = admin_client_.post(url, data)
    assert response.status_code == 200
    row_form = next(f for f in response.context["inline_admin_formsets"][0].formset.forms if f.prefix == prefix)
    assert row_form.errors["fact"] == ["A regular expression needs a string fact; this one is number."]
    assert row_form.errors["value"] == [
        "Not a valid regular expression: missing ), unterminated subpattern at position 0."
    ]
    data[f"{prefix}-value"] = "x" * 201
    data[f"{prefix}-fact"] = "customer_tier"
    response = admin_client_.post(url, data)
    row_form = next(f for f in response.context["inline_admin_formsets"][0].formset.forms if f.prefix == prefix)
    assert row_form.errors["value"] == ["The regular expression is longer than 200 characters."]
    data[f"{prefix}-value"] = "^PLATINUM$"
    response = admin_client_.post(url, data)
    assert response.status_code == 302
    assert rule.conditions.get(kind="fact_matches").value == "^PLATINUM$"


@pytest.mark.django_db
def test_a_point_cannot_retype_a_fact_a_fact_matches_condition_relies_on(admin_client_, config, actor):
    rule = config["big_refund"]
    condition_save(
        condition=Condition(rule=rule, position=9, kind="fact_matches", fact="customer_tier", value="^gold"),
        actor=actor,
        reason=REASON,
    )
    point = config["point"]
    url = reverse("admin:rules_decisionpoint_change", args=[point.pk])
    data = form_data(admin_client_.get(url))
    data["facts"] = "refund_amount: number\ncustomer_tier: integer"
    response = admin_client_.post(url, data)
    assert response.status_code == 200
    [message] = response.context["adminform"].form.errors["facts"]
    assert message.startswith(
        "Rules of this point rely on the facts: big_refund: A regular expression needs a string fact; "
        "this one is integer.;"
    )


@pytest.mark.django_db
def test_the_keyword_evasion_options_are_shown_on_by_default_and_saved_with_who_and_why(
    admin_client_, config, staff_user
):
    add = admin_client_.get(reverse("admin:rules_keywordlist_add"))
    page = add.content.decode()
    assert "Fold Traditional to Simplified" in page and "Ignore gaps between CJK characters" in page
    data = form_data(add)
    assert data["fold_traditional"] and data["ignore_cjk_gaps"]  # on unless turned off
    keyword_list = config["refund_words"]
    url = reverse("admin:rules_keywordlist_change", args=[keyword_list.pk])
    data = form_data(admin_client_.get(url))
    data.pop("fold_traditional", None)  # an unticked box is not sent
    data.update(change_reason="Traditional spellings are another word here")
    before = revision_count()
    response = admin_client_.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    keyword_list.refresh_from_db()
    assert (keyword_list.fold_traditional, keyword_list.ignore_cjk_gaps) == (False, True)
    assert revision_count() == before + 1
    record = keyword_list.history.first()
    assert (record.history_user, record.history_change_reason) == (
        staff_user,
        "Traditional spellings are another word here",
    )
    latest = ConfigRevision.objects.order_by("-number").first()
    listed = {kl["key"]: kl for kl in latest.snapshot["keyword_lists"]}
    assert listed["refund_words"]["fold_traditional"] is False
