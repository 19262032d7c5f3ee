"""The admin index's human queue panel: how many sessions wait for a person, and how many are yours."""

from __future__ import annotations

from typing import Any

from django import template
from django.urls import reverse

from agents.queue.selectors import MINE, UNCLAIMED, session_human_queue

register = template.Library()


@register.inclusion_tag("admin/arbiter/includes/human_queue_panel.html", takes_context=True)
def human_queue_panel(context: Any) -> dict[str, Any]:
    user = context["request"].user
    queue = session_human_queue()
    url = reverse("admin:agents_session_human_queue")
    return {
        "visible": user.has_perm("agents.view_session"),
        "waiting": queue.count(),
        "unclaimed": queue.filter(claimed_by__isnull=True).count(),
        "mine": queue.filter(claimed_by_id=user.pk).count(),
        "url": url,
        "unclaimed_url": f"{url}?holder={UNCLAIMED}",
        "mine_url": f"{url}?holder={MINE}",
    }
