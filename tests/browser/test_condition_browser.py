"""A real browser on a rule's conditions: each kind shows only its inputs, with its own help text.

What is shown comes from the kinds of condition (``rules/config/condition_kinds``) through the kind select's data
attributes and ``condition_kind.js``. Same Chromium as ``test_admin_browser`` (its ``chromium_page``
fixture); skipped without ``/usr/bin/chromium`` unless ``ARBITER_REQUIRE_BROWSER=1``.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model

from rules.config.admin.forms import ConditionForm
from rules.config.condition_kinds import ADAPTERS, INPUTS
from rules.config.records import condition_save, point_save, rule_save, threshold_save
from rules.models import Condition, DecisionPoint, Rule, Threshold

USERNAME, PASSWORD = "ops_conditions", "ops-password-1"

pytestmark = pytest.mark.browser


def _rule_with_a_condition(user) -> Rule:
    kw = {"actor": user, "reason": "browser test"}
    floor = threshold_save(threshold=Threshold(key="min_confidence", value=Decimal("0.65")), **kw)
    point = point_save(
        point=DecisionPoint(
            key="routing", facts={"order_no": "string"}, outcomes=["answer", "clarify"], default_outcome="answer"
        ),
        **kw,
    )
    rule = rule_save(rule=Rule(point=point, key="unsure", priority=1, category="quality", outcome="clarify"), **kw)
    condition_save(condition=Condition(rule=rule, kind="candidate_confidence_below", threshold=floor), **kw)
    return rule


def test_each_kind_shows_its_own_inputs_and_help(live_server, transactional_db, chromium_page):
    user = get_user_model().objects.create_user(username=USERNAME, password=PASSWORD, is_staff=True, is_superuser=True)
    rule = _rule_with_a_condition(user)
    page = chromium_page
    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")
    page.goto(f"{live_server.url}/admin/rules/rule/{rule.pk}/change/")
    page.wait_for_selector("#id_conditions-0-kind")

    def shown(name: str) -> bool:
        return page.locator(f"#id_conditions-0-{name}").is_visible()

    def help_of(name: str) -> str:
        return page.inner_text(f"#id_conditions-0-{name}_helptext").strip()

    form = ConditionForm()
    default_help = {name: str(form.fields[name].help_text) for name in INPUTS if form.fields[name].help_text}
    for kind, adapter in ADAPTERS.items():
        page.select_option("#id_conditions-0-kind", kind)
        assert {name for name in INPUTS if shown(name)} == set(adapter.inputs), kind
        for name in set(adapter.inputs) & set(default_help):
            assert help_of(name) == adapter.help_texts.get(name, default_help[name]), (kind, name)
    page.select_option("#id_conditions-0-kind", "fact_matches")
    assert help_of("value").startswith("The regular expression the fact must match")
    page.select_option("#id_conditions-0-kind", "fact")
    assert help_of("value").startswith("Compare with this instead of a threshold")

    # A fact_matches condition typed in the browser is saved as typed, and decided on.
    page.fill("#id_conditions-0-fact", "order_no")
    page.select_option("#id_conditions-0-kind", "fact_matches")
    page.fill("#id_conditions-0-value", r"^E\d{10}$")
    page.fill("#id_change_reason", "Express orders by their number")
    page.click("input[name=_save]")
    page.wait_for_selector(".messagelist .success")
    condition = rule.conditions.get()
    assert (condition.kind, condition.fact, condition.value) == ("fact_matches", "order_no", r"^E\d{10}$")
    assert (condition.threshold, condition.operator) == (None, "")
