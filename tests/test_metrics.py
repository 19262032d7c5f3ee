"""``GET /metrics`` in one process (the in-process registry): what the services count, the scrape-time
gauges, and who may read it. The counts over several gunicorn workers: tests/test_metrics_served.py.

The registry is the process's: tests read how much a value moved, not its absolute value.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.models import F
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from agents.runtimes.models import AgentRuntime
from agents.runtimes.services import agent_create
from agents.sessions.models import Session
from agents.sessions.services import session_create, session_transition
from rules.config.document.validate import config_from_yaml
from rules.governance.change_requests import change_request_propose
from tests.support import DEMO_TEXT, agent_api, load_demo

pytestmark = pytest.mark.django_db


def scrape(client, **extra) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get("/metrics", **extra)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.content.decode())
        for s in family.samples
    }


def value(samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_decisions_anomalies_moves_and_refusals_are_counted(client, demo, django_capture_on_commit_callbacks):
    api = agent_api("metrics_bot")
    before = scrape(client)
    decide = [
        (
            {
                "point": "intent_routing",
                "input": "我要投诉",
                "candidate": {"decision": "general_query", "confidence": 0.9},
            },
            201,
        ),
        ({"point": "intent_routing", "input": "hi", "candidate": {"decision": "close_order", "confidence": 0.95}}, 201),
        ({"point": "intent_routing", "input": "hi", "candidate": {"decision": "close_order", "confidence": 0.95}}, 201),
        ({"point": "intent_routing", "input": "hi"}, 200),  # asks for a candidate first
        ({"point": "refund_approval", "facts": {"refund_amount": 10}}, 201),
        ({"point": "intent_routing", "input": "hi", "candidate": {"decision": "fly", "confidence": 0.9}}, 201),
    ]
    with django_capture_on_commit_callbacks(execute=True):
        for body, expected in decide:
            assert api.post("/api/v1/decisions", body, format="json").status_code == expected
        session_create(agent=AgentRuntime.objects.get(name="metrics_bot"), machine_key="after_sales", session_id="m1")
    agent = AgentRuntime.objects.get(name="metrics_bot")
    with django_capture_on_commit_callbacks(execute=True):
        session_transition(agent=agent, session_id="m1", to="received", expected_state="init")
    # A replay of a logged decision (same Idempotency-Key, same body) is not counted again.
    with django_capture_on_commit_callbacks(execute=True):
        for _ in range(2):
            api.post("/api/v1/decisions", decide[1][0], format="json", HTTP_IDEMPOTENCY_KEY="k1")
    after = scrape(client)

    def moved(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    labels = {"point": "intent_routing"}
    assert moved("arbiter_decisions_total", **labels, ruled_by="hard_rule", decision="human_handoff") == 2
    assert moved("arbiter_decisions_total", **labels, ruled_by="llm_candidate", decision="close_order") == 3
    assert moved("arbiter_decisions_total", point="refund_approval", ruled_by="default", decision="auto_approve") == 1
    assert moved("arbiter_needs_candidate_total", **labels) == 1
    # Every evaluation is timed, including the one that asked for a candidate.
    assert moved("arbiter_decision_evaluation_seconds_count", **labels) == 6
    assert moved("arbiter_anomalies_total", code="candidate_not_an_outcome") == 1
    assert moved("arbiter_session_transitions_total", machine="after_sales", kind="move") == 1
    assert (
        moved("arbiter_http_request_duration_seconds_count", route="decision-create", method="POST", status="201") == 7
    )
    assert value(after, "arbiter_engine_revision", backend="native") == 1


def test_rolled_back_decisions_are_not_counted(client, demo, django_capture_on_commit_callbacks):
    from django.db import transaction

    api = agent_api("rollback_bot")
    body = {"point": "intent_routing", "input": "hi", "candidate": {"decision": "close_order", "confidence": 0.95}}
    before = scrape(client)
    labels = {"point": "intent_routing", "ruled_by": "llm_candidate", "decision": "close_order"}
    with django_capture_on_commit_callbacks(execute=True):
        try:
            with transaction.atomic():
                assert api.post("/api/v1/decisions", body, format="json").status_code == 201
                raise RuntimeError("roll it back")
        except RuntimeError:
            pass
    assert value(scrape(client), "arbiter_decisions_total", **labels) == value(
        before, "arbiter_decisions_total", **labels
    )


def test_rate_limited_requests_are_counted(client, demo):
    _, token = agent_create(
        name="limited_bot", point_keys=["intent_routing"], rate_per_minute=1, rate_burst=1, actor=None, reason="test"
    )
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    before = value(scrape(client), "arbiter_rate_limited_requests_total", agent="limited_bot")
    # A bucket may outlive a test (Redis) and agent ids are reused after a rollback: count the refusals.
    limited = [api.get("/api/v1/points").status_code for _ in range(3)].count(429)
    assert limited >= 2
    assert value(scrape(client), "arbiter_rate_limited_requests_total", agent="limited_bot") == before + limited


def test_revision_and_open_change_requests_are_read_at_scrape_time(client, actor):
    samples = scrape(client)
    assert value(samples, "arbiter_config_revision") == 0
    assert value(samples, "arbiter_change_requests_open", state="pending") == 0
    load_demo(actor=actor)
    raised = DEMO_TEXT.replace("    value: 500\n", "    value: 99999\n")
    change_request_propose(document=config_from_yaml(raised), actor=actor, reason="raise the limit")
    samples = scrape(client)
    assert value(samples, "arbiter_config_revision") == 1
    assert value(samples, "arbiter_config_revision_created_timestamp_seconds") > 0
    assert value(samples, "arbiter_change_requests_open", state="pending") == 1
    assert value(samples, "arbiter_change_requests_open", state="approved") == 0


# -- who may read it ---------------------------------------------------------------------------


def test_loopback_may_read_by_default_and_others_are_refused(client):
    assert client.get("/metrics").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="::1").status_code == 200
    refused = client.get("/metrics", REMOTE_ADDR="192.0.2.7")
    assert refused.status_code == 403
    assert refused["Content-Type"] == "application/problem+json"
    assert refused.json()["code"] == "metrics_forbidden"
    # Relayed by a proxy on this machine: the address is the proxy's, not the client's.
    assert client.get("/metrics", HTTP_X_FORWARDED_FOR="192.0.2.7").status_code == 403
    assert client.get("/metrics", HTTP_FORWARDED="for=192.0.2.7").status_code == 403
    # A proxy that names its client only in X-Real-IP (nginx's usual setup) or a CDN's header.
    for header in ("HTTP_X_REAL_IP", "HTTP_TRUE_CLIENT_IP", "HTTP_CF_CONNECTING_IP", "HTTP_X_CLIENT_IP"):
        assert client.get("/metrics", **{header: "192.0.2.7"}).status_code == 403, header


def test_allowed_networks_come_from_the_setting(client, settings):
    settings.ARBITER_METRICS_ALLOWED_CIDRS = ["10.1.0.0/16", "2001:db8::/32"]
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="2001:db8::5").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="::ffff:10.1.2.3").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 403
    assert client.get("/metrics", REMOTE_ADDR="not an address").status_code == 403


def test_with_a_token_it_is_needed_as_well(client, settings):
    settings.ARBITER_METRICS_TOKEN = "s3cret-metrics-token"
    missing = client.get("/metrics")
    assert missing.status_code == 401
    assert missing["Content-Type"] == "application/problem+json"
    assert missing.json()["code"] == "not_authenticated"
    assert missing["WWW-Authenticate"].startswith("Bearer")
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Basic s3cret-metrics-token").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-metrics-token").status_code == 200
    # Through a proxy, the token is what lets it in.
    proxied = {"HTTP_X_FORWARDED_FOR": "192.0.2.7", "HTTP_AUTHORIZATION": "Bearer s3cret-metrics-token"}
    assert client.get("/metrics", **proxied).status_code == 200
    assert (
        client.get("/metrics", HTTP_X_REAL_IP="192.0.2.7", HTTP_AUTHORIZATION=proxied["HTTP_AUTHORIZATION"]).status_code
        == 200
    )
    # The address is still checked: the token does not open it to everyone.
    assert (
        client.get("/metrics", REMOTE_ADDR="192.0.2.7", HTTP_AUTHORIZATION=proxied["HTTP_AUTHORIZATION"]).status_code
        == 403
    )


def test_only_get_and_head(client):
    refused = client.post("/metrics")
    assert refused.status_code == 405
    assert refused["Allow"] == "GET, HEAD"
    assert refused.json()["code"] == "method_not_allowed"
    assert client.head("/metrics").status_code == 200


def test_how_decides_read_their_sessions_is_counted(client, demo, django_capture_on_commit_callbacks):
    api = agent_api("reads_bot")
    agent = AgentRuntime.objects.get(name="reads_bot")
    session_create(agent=agent, machine_key="after_sales", session_id="r1")
    candidate = {"decision": "close_order", "confidence": 0.95}
    body = {"point": "intent_routing", "input": "hi", "session_id": "r1", "candidate": candidate}
    before = scrape(client)
    for _ in range(3):  # the first reads the session; on PostgreSQL the next two guess its state right
        assert api.post("/api/v1/decisions", body, format="json").status_code == 201
    # Moved behind this process's back (an update, as another worker's move commits it): the guess is wrong.
    Session.objects.filter(key="r1").update(state="received", seq=F("seq") + 1)
    assert api.post("/api/v1/decisions", body, format="json").status_code == 201
    after = scrape(client)

    def moved(read: str) -> float:
        return value(after, "arbiter_decide_session_reads_total", read=read) - value(
            before, "arbiter_decide_session_reads_total", read=read
        )

    if connection.vendor == "postgresql":
        assert (moved("read"), moved("guessed"), moved("guessed_wrong")) == (1, 2, 1)
    else:  # SQLite cannot check a guess: every such decide reads first
        assert (moved("read"), moved("guessed"), moved("guessed_wrong")) == (4, 0, 0)
