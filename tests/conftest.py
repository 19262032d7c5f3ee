from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import translation

from agents.sessions.reads import sessions_seen_forget
from rules.config.runtime import engines
from tests.support import FakeClock, load_demo
from tests.support.breakers import breakers_forget_all
from tests.support.worker import Worker, celery_worker


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


@pytest.fixture(autouse=True)
def _fresh_breakers():
    # With Redis, tools' breakers live there and outlive each test's database: forget them after each.
    yield
    breakers_forget_all()


@pytest.fixture(autouse=True)
def _default_language():
    # A request in zh-hans (Accept-Language, the language cookie) leaves that language active in the
    # thread after the test client returns: messages compared in later tests would come out in Chinese.
    yield
    translation.activate(settings.LANGUAGE_CODE)


@pytest.fixture
def demo(db):
    """The after-sales demo as the live configuration: revision 1, imported by nobody in particular (the
    first configuration applies at once, so the four-eyes gate lets it through). Returns the import's
    result."""
    result = load_demo()
    assert result.revision == 1
    return result


# The clock the engine cache reads to know when to look for a new revision, and with it the principal
# cache (ARBITER_REVISION_CHECK_SECONDS): the project's seam for time passing on the request path.
REVISION_CHECK_CLOCK = "rules.config.runtime.time.monotonic"


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    """A fake monotonic clock for the revision check: a test moves ``clock.now`` instead of sleeping."""
    fake = FakeClock()
    monkeypatch.setattr(REVISION_CHECK_CLOCK, fake)
    return fake


@pytest.fixture
def worker(transactional_db) -> Iterator[Worker]:
    """A real Celery worker process on a queue of its own, for a test that sends tasks through Redis."""
    with celery_worker() as running:
        yield running


@pytest.fixture
def staff_user(db):
    User = get_user_model()
    return User.objects.create_user(username="ops", password="ops-password-1", is_staff=True, is_superuser=True)


@pytest.fixture
def actor(staff_user):
    return staff_user


# The function the configuration seam asks whether a change must wait for approval. Tests replace it here
# and nowhere else; if the gate moves, this line moves with it.
GOVERNANCE_GATE = "rules.config.revisions.governance_gate"


@pytest.fixture(autouse=True)
def _four_eyes_gate(request, monkeypatch):
    """The four-eyes gate holds in every test, as it does in every path of the product: a new write path
    is tested against approval unless its test says otherwise. A test that builds configuration step by
    step and is about something else opts out with ``@pytest.mark.applies_config_at_once(reason=...)``
    (or a module's ``pytestmark``); its high-risk changes then apply at once, as the first configuration
    of an installation does. The reason is required, so that every opt-out says why it is one."""
    marker = request.node.get_closest_marker("applies_config_at_once")
    if marker is None:
        return
    reason = marker.kwargs.get("reason", marker.args[0] if marker.args else "")
    if not isinstance(reason, str) or not reason.strip():
        pytest.fail(
            "applies_config_at_once needs reason=...: say why this test may skip the four-eyes gate", pytrace=False
        )
    monkeypatch.setattr(GOVERNANCE_GATE, lambda change, snapshot: None)
