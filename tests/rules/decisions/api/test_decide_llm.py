"""Decide's ``llm``: which model and prompt made the candidate, logged on the decision and shown with it.

On SQLite the log row is written by the ORM; on PostgreSQL by the hand-written statements of
``rules.decisions.statements`` (the plain INSERT, the keyed one, and the session read folded with the
INSERT): each path is taken here, and the suite runs on both databases.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from rules.decisions import statements
from rules.decisions.selectors import UNKNOWN_LLM
from rules.models import DecisionRecord
from tests.support import decide, post

pytestmark = pytest.mark.django_db

LLM = {"model": "qwen2.5-72b-instruct", "prompt_version": "intent-v7", "latency_ms": 412}
CANDIDATE = {"decision": "refund_request", "confidence": 0.91, "reason": "asks for money back"}


def _session(client, key: str) -> None:
    assert post(client, "/api/v1/sessions", {"machine": "after_sales", "session_id": key}).status_code == 201


@pytest.mark.parametrize(
    ("session", "apply", "key"),
    [
        pytest.param(False, False, None, id="no-session"),
        pytest.param(False, False, "k-llm", id="no-session-keyed"),
        pytest.param(True, False, None, id="session"),
        pytest.param(True, True, None, id="session-apply"),
        pytest.param(True, False, "k-llm", id="session-keyed"),
    ],
)
def test_llm_is_logged_on_the_decision_and_shown_with_it(client, session, apply, key):
    body = {"point": "intent_routing", "input": "我想退货退款", "candidate": CANDIDATE, "llm": LLM}
    if session:
        _session(client, "s-llm")
        body["session_id"] = "s-llm"
    if apply:
        body["apply"] = True
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
    r = decide(client, body, **headers)
    assert r.status_code == 201, r.content
    record = DecisionRecord.objects.get(pk=r.json()["id"])
    assert (record.llm_model, record.llm_prompt_version, record.llm_latency_ms) == (
        "qwen2.5-72b-instruct",
        "intent-v7",
        412,
    )
    detail = client.get(f"/api/v1/decisions/{record.pk}")
    assert detail.json()["llm"] == LLM


def test_the_log_insert_writes_the_llm_columns(client):
    """The hand-written INSERT builds itself from the model's fields: the new columns are in it."""
    columns = statements.log_insert().columns
    for name in ("llm_model", "llm_prompt_version", "llm_latency_ms"):
        assert connection.ops.quote_name(name) in columns


def test_a_decision_without_llm_shows_null_and_a_partial_llm_shows_what_was_sent(client):
    r = decide(client, {"point": "intent_routing", "input": "我想退货退款", "candidate": CANDIDATE})
    assert client.get(f"/api/v1/decisions/{r.json()['id']}").json()["llm"] is None
    r = decide(client, {"point": "intent_routing", "input": "我想退货", "candidate": CANDIDATE, "llm": {"model": "m"}})
    assert r.status_code == 201
    assert client.get(f"/api/v1/decisions/{r.json()['id']}").json()["llm"] == {
        "model": "m",
        "prompt_version": None,
        "latency_ms": None,
    }
    r = decide(client, {"point": "intent_routing", "input": "我想退", "candidate": CANDIDATE, "llm": None})
    assert r.status_code == 201 and DecisionRecord.objects.get(pk=r.json()["id"]).llm_model == ""


def test_a_retry_with_another_model_is_another_request(client):
    body = {"point": "refund_approval", "facts": {"refund_amount": 800}, "llm": LLM}
    assert decide(client, body, HTTP_IDEMPOTENCY_KEY="k-2").status_code == 201
    again = decide(client, body, HTTP_IDEMPOTENCY_KEY="k-2")
    assert again.status_code == 201 and DecisionRecord.objects.count() == 1
    other = decide(client, {**body, "llm": {**LLM, "model": "another"}}, HTTP_IDEMPOTENCY_KEY="k-2")
    assert other.status_code == 409 and other.json()["code"] == "idempotency_conflict"


@pytest.mark.parametrize(
    ("llm", "field"),
    [
        ("qwen", None),
        (["qwen"], None),
        ({"model": 7}, "model"),
        ({"model": "m" * 129}, "model"),
        ({"model": "a\x00b"}, "model"),
        ({"prompt_version": "v" * 65}, "prompt_version"),
        ({"latency_ms": -1}, "latency_ms"),
        ({"latency_ms": 86_400_001}, "latency_ms"),
        ({"latency_ms": 1.5}, "latency_ms"),
        ({"latency_ms": True}, "latency_ms"),
        ({"latency_ms": "12"}, "latency_ms"),
        ({"temperature": 0.2}, "temperature"),
    ],
)
def test_a_bad_llm_is_a_problem_not_a_decision(client, llm, field):
    r = decide(client, {"point": "intent_routing", "input": "你好", "candidate": CANDIDATE, "llm": llm})
    assert r.status_code == 422, r.content
    assert r.json()["code"] == "invalid_request"
    assert r["Content-Type"].startswith("application/problem+json")
    errors = r.json()["errors"]["llm"]
    if field is not None:
        assert field in errors
    assert not DecisionRecord.objects.exists()


def test_the_bounds_are_accepted(client):
    llm = {"model": "m" * 128, "prompt_version": "v" * 64, "latency_ms": 86_400_000}
    r = decide(client, {"point": "intent_routing", "input": "你好", "candidate": CANDIDATE, "llm": llm})
    assert r.status_code == 201, r.content
    assert client.get(f"/api/v1/decisions/{r.json()['id']}").json()["llm"] == llm


def test_the_log_admin_filters_by_model_and_prompt_version_and_shows_them(client, admin_user):
    for llm in (LLM, {**LLM, "model": "qwen3-max"}, None):
        body = {"point": "intent_routing", "input": "我想退货退款", "candidate": CANDIDATE}
        if llm is not None:
            body["llm"] = llm
        assert decide(client, body).status_code == 201
    browser = Client()
    browser.force_login(admin_user)
    changelist = reverse("admin:rules_decisionrecord_changelist")

    def shown(**query):
        page = browser.get(changelist, query)
        assert page.status_code == 200
        return page.context["cl"].result_count

    assert shown() == 3
    assert shown(llm_model="qwen3-max") == 1
    assert shown(llm_model="qwen2.5-72b-instruct", llm_prompt_version="intent-v7") == 1
    assert shown(llm_prompt_version="intent-v7") == 2
    assert shown(llm_model=UNKNOWN_LLM) == shown(llm_prompt_version=UNKNOWN_LLM) == 1
    page = browser.get(changelist).content.decode()
    assert "qwen3-max" in page and "intent-v7" in page  # offered as filter choices
    record = DecisionRecord.objects.get(llm_model="qwen3-max")
    detail = browser.get(reverse("admin:rules_decisionrecord_change", args=[record.pk])).content.decode()
    assert "qwen3-max" in detail and "prompt intent-v7" in detail and "412 ms" in detail
    replay = browser.get(reverse("admin:rules_decisionrecord_replay", args=[record.pk])).content.decode()
    assert "made by model qwen3-max with prompt intent-v7" in replay
