"""Per-agent rate limit: a token bucket per agent, in Redis with a broker, in memory otherwise.

The API tests run against whichever store this run has (in-process by default; Redis when
``CELERY_BROKER_URL=redis://…``, as in CI's PostgreSQL run); the store tests below run each store directly,
Redis only when one is configured.
"""

from __future__ import annotations

import os
import threading
import time
import uuid

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from agents.runtimes.models import AgentRuntime
from agents.runtimes.ratelimit import KEY_PREFIX, LocalBuckets, RedisBuckets, buckets
from agents.runtimes.services import agent_create, agent_save
from tests.support import post

REDIS_URL = os.environ.get("CELERY_BROKER_URL", "")
needs_redis = pytest.mark.skipif(
    not REDIS_URL.startswith("redis://"), reason="needs Redis: set CELERY_BROKER_URL=redis://…"
)


@pytest.fixture(autouse=True)
def _empty_buckets():
    """Buckets outlive a test (in memory or in Redis) and agent ids are reused after a rollback."""

    def empty():
        store = buckets()
        if isinstance(store, RedisBuckets):
            client = store._client
            for key in client.scan_iter(f"{KEY_PREFIX}*"):
                client.delete(key)
        buckets.cache_clear()

    empty()
    yield
    empty()


def _agent(name: str, *, rate: int | None, burst: int | None = None) -> APIClient:
    _, token = agent_create(
        name=name,
        point_keys=["intent_routing", "refund_approval"],
        actor=None,
        reason="t",
        rate_per_minute=rate,
        rate_burst=burst,
    )
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return c


def _decide(c: APIClient):
    return post(c, "/api/v1/decisions", {"point": "refund_approval", "facts": {"refund_amount": 10}})


def test_the_store_is_redis_with_a_broker_and_memory_without():
    expected = RedisBuckets if settings.CELERY_BROKER_URL.startswith("redis://") else LocalBuckets
    assert isinstance(buckets(), expected)


@pytest.mark.django_db
def test_an_agent_over_its_limit_gets_429_problem_json_with_retry_after(demo):
    c = _agent("limited", rate=1, burst=3)
    assert [_decide(c).status_code for _ in range(3)] == [201, 201, 201]
    refused = _decide(c)
    assert refused.status_code == 429
    assert refused["Content-Type"] == "application/problem+json"
    body = refused.json()
    assert (body["code"], body["status"], body["title"]) == ("rate_limited", 429, "Too many requests")
    retry = int(refused["Retry-After"])
    assert 1 <= retry <= 60  # one token a minute
    assert "1 requests a minute (burst 3)" in body["detail"]


@pytest.mark.django_db
def test_the_limit_is_per_agent_and_an_agent_without_one_is_not_limited(demo):
    limited = _agent("limited", rate=1, burst=1)
    other = _agent("other", rate=1, burst=1)
    free = _agent("free", rate=None)
    assert _decide(limited).status_code == 201
    assert _decide(limited).status_code == 429
    assert _decide(other).status_code == 201  # its own bucket
    assert {_decide(free).status_code for _ in range(30)} == {201}


@pytest.mark.django_db
def test_burst_defaults_to_the_rate_per_minute(demo):
    c = _agent("limited", rate=4)
    assert [_decide(c).status_code for _ in range(5)] == [201, 201, 201, 201, 429]


@pytest.mark.django_db
def test_every_agent_operation_is_limited(demo):
    c = _agent("limited", rate=1, burst=1)
    assert post(c, "/api/v1/sessions", {"session_id": "s1", "machine": "after_sales"}).status_code == 201
    requests = [
        lambda: post(c, "/api/v1/decisions", {"point": "refund_approval", "facts": {"refund_amount": 1}}),
        lambda: c.get("/api/v1/decisions/1"),
        lambda: c.get("/api/v1/decisions/1/replay"),
        lambda: c.get("/api/v1/points"),
        lambda: c.get("/api/v1/points/refund_approval"),
        lambda: post(c, "/api/v1/sessions", {"session_id": "s2", "machine": "after_sales"}),
        lambda: c.get("/api/v1/sessions/s1"),
        lambda: post(c, "/api/v1/sessions/s1/transitions", {"to": "x", "expected_state": "y"}),
        lambda: post(c, "/api/v1/sessions/s1/actions", {"action": "x"}),
        lambda: post(c, "/api/v1/sessions/s1/interrupt", {"to": "x"}),
        lambda: post(c, "/api/v1/sessions/s1/resume", {}),
        lambda: post(c, "/api/v1/sessions/s1/anomalies", {"code": "x"}),
    ]
    for send in requests:
        response = send()
        assert response.status_code == 429, (response.request["PATH_INFO"], response.content)
        assert response.json()["code"] == "rate_limited"


