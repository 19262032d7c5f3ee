from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from agents.runtimes.models import AgentRuntime
from agents.sessions.decide import decision_make
from agents.sessions.interrupts import session_interrupt
from agents.sessions.services import session_create, session_transition
from rules.decisions.compute import DecideRequest
from tests.support import ADDRESS_FIELDS, DEMO, SESSIONS, agent_token, load_demo


@pytest.fixture
def live_demo(live_server, transactional_db):
    """The real HTTP server (another thread of this process) with the after-sales demo loaded."""
    load_demo(reason="api test demo")
    return live_server


@pytest.fixture
def live_token(live_demo) -> str:
    return agent_token("api_bot", reason="api test")


@pytest.fixture
def live_sessions(live_token) -> dict[str, str]:
    """The sessions of ``SESSIONS`` for the token's agent, and a decision of its: ``{"decision_id": …}``."""
    agent = AgentRuntime.objects.get(name="api_bot")
    for key, (machine, moves) in SESSIONS.items():
        state = session_create(agent=agent, machine_key=machine, session_id=key).state
        for kind, to in moves:
            if kind == "interrupt":
                state = session_interrupt(agent=agent, session_id=key, to=to, expected_state=state).state
                continue
            updates = ADDRESS_FIELDS if to == "executing" else None  # what the demo's executing requires
            state = session_transition(agent=agent, session_id=key, to=to, expected_state=state, updates=updates).state
    made = decision_make(agent=agent, request=DecideRequest(point="refund_approval", session_id="s2"))
    assert made.record is not None
    return {"decision_id": str(made.record.pk)}


@pytest.fixture
def agent_client(db) -> APIClient:
    """Django's test client (no server) with the demo loaded and an agent token."""
    load_demo(reason="api test demo")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {agent_token('api_bot', reason='api test')}")
    client.raise_request_exception = False  # a server error is an answer to check, not a test crash
    return client


@pytest.fixture
def live_staff(live_sessions) -> dict[str, Any]:
    """A superuser's staff token, a change request waiting for approval and a session in the human
    queue (``s3``): ``{"token", "request_id", "session_pk"}``."""
    from django.contrib.auth import get_user_model

    from agents.sessions.models import Session
    from rules.config.document.validate import config_from_yaml
    from rules.governance.change_requests import change_request_propose
    from rules.governance.tokens import staff_token_create

    user = get_user_model().objects.create_superuser(username="fuzz_admin", password="fuzz-admin-pw-1")
    text = DEMO.read_text(encoding="utf-8")
    raised = text.replace("value: 500", "value: 750", 1)
    assert raised != text
    pending = change_request_propose(document=config_from_yaml(raised), actor=user, reason="fuzzing")
    assert pending.state == "pending", pending.state
    queued = Session.objects.get(key="s3")
    assert queued.state == queued.machine.handoff_state
    return {"token": staff_token_create(user=user), "request_id": pending.pk, "session_pk": queued.pk}
