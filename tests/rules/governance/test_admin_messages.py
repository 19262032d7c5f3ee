"""A high-risk change made through an inline row (a term of a list a compliance rule uses) or a revert from
the history says only that it waits; the browser test (tests/browser/test_messages_browser.py) covers the
form, delete and bulk delete."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from rules.config import records
from rules.errors import ApprovalRequired
from rules.governance.change_requests import change_request_approve
from rules.models import ChangeRequest, KeywordList, Threshold
from tests.support import reviewed_digest
from tests.support.admin import form_data


@pytest.fixture
def editor_client(client, editor):
    client.force_login(editor)
    return client


def _only_waiting(response) -> None:
    request = ChangeRequest.objects.order_by("-pk").first()
    assert response.redirect_chain[-1][0] == reverse("admin:rules_changerequest_change", args=[request.pk])
    said = [(m.level_tag, str(m)) for m in get_messages(response.wsgi_request)]
    assert said == [
        (
            "warning",
            "Nothing was changed yet: this change needs a second person's approval. "
            f"It waits in change request {request.pk}.",
        )
    ]


def test_an_inline_term_of_a_high_risk_list_says_only_that_it_waits(demo, editor, editor_client):
    keyword_list = KeywordList.objects.get(key="high_risk")
    url = reverse("admin:rules_keywordlist_change", args=[keyword_list.pk])
    data = form_data(editor_client.get(url))
    data["terms-0-term"] = "complaints"
    _only_waiting(editor_client.post(url, data, follow=True))


def test_a_revert_from_the_history_says_only_that_it_waits(demo, editor, approver, editor_client):
    threshold = Threshold.objects.get(key="auto_refund_limit")
    original = threshold.history.get()
    threshold.value = Decimal("800")
    with pytest.raises(ApprovalRequired) as held:
        records.threshold_save(threshold=threshold, actor=editor, reason="raise")
    pending = held.value.change_request
    change_request_approve(request=pending, actor=approver, digest=reviewed_digest(pending))
    url = reverse("admin:rules_threshold_simple_history", args=[threshold.pk, original.history_id])
    _only_waiting(editor_client.post(url, form_data(editor_client.get(url)), follow=True))