@pytest.mark.django_db
def test_a_request_without_a_valid_token_is_401_not_counted(demo):
    c = _agent("limited", rate=1, burst=1)
    stranger = APIClient()
    stranger.credentials(HTTP_AUTHORIZATION="Bearer not-a-token")
    assert {_decide(stranger).status_code for _ in range(3)} == {401}
    assert _decide(c).status_code == 201


@pytest.mark.django_db
def test_a_new_limit_applies_on_the_next_request(demo):
    c = _agent("limited", rate=None)
    assert {_decide(c).status_code for _ in range(3)} == {201}
    agent = AgentRuntime.objects.get(name="limited")
    agent.rate_per_minute, agent.rate_burst = 1, 1
    agent_save(agent=agent, actor=None, reason="runaway")
    assert [_decide(c).status_code for _ in range(2)] == [201, 429]


@pytest.mark.django_db
def test_the_limit_adds_no_database_query(demo):
    limited, free = _agent("limited", rate=1000), _agent("free", rate=None)
    _decide(limited), _decide(free)  # warm: engine compiled, revision known
    with CaptureQueriesContext(connection) as with_limit:
        assert _decide(limited).status_code == 201
    with CaptureQueriesContext(connection) as without:
        assert _decide(free).status_code == 201
    assert len(with_limit) == len(without)


# --- The stores, directly --------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_memory_bucket_refills_at_its_rate_up_to_its_burst():
    clock = Clock()
    store = LocalBuckets(clock)
    take = lambda: store.take("a", rate_per_minute=60, burst=2)  # noqa: E731 - one token a second
    assert (take(), take()) == (0.0, 0.0)
    assert take() == pytest.approx(1.0)
    clock.now += 0.5
    assert take() == pytest.approx(0.5)
    clock.now += 0.5
    assert take() == 0.0
    clock.now += 3600  # a long pause fills it to the burst, no further
    assert (take(), take()) == (0.0, 0.0)
    assert take() > 0
    assert store.take("b", rate_per_minute=60, burst=2) == 0.0  # another key, another bucket


def _race(take, threads: int = 24) -> int:
    start = threading.Barrier(threads)
    allowed: list[bool] = []
    lock = threading.Lock()

    def one():
        start.wait()
        ok = take() == 0.0
        with lock:
            allowed.append(ok)

    workers = [threading.Thread(target=one) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return sum(allowed)


def test_memory_bucket_under_concurrent_takes_allows_exactly_the_burst():
    store = LocalBuckets()
    assert _race(lambda: store.take("a", rate_per_minute=1, burst=5)) == 5


@needs_redis
def test_redis_bucket_under_concurrent_takes_allows_exactly_the_burst():
    store = RedisBuckets(REDIS_URL)
    key = f"{KEY_PREFIX}test:{uuid.uuid4()}"
    assert _race(lambda: store.take(key, rate_per_minute=1, burst=5)) == 5
    wait = store.take(key, rate_per_minute=1, burst=5)
    assert 0 < wait <= 60
    assert 0 < store._client.ttl(key) <= 5 * 60 + 1  # it goes away once it would be full again
    store._client.delete(key)


@needs_redis
def test_redis_bucket_is_shared_and_refills():
    one, two = RedisBuckets(REDIS_URL), RedisBuckets(REDIS_URL)  # two processes' clients
    key = f"{KEY_PREFIX}test:{uuid.uuid4()}"
    assert one.take(key, rate_per_minute=600, burst=2) == 0.0
    assert two.take(key, rate_per_minute=600, burst=2) == 0.0
    assert one.take(key, rate_per_minute=600, burst=2) > 0  # the second client took the last token
    deadline = time.monotonic() + 10  # ten tokens a second: one is back well before this
    while one.take(key, rate_per_minute=600, burst=2) > 0:
        assert time.monotonic() < deadline, "the bucket never refilled"
        time.sleep(0.02)
    one._client.delete(key)
