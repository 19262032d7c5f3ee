"""What many tests need: the demo configuration, an API client holding an agent token, users, approval.

The fixtures built on these (``demo``, the four-eyes gate, the engine reset) are in ``tests/conftest.py``;
modules import the helpers from here (and from this package's modules) rather than copying them or
importing them from another test module or a conftest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from rest_framework.test import APIClient

from agents.runtimes.services import agent_create
from rules.config.yaml_import import ImportResult, config_import

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "demo" / "after_sales.yaml"
DEMO_TEXT = DEMO.read_text(encoding="utf-8")
SPEC = ROOT / "docs" / "openapi.yaml"
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


# What the demo's change_address machine requires to enter executing (its fields' required_in).
ADDRESS_FIELDS = {"new_address": "杭州市西湖区文三路138号", "receiver_phone": "13800138000"}

# Sessions the fuzzing addresses, in different places of the demo's two machines: id → (machine, moves).
# A move is ("to", state) or ("interrupt", state), each from the state the previous one reached.
SESSIONS: dict[str, tuple[str, list[tuple[str, str]]]] = {
    "s1": ("after_sales", []),
    "s2": ("after_sales", [("to", "received")]),
    "s3": ("after_sales", [("to", "received"), ("interrupt", "intent_clarify"), ("interrupt", "human_handoff")]),
    "s4": ("after_sales", [("to", "received"), ("to", "closed")]),
    "c1": ("change_address", []),
    "c2": ("change_address", [("to", "awaiting_intent"), ("to", "collecting_params")]),
    "c3": ("change_address", [("to", "awaiting_intent"), ("to", "collecting_params"), ("to", "executing")]),
}


def load_demo(*, actor: Any = None, reason: str = "test demo") -> ImportResult:
    """The after-sales demo, imported as an operator would (one revision, history rows). As the first
    configuration of an installation it applies at once, gate or no gate; on a database that already
    holds a configuration its high-risk changes would wait for approval like any other import."""
    return config_import(text=DEMO_TEXT, source=str(DEMO), actor=actor, reason=reason)


def make_user(username: str, *groups: str, **extra: Any) -> Any:
    """A staff user in the named groups (``config_editors``, ``risk_approvers``, ``queue_operators``)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    groups_ensure()
    user = get_user_model().objects.create_user(
        username=username, password="pw-" + username + "-123", email=f"{username}@example.com", is_staff=True, **extra
    )
    for name in groups:
        user.groups.add(Group.objects.get(name=name))
    return user


def agent_token(
    name: str = "support_bot", points: Iterable[str] = DEMO_POINTS, *, actor: Any = None, reason: str = "test agent"
) -> str:
    """A new agent's bearer token (the agent may call ``points``)."""
    _, token = agent_create(name=name, point_keys=list(points), actor=actor, reason=reason)
    return token


def agent_api(name: str = "support_bot", points: Iterable[str] = DEMO_POINTS, *, actor: Any = None) -> APIClient:
    """DRF's test client with a new agent's bearer token (the agent may call ``points``)."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {agent_token(name, points, actor=actor)}")
    return client


def post(client: APIClient, path: str, body: Any, **headers: Any) -> Any:
    """A JSON POST through DRF's test client."""
    return client.post(path, body, format="json", **headers)


def decide(client: APIClient, body: Any, **headers: Any) -> Any:
    """A decide call: ``POST /api/v1/decisions`` with a JSON body."""
    return post(client, "/api/v1/decisions", body, **headers)


def approved(write: Callable[[], T], *, approver: Any = None) -> T | Any:
    """Run a configuration write through the four-eyes gate as the product does: if it is held for
    approval (``ApprovalRequired``, or an import whose result names the request it became), a second
    person (a risk approver, made here unless given) approves the change request, naming the digest they
    read. Returns what ``write`` returned, or the applied change request."""
    from rules.errors import ApprovalRequired
    from rules.governance.change_requests import change_request_approve

    request: Any
    try:
        result = write()
    except ApprovalRequired as held:
        request = held.change_request
    else:
        request = getattr(result, "change_request", None)
        if request is None:
            return result
    approver = approver or make_user(f"approver_of_{request.pk}", "risk_approvers")
    done = change_request_approve(
        request=request, actor=approver, digest=reviewed_digest(request), reason="test: a second person approves"
    )
    assert done.state == "applied", done.state
    return done


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

# Permissions later migrations add to those groups: (group, migration, function).
GROUP_GRANTS = [
    ("config_editors", "rules.migrations.0026_tool_contract_permissions", "grant"),
    ("config_editors", "rules.migrations.0031_mcp_server_permissions", "grant"),
    ("risk_approvers", "rules.migrations.0032_mcp_tool_drift", "grant"),
    ("queue_operators", "agents.migrations.0019_webhooks", "grant"),
]


def groups_ensure() -> None:
    """The groups (with their permissions) as their migrations make them: a transactional test's flush
    empties the tables after the migrations ran, so a test that runs after one makes them again the
    same way."""
    import importlib

    from django.apps import apps
    from django.contrib.auth.models import Group

    present = set(Group.objects.filter(name__in=GROUP_MIGRATIONS).values_list("name", flat=True))
    missing = GROUP_MIGRATIONS.keys() - present
    for module, function in {GROUP_MIGRATIONS[name] for name in missing}:
        getattr(importlib.import_module(module), function)(apps, None)
    if missing & {group for group, _, _ in GROUP_GRANTS}:
        for _, module, function in GROUP_GRANTS:
            getattr(importlib.import_module(module), function)(apps, None)


class FakeClock:
    """A monotonic clock that moves only when a test moves it (``clock.now += seconds``)."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def move_of(body: dict) -> dict:
    """The move in an answer that carries one (a move's answer, or a decide's ``session`` with apply):
    ``from``, ``state`` and ``seq``, without the rest of the session object."""
    return {key: body[key] for key in ("from", "state", "seq")}


def without_session(body: dict) -> dict:
    """An answer without its session object (whose shape tests/api/test_session_object.py pins down)."""
    return {key: value for key, value in body.items() if key != "session"}
