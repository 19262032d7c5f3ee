"""The database itself refuses records that bypass validation (raw ORM writes, other clients)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import IntegrityError, transaction

from rules.models import Condition, DecisionPoint, KeywordList, KeywordTerm, Rule, Threshold

pytestmark = pytest.mark.django_db


def refused(make) -> bool:
    try:
        with transaction.atomic():
            make()
    except IntegrityError:
        return True
    return False


@pytest.fixture
def point():
    return DecisionPoint.objects.create(key="p", outcomes=["a", "b"], default_outcome="a")


@pytest.fixture
def rule(point):
    return Rule.objects.create(point=point, key="r", priority=1, category="risk", outcome="a")


def test_threshold_value_outside_bounds_and_inverted_bounds():
    assert refused(lambda: Threshold.objects.create(key="t", value=2, min_value=0, max_value=1))
    assert refused(lambda: Threshold.objects.create(key="t", value=-1, min_value=0, max_value=1))
    assert refused(lambda: Threshold.objects.create(key="t", value=1, min_value=2, max_value=0))
    assert not refused(lambda: Threshold.objects.create(key="t", value=Decimal("0.65"), min_value=0, max_value=1))
    assert refused(lambda: Threshold.objects.create(key="t", value=0))


def test_rule_priority_category_mode_and_key(point, rule):
    assert refused(lambda: Rule.objects.create(point=point, key="r", priority=2, category="risk", outcome="a"))
    assert refused(lambda: Rule.objects.create(point=point, key="x", priority=-1, category="risk", outcome="a"))
    assert refused(lambda: Rule.objects.create(point=point, key="y", priority=1, category="vibes", outcome="a"))
    assert refused(
        lambda: Rule.objects.create(point=point, key="z", priority=1, category="risk", mode="loud", outcome="a")
    )


def test_condition_kind_needs_its_fields(rule):
    assert refused(lambda: Condition.objects.create(rule=rule, kind="input_contains"))
    assert refused(lambda: Condition.objects.create(rule=rule, kind="candidate_confidence_below"))
    assert refused(lambda: Condition.objects.create(rule=rule, kind="fact", fact="x", operator=">"))
    assert refused(lambda: Condition.objects.create(rule=rule, kind="time_window"))
    assert refused(lambda: Condition.objects.create(rule=rule, kind="telepathy"))
    assert not refused(lambda: Condition.objects.create(rule=rule, kind="fact", fact="x", operator=">", value=3))


def test_keyword_terms_unique_per_list_and_not_empty():
    kl = KeywordList.objects.create(key="k")
    KeywordTerm.objects.create(keyword_list=kl, term="退款")
    assert refused(lambda: KeywordTerm.objects.create(keyword_list=kl, term="退款"))
    assert refused(lambda: KeywordTerm.objects.create(keyword_list=kl, term=""))
