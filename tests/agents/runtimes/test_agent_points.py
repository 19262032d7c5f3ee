"""Staff grant and revoke an agent's points without touching its token (``manage.py agent_points``)."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from agents.runtimes.models import AgentRuntime
from agents.runtimes.selectors import agent_get_by_token
from agents.runtimes.services import agent_create
from rules.config.records import point_save
from rules.config.revisions import revision_create
from rules.config.selectors import config_document
from rules.models import DecisionPoint, Rule

pytestmark = pytest.mark.django_db


@pytest.fixture
def points():
    return [
        point_save(
            point=DecisionPoint(key=key, outcomes=["yes", "no"], default_outcome="no"), actor=None, reason="test"
        )
        for key in ("intent_routing", "refund_approval", "escalation")
    ]


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("agent_points", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def keys(agent: AgentRuntime) -> list[str]:
    return sorted(p.key for p in AgentRuntime.objects.get(pk=agent.pk).points.all())


def test_grant_and_revoke_keep_the_token_and_the_other_points(points, actor):
    agent, token = agent_create(name="bot", point_keys=["intent_routing", "escalation"], actor=actor, reason="new")
    before = AgentRuntime.objects.get(pk=agent.pk).token_hash

    out = run("bot", "--add", "refund_approval", "--remove", "escalation", "--user", actor.username, "--reason", "r1")

    assert "intent_routing, refund_approval" in out
    assert keys(agent) == ["intent_routing", "refund_approval"]
    assert AgentRuntime.objects.get(pk=agent.pk).token_hash == before
    assert agent_get_by_token(token=token).pk == agent.pk
    newest = agent.history.first()
    assert (newest.history_user_id, newest.history_change_reason) == (actor.pk, "r1")


def test_granting_is_applied_at_once_even_at_a_point_with_a_compliance_rule(points, actor):
    # The four-eyes gate is on: a point with a high-risk rule still takes a new agent at once, because
    # which agents may ask a point changes no rule's decision.
    # Set up as already live (a revision of it): the gate then judges only the agent's change.
    Rule.objects.create(point=points[1], key="kyc", category="compliance", outcome="no", priority=1)
    revision_create(actor=actor, reason="baseline", snapshot=config_document())
    agent, _ = agent_create(name="bot", point_keys=[], actor=actor, reason="new")
    run("bot", "--add", "refund_approval", "--user", actor.username)
    assert keys(agent) == ["refund_approval"]


def test_repeated_and_comma_separated_keys_and_an_already_granted_point(points, actor):
    agent, _ = agent_create(name="bot", point_keys=["intent_routing"], actor=actor, reason="new")
    run("bot", "--add", "intent_routing,refund_approval", "--add", "escalation")
    assert keys(agent) == ["escalation", "intent_routing", "refund_approval"]
    run("bot", "--remove", "intent_routing", "--remove", "escalation,refund_approval")
    assert keys(agent) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("bot", "--add", "nope"), "Unknown decision point: nope"),
        (("bot", "--remove", "nope"), "Unknown decision point: nope"),
        (("bot", "--add", "escalation", "--remove", "escalation"), "Both granted and revoked: escalation"),
        (("bot",), "Name a point"),
        (("ghost", "--add", "escalation"), "No agent named 'ghost'"),
        (("bot", "--add", "escalation", "--user", "nobody"), "No user named 'nobody'"),
    ],
)
def test_refusals_change_nothing(points, actor, args, message):
    agent, _ = agent_create(name="bot", point_keys=["intent_routing"], actor=actor, reason="new")
    rows = agent.history.count()
    with pytest.raises(CommandError, match=message):
        run(*args)
    assert keys(agent) == ["intent_routing"]
    assert agent.history.count() == rows
