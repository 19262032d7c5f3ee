"""The admin index's governance panel: what waits for the signed-in user."""

from __future__ import annotations

from typing import Any

from django import template
from django.urls import reverse

from rules.governance.selectors import change_requests_under_review, change_requests_waiting_for

register = template.Library()


@register.inclusion_tag("admin/arbiter/includes/governance_panel.html", takes_context=True)
def governance_panel(context: Any) -> dict[str, Any]:
    user = context["request"].user
    waiting = list(change_requests_waiting_for(user=user)[:20])
    reviews = list(change_requests_under_review()[:20])
    return {
        "waiting": waiting,
        "reviews": reviews,
        "list_url": reverse("admin:rules_changerequest_changelist") + "?state=pending",
    }
