from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from agents.runtimes.models import AgentRuntime
from agents.runtimes.selectors import agent_get_by_token
from agents.runtimes.services import token_hash
from rules.config.records import point_save
from rules.models import DecisionPoint

pytestmark = pytest.mark.django_db


@pytest.fixture
def points():
    return [
        point_save(
            point=DecisionPoint(key=key, outcomes=["yes", "no"], default_outcome="no"), actor=None, reason="test"
        )
        for key in ("intent_routing", "refund_approval")
    ]


def run(*args: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    call_command("create_agent", *args, stdout=out, stderr=err)
    return out.getvalue()


def test_create_agent_prints_token_once_and_stores_only_its_hash(points):
    out = run("support_bot", "--points", "intent_routing,refund_approval")
    token = out.strip().splitlines()[-1]
    assert token.startswith("arb_") and len(token) > 40

    agent = AgentRuntime.objects.get(name="support_bot")
    assert agent.token_hash == token_hash(token)
    assert token not in agent.token_hash
    stored = [str(v) for v in AgentRuntime.objects.filter(pk=agent.pk).values().first().values()]
    assert all(token not in value for value in stored)
    history = agent.history.first()
    assert not hasattr(history, "token_hash")
    assert sorted(p.key for p in agent.points.all()) == ["intent_routing", "refund_approval"]
    assert agent_get_by_token(token=token) == agent


def test_rotate_replaces_the_token_and_the_old_one_stops_working(points):
    old = run("support_bot", "--points", "intent_routing").strip().splitlines()[-1]
    new = run("support_bot", "--rotate").strip().splitlines()[-1]
    assert new != old
    assert agent_get_by_token(token=old) is None
    assert agent_get_by_token(token=new).name == "support_bot"


def test_unknown_point_is_refused_and_nothing_is_created(points):
    with pytest.raises(CommandError, match="Unknown decision point: nope"):
        run("bot", "--points", "intent_routing,nope")
    assert not AgentRuntime.objects.exists()


def test_duplicate_name_and_rotate_of_missing_agent_are_refused(points):
    run("bot")
    with pytest.raises(CommandError, match="exists"):
        run("bot")
    with pytest.raises(CommandError, match="No agent named"):
        run("ghost", "--rotate")


def test_every_history_row_of_a_points_change_says_who_and_why(points, actor):
    from agents.runtimes.services import agent_create, agent_set_points

    agent, _ = agent_create(name="bot", point_keys=["intent_routing"], actor=actor, reason="created")
    agent_set_points(agent=agent, point_keys=["refund_approval"], actor=actor, reason="moved to refunds")
    rows = list(agent.history.values_list("history_user", "history_change_reason"))
    assert rows and all(user == actor.pk and why for user, why in rows)
    assert rows[0] == (actor.pk, "moved to refunds")
