from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from agents.sessions.reads import sessions_seen_forget
from rules.config.runtime import engines
from tests.support import load_demo


@pytest.fixture(autouse=True)
def _fresh_engines():
    # Compiled engines are cached per process and keyed by revision, and every test database starts
    # again at revision 1: never let one test see another's engine.
    engines.clear()
    yield
    engines.clear()


@pytest.fixture(autouse=True)
def _fresh_session_guesses():
    # The states decides last saw sessions in are kept per process by (agent id, session key); ids come
    # again in another test's database, and a guess from there would change what a test counts.
    sessions_seen_forget()
    yield
    sessions_seen_forget()


@pytest.fixture
def demo(db):
    """The after-sales demo configuration (revision 1)."""
    load_demo()


@pytest.fixture
def staff_user(db):
    User = get_user_model()
    return User.objects.create_user(username="ops", password="ops-password-1", is_staff=True, is_superuser=True)


@pytest.fixture
def actor(staff_user):
    return staff_user


@pytest.fixture(autouse=True)
def _config_changes_apply_at_once(request, monkeypatch):
    """Most tests build configuration step by step and are about something else than approval: their
    high-risk changes apply at once, as the first configuration of an installation does. Tests marked
    ``governed`` keep the real gate — they are the four-eyes tests, one for every path a change can take."""
    if request.node.get_closest_marker("governed") is None:
        monkeypatch.setattr("rules.config.revisions.governance_gate", lambda change, snapshot: None)
