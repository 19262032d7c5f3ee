"""Redis stopped: decisions are still served, and an agent's rate limit still holds, per process.

Real parts: a Redis and a PostgreSQL of the test's own, bin/serve's gunicorn with two workers and the
production settings with that Redis as the Celery broker (so the rate limit's buckets live in it).
"""

from __future__ import annotations

import time

import pytest
import redis

from tests.support.faults import PG_BIN, Client, postgres, prepare, production_env, redis_server, serving

pytestmark = pytest.mark.skipif(not (PG_BIN / "initdb").exists(), reason="needs PostgreSQL's server binaries")

WORKERS = 2
BURST = 3

AGENTS = """
import json
from agents.runtimes.services import agent_create
made = {}
for name, rate, burst in (("limited", 1, 3), ("watched", 600, 600)):
    agent, token = agent_create(
        name=name, point_keys=["intent_routing"], actor=None, reason="fault test",
        rate_per_minute=rate, rate_burst=burst,
    )
    made[name] = [agent.pk, token]
result = made
"""


def decide(client: Client, token: str, n: int) -> int:
    body = {
        "point": "intent_routing",
        "input": f"where is my parcel {n}",
        "candidate": {"decision": "general_query", "confidence": 0.9},
    }
    return client.request("POST", "/api/v1/decisions", body, {"Authorization": f"Bearer {token}"}).status


def test_with_redis_stopped_decisions_are_served_and_rate_limits_hold_per_process():
    with postgres() as pg, redis_server() as broker:
        env = production_env(DATABASE_URL=pg.url, CELERY_BROKER_URL=broker.url)
        token, agents = prepare(env, AGENTS)
        (limited_pk, limited), (watched_pk, watched) = agents["limited"], agents["watched"]
        buckets = redis.Redis.from_url(broker.url)

        with serving(env, workers=WORKERS) as port:
            client = Client(port)
            assert decide(client, token, 0) == 201
            assert decide(client, limited, 0) == 201
            assert buckets.exists(f"arbiter:rate:agent:{limited_pk}")  # the shared bucket, in Redis

            broker.stop()
            # Decisions and sessions (neither enqueues a task) are served without Redis.
            assert [decide(client, token, n) for n in range(1, 11)] == [201] * 10
            started = client.request(
                "POST", "/api/v1/sessions", {"machine": "after_sales"}, {"Authorization": f"Bearer {token}"}
            )
            assert started.status == 201
            # The limited agent (1 a minute, burst 3) is held by each worker's own bucket meanwhile: at
            # most a burst per worker, and its first request here found its shared bucket unreachable.
            statuses = [decide(client, limited, n) for n in range(1, 11)]
            assert set(statuses) <= {201, 429}
            assert 1 <= statuses.count(201) <= WORKERS * BURST

            broker.start()
            # Each worker asks Redis again a few seconds after it found it gone: the shared bucket is back.
            deadline = time.monotonic() + 60
            n = 0
            while not buckets.exists(f"arbiter:rate:agent:{watched_pk}"):
                assert time.monotonic() < deadline, "the rate limit did not go back to Redis"
                n += 1
                assert decide(client, watched, n) == 201
                time.sleep(0.2)
