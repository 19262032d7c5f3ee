"""What ``session_create`` and the session services refuse themselves, without the API's serializers in
front: an id that could never be used as a path segment, and a NUL that PostgreSQL cannot store or compare.
The API checks the same on its fields (a nicer error), but the service is where the rule lives, so the
shell, a task or a later API gets it too."""

from __future__ import annotations

import pytest

from agents.errors import UnknownSession
from agents.runtimes.services import agent_create
from agents.sessions.models import Session
from agents.sessions.services import session_create, session_transition
from rules.config.yaml_import import config_import
from rules.errors import InvalidRequest
from tests.support import DEMO, approved

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent(db):
    text = DEMO.read_text(encoding="utf-8")
    approved(lambda: config_import(text=text, source="test", actor=None, reason="test"))
    bot, _ = agent_create(name="support_bot", point_keys=["intent_routing"], actor=None, reason="t")
    return bot


@pytest.mark.parametrize("session_id", ["a/b", "/", "   ", "\t\u3000", "a\x00b"])
def test_an_id_that_cannot_name_a_session_is_refused_and_nothing_is_written(agent, session_id):
    with pytest.raises(InvalidRequest) as refused:
        session_create(agent=agent, machine_key="after_sales", session_id=session_id)
    assert refused.value.errors == {"session_id": ["Must not contain '/'."]}
    assert not Session.objects.exists()


@pytest.mark.parametrize("context", [{"note": "a\x00b"}, {"a\x00": 1}, {"deep": [{"x": ["\x00"]}]}])
def test_a_context_holding_a_nul_is_refused_and_nothing_is_written(agent, context):
    with pytest.raises(InvalidRequest) as refused:
        session_create(agent=agent, machine_key="after_sales", session_id="s1", context=context)
    assert refused.value.errors == {"context": ["Must not contain NUL characters."]}
    assert not Session.objects.exists()


def test_both_problems_are_named_at_once(agent):
    with pytest.raises(InvalidRequest) as refused:
        session_create(agent=agent, machine_key="after_sales", session_id="a/b", context={"x": "\x00"})
    assert set(refused.value.errors) == {"session_id", "context"}


def test_an_id_with_a_nul_names_no_session_for_a_move(agent):
    session_create(agent=agent, machine_key="after_sales", session_id="s1")
    with pytest.raises(UnknownSession):
        session_transition(agent=agent, session_id="s1\x00", to="received", expected_state="init")
    assert Session.objects.get(key="s1").seq == 0


def test_an_ordinary_id_and_context_are_kept(agent):
    session = session_create(agent=agent, machine_key="after_sales", session_id="订单 1001", context={"lang": "zh"})
    assert (session.key, session.context) == ("订单 1001", {"lang": "zh"})
