"""What many tests need: the demo configuration and an API client holding an agent token.

The fixtures built on these (``demo``, and the autouse engine reset) are in ``tests/conftest.py``;
modules import the helpers from here rather than copying them.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rest_framework.test import APIClient

from agents.runtimes.services import agent_create
from rules.config.yaml_import import config_import

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "demo" / "after_sales.yaml"
DEMO_TEXT = DEMO.read_text(encoding="utf-8")
DEMO_POINTS = ("intent_routing", "refund_approval")
# A rule of intent_routing that only a session's state can trigger: in any other state it answers otherwise.
UNDER_REVIEW_RULE = {
    "key": "under_review",
    "description": "While a refund is reviewed, everything goes to a person.",
    "priority": 5,
    "category": "business",
    "outcome": "human_handoff",
    "conditions": [{"session_state_in": ["refund_review"]}],
}


def load_demo(*, actor: Any = None, reason: str = "test demo") -> None:
    """The after-sales demo, imported as an operator would (one revision, history rows)."""
    config_import(text=DEMO_TEXT, source=str(DEMO), actor=actor, reason=reason)


def agent_api(name: str = "support_bot", points: Iterable[str] = DEMO_POINTS, *, actor: Any = None) -> APIClient:
    """DRF's test client with a new agent's bearer token (the agent may call ``points``)."""
    _, token = agent_create(name=name, point_keys=list(points), actor=actor, reason="test agent")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def reviewed_digest(request: Any) -> str:
    """The digest of a change request as stored now: what an approver who just read it would name."""
    from rules.governance.change_requests import change_request_digest
    from rules.models import ChangeRequest

    return change_request_digest(ChangeRequest.objects.get(pk=request.pk).changes)


# The groups migrations create, by the migration that makes each one.
GROUP_MIGRATIONS = {
    "config_editors": ("rules.migrations.0009_governance_groups", "create_groups"),
    "risk_approvers": ("rules.migrations.0009_governance_groups", "create_groups"),
    "queue_operators": ("agents.migrations.0008_queue_claims", "create_group"),
}


def groups_ensure() -> None:
    """The groups (with their permissions) as their migrations make them: a transactional test's flush
    empties the tables after the migrations ran, so a test that runs after one makes them again the
    same way."""
    import importlib

    from django.apps import apps
    from django.contrib.auth.models import Group

    present = set(Group.objects.filter(name__in=GROUP_MIGRATIONS).values_list("name", flat=True))
    for module, function in {GROUP_MIGRATIONS[name] for name in GROUP_MIGRATIONS.keys() - present}:
        getattr(importlib.import_module(module), function)(apps, None)
