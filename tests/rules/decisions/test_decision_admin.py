"""The decision log admin: list, filters, session search, the "why" panel and the replay view.

Decisions are made through the decide API with the demo configuration, plus one shadow rule, so the
log holds what agents would really have produced.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from html import unescape as html_unescape

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from agents.runtimes.services import agent_create
from agents.sessions.models import Anomaly
from rules.config import records
from rules.config.revisions import config_change
from rules.config.yaml_import import config_import
from rules.decisions.admin import session_search
from rules.models import (
    CandidateRequestCount,
    Condition,
    ConditionKind,
    DecisionPoint,
    DecisionRecord,
    KeywordList,
    Rule,
    RuleCategory,
    RuleMode,
    Threshold,
)
from tests.support import DEMO, agent_api, approved

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo_with_shadow_rule(actor):
    """The demo plus a shadow rule on intent_routing, imported and added as one change: the
    installation's first configuration, which applies at once with the four-eyes gate on."""
    with config_change(actor=actor, reason="test demo"):
        _demo_with_shadow_rule(actor)


def _demo_with_shadow_rule(actor) -> None:
    config_import(text=DEMO.read_text(encoding="utf-8"), source=str(DEMO), actor=actor, reason="test demo")
    point = DecisionPoint.objects.get(key="intent_routing")
    shadow = records.rule_save(
        rule=Rule(
            point=point,
            key="refund_words_watch",
            priority=5,
            category=RuleCategory.QUALITY,
            outcome="human_handoff",
            mode=RuleMode.SHADOW,
            description="Trying out: would refund words alone be worth a person?",
        ),
        actor=actor,
        reason="shadow trial",
    )
    records.condition_save(
        condition=Condition(
            rule=shadow,
            position=1,
            kind=ConditionKind.INPUT_CONTAINS,
            keyword_list=KeywordList.objects.get(key="refund_triggers"),
        ),
        actor=actor,
        reason="shadow trial",
    )


@pytest.fixture
def api(demo_with_shadow_rule, actor) -> APIClient:
    return agent_api("support_bot", actor=actor)


@pytest.fixture
def other_api(demo_with_shadow_rule, actor) -> APIClient:
    _, token = agent_create(name="other_bot", point_keys=["refund_approval"], actor=actor, reason="t")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


@pytest.fixture
def admin_client_(staff_user) -> Client:
    client = Client()
    client.force_login(staff_user)
    return client


def decide(client: APIClient, body: dict) -> DecisionRecord:
    if body.get("session_id"):  # a decide names a session its agent has (made here on first use)
        created = client.post(
            "/api/v1/sessions", {"machine": "after_sales", "session_id": body["session_id"]}, format="json"
        )
        assert created.status_code in (201, 409), created.content
    response = client.post("/api/v1/decisions", body, format="json")
    assert response.status_code == 201, response.content
    return DecisionRecord.objects.get(pk=response.json()["id"])


def change_url(record: DecisionRecord) -> str:
    return reverse("admin:rules_decisionrecord_change", args=[record.pk])


def listed(response) -> set:
    """The decisions a changelist page shows (by their change links)."""
    assert response.status_code == 200
    found = re.findall(r"/admin/rules/decisionrecord/([0-9a-f-]{36})/change/", response.content.decode())
    return set(found)


def ids(*records: DecisionRecord) -> set:
    return {str(r.pk) for r in records}


def squash(html: str) -> str:
    return re.sub(r"\s+", " ", html)


# --- the list ----------------------------------------------------------------------------------------


@pytest.fixture
def log(api, other_api):
    """Five decisions in three sessions, from two agents, at two points."""
    complaint = decide(
        api,
        {
            "point": "intent_routing",
            "session_id": "sess-a",
            "input": "我要投诉，还要退款",
            "candidate": {"decision": "general_query", "confidence": 0.9, "reason": "asks a question"},
        },
    )
    product = decide(
        api,
        {
            "point": "intent_routing",
            "session_id": "sess-a",
            "input": "有几种颜色",
            "candidate": {"decision": "product_info", "confidence": 0.92, "reason": "colours"},
        },
    )
    refund_big = decide(api, {"point": "refund_approval", "session_id": "sess-b", "facts": {"refund_amount": 800}})
    refund_small = decide(
        other_api, {"point": "refund_approval", "session_id": "other-1", "facts": {"refund_amount": 80}}
    )
    invalid = decide(
        api,
        {"point": "intent_routing", "session_id": "sess-b", "input": "你好", "candidate_raw": "no json at all"},
    )
    return {
        "complaint": complaint,
        "product": product,
        "refund_big": refund_big,
        "refund_small": refund_small,
        "invalid": invalid,
    }


def test_changelist_lists_every_decision_with_its_columns(admin_client_, log):
    url = reverse("admin:rules_decisionrecord_changelist")
    response = admin_client_.get(url)
    assert listed(response) == ids(*log.values())
    html = squash(response.content.decode())
    for column in (
        "time",
        "point",
        "decision",
        "ruled_by",
        "winning_rule",
        "candidate",
        "overridden_mark",
        "agent_label",
        "session",
        "revision",
    ):
        assert f"column-{column}" in html, column
    # Keys may wrap after their underscores (a <wbr> there, templates/admin/change_list_results.html).
    html = html.replace("_<wbr>", "_")
    assert "general_query (0.90)" in html  # the candidate, with its confidence
    assert "high_risk_keyword" in html and "invalid output" in html
    # Newest first.
    assert response.context["cl"].result_list[0] == log["invalid"]
    # No COUNT(*) of the whole log next to the filtered count.
    assert response.context["cl"].show_full_result_count is False


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"point": "refund_approval"}, ["refund_big", "refund_small"]),
        ({"decision": "human_handoff"}, ["complaint", "refund_big"]),
        ({"point": "intent_routing", "decision": "product_info"}, ["product"]),
        ({"ruled_by__exact": "hard_rule"}, ["complaint", "refund_big"]),
        ({"ruled_by__exact": "default"}, ["refund_small", "invalid"]),
        ({"overridden__exact": "1"}, ["complaint"]),
        ({"q": "sess-a"}, ["complaint", "product"]),
        ({"q": "sess-"}, []),  # exact by default
        ({"q": "sess*"}, ["complaint", "product", "refund_big", "invalid"]),
        ({"q": "other-1"}, ["refund_small"]),
    ],
)
def test_filters_and_session_search_pick_the_right_rows(admin_client_, log, query, expected):
    response = admin_client_.get(reverse("admin:rules_decisionrecord_changelist"), query)
    assert listed(response) == ids(*(log[name] for name in expected))


def test_agent_and_date_filters(admin_client_, log):
    url = reverse("admin:rules_decisionrecord_changelist")
    other = log["refund_small"].agent_name
    assert listed(admin_client_.get(url, {"agent": other})) == ids(log["refund_small"])
    old = log["product"]
    DecisionRecord.objects.filter(pk=old.pk).update(created_at=old.created_at - dt.timedelta(days=40))
    # Follow the date filter's own "Past 7 days" link, as a user would.
    page = admin_client_.get(url).content.decode()
    href = re.search(r'<a href="(\?created_at__gte=[^"]+)">Past 7 days</a>', page)
    assert href is not None, "the date filter offers the past 7 days"
    week = admin_client_.get(url + html_unescape(href.group(1)))
    assert listed(week) == ids(*log.values()) - ids(old)


def test_filter_choices_come_from_the_configuration(admin_client_, log):
    response = admin_client_.get(reverse("admin:rules_decisionrecord_changelist"), {"point": "refund_approval"})
    html = response.content.decode()
    assert '<a href="?decision=auto_approve&amp;point=refund_approval">auto_approve</a>' in html
    assert "decision=product_info" not in html  # not an outcome of the selected point
    everything = admin_client_.get(reverse("admin:rules_decisionrecord_changelist")).content.decode()
    assert '<a href="?decision=product_info">product_info</a>' in everything
    assert '<a href="?point=refund_approval">refund_approval</a>' in everything


def test_session_search_uses_the_session_index(log):
    """The search is an equality (or a range) on ``session_id``, which ``decision_session_seq_idx`` serves.

    A prefix is checked on PostgreSQL only (the production database): SQLite's planner, with five rows
    and no statistics, prefers walking the ``created_at`` index for the ordering.
    """
    queryset = DecisionRecord.objects.order_by("-created_at")
    terms = ["sess-a", "sess*"] if connection.vendor == "postgresql" else ["sess-a"]
    for term in terms:
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":  # five rows: make the planner show what it would use at scale
                cursor.execute("SET LOCAL enable_seqscan = off")
            plan = session_search(queryset, term).explain()
            if connection.vendor == "postgresql":
                cursor.execute("SET LOCAL enable_seqscan = on")
        assert "decision_session_seq_idx" in _index_names(plan), (term, plan)


def _index_names(plan: str) -> set[str]:
    """The indexes a plan scans; on PostgreSQL's partitioned log, the log's index each partition's belongs to."""
    used = set(re.findall(r"[Ss]can (?:Backward )?using (\S+)", plan))
    used |= set(re.findall(r"Bitmap Index Scan on (\S+)", plan)) | set(re.findall(r"USING INDEX (\S+)", plan))
    if connection.vendor != "postgresql":
        return used
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT parent.relname FROM pg_inherits i JOIN pg_class child ON child.oid = i.inhrelid "
            "JOIN pg_class parent ON parent.oid = i.inhparent WHERE child.relname = ANY(%s)",
            [list(used)],
        )
        return used | {name for (name,) in cursor.fetchall()}


def test_the_log_is_read_only(admin_client_, log):
    response = admin_client_.get(reverse("admin:rules_decisionrecord_changelist"))
    html = response.content.decode()
    assert reverse("admin:rules_decisionrecord_add") not in html
    assert 'name="action"' not in html  # no bulk delete
    detail = admin_client_.get(change_url(log["complaint"]))
    body = detail.content.decode()
    assert 'name="_save"' not in body and "deletelink" not in body
    assert admin_client_.get(reverse("admin:rules_decisionrecord_add")).status_code == 403
    assert (
        admin_client_.post(reverse("admin:rules_decisionrecord_delete", args=[log["complaint"].pk])).status_code == 403
    )
    assert admin_client_.post(change_url(log["complaint"]), {"decision": "x"}).status_code == 403
    assert DecisionRecord.objects.filter(pk=log["complaint"].pk, decision="human_handoff").exists()


def test_non_staff_are_sent_to_the_login_page(log):
    user = get_user_model().objects.create_user(username="agent_dev", password="pw-123456-x", is_staff=False)
    client = Client()
    client.force_login(user)
    record = log["complaint"]
    for url in (
        reverse("admin:rules_decisionrecord_changelist"),
        change_url(record),
        reverse("admin:rules_decisionrecord_replay", args=[record.pk]),
        reverse("admin:agents_anomaly_changelist"),
    ):
        response = client.get(url)
        assert response.status_code == 302 and "/admin/login/" in response["Location"], url
    assert Client().get(reverse("admin:rules_decisionrecord_replay", args=[record.pk])).status_code == 302


# --- the why panel ---------------------------------------------------------------------------------------


def test_why_panel_marks_the_winner_and_the_shadow_rule(admin_client_, log):
    record = log["complaint"]
    assert [(m["key"], m["shadow"]) for m in record.matched_rules][:2] == [
        ("refund_words_watch", True),
        ("high_risk_keyword", False),
    ]
    response = admin_client_.get(change_url(record))
    assert response.status_code == 200
    html = squash(response.content.decode())
    matched = html[html.index('id="matched-rules"') :]
    matched = matched[: matched.index("</table>")]
    rows = re.findall(r"<tr class=\"([^\"]*)\">(.*?)</tr>", matched)
    keys = [re.search(r">(\w+)</a>", row).group(1) for _, row in rows]
    assert keys[:2] == ["refund_words_watch", "high_risk_keyword"]  # priority order: 5, then 10
    marks = dict(zip(keys, [cls for cls, _ in rows], strict=True))
    assert marks["refund_words_watch"] == "arbiter-shadow"
    assert marks["high_risk_keyword"] == "arbiter-winner"
    assert matched.count(">winner<") == 1 and ">shadow<" in matched
    # Each matched rule links to its admin page.
    for key in keys:
        rule = Rule.objects.get(point__key="intent_routing", key=key)
        assert reverse("admin:rules_rule_change", args=[rule.pk]) in matched


def test_why_panel_sets_candidate_against_final(admin_client_, log):
    record = log["complaint"]
    html = squash(admin_client_.get(change_url(record)).content.decode())
    versus = html[html.index('id="candidate-versus-final"') :]
    versus = versus[: versus.index("</table>")]
    assert "Candidate (the model proposed)" in versus and "Final (Arbiter decided)" in versus
    assert "general_query" in versus and "0.90" in versus and "asks a question" in versus
    assert "<strong>human_handoff</strong>" in versus and "hard rule" in versus
    assert "high_risk_keyword: keyword 投诉 (list high_risk)" in versus
    assert "<strong>yes</strong> — the final decision is not the candidate" in versus
    # Keyword hits, revision link, replay and session links.
    assert "high_risk" in html[html.index('id="keyword-hits"') :][:400]
    revision_pk = record.revision
    from rules.models import ConfigRevision

    revision = ConfigRevision.objects.get(number=revision_pk)
    assert reverse("admin:rules_configrevision_change", args=[revision.pk]) in html
    assert reverse("admin:rules_decisionrecord_replay", args=[record.pk]) in html
    session_link = reverse("admin:rules_decisionrecord_changelist") + "?q=sess-a"
    assert session_link in html and "Other decisions in this session" in html


def test_why_panel_shows_masking_facts_tokens_and_anomalies(admin_client_, api):
    record = decide(
        api,
        {
            "point": "intent_routing",
            "session_id": "s-mask",
            "input": "我的手机13800138000 <script>alert(1)</script>",
            "candidate_raw": "<b>not json</b>",
            "tokens": {"prompt": 218, "completion": 87},
        },
    )
    html = squash(admin_client_.get(change_url(record)).content.decode())
    assert "[phone]" in html and "13800138000" not in html
    assert "phone × 1" in html[html.index('id="masked"') :][:200]
    assert "218 prompt + 87 completion = 305" in html
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<b>not json</b>" not in html and "&lt;b&gt;not json&lt;/b&gt;" in html
    anomaly = Anomaly.objects.get(decision=record)
    anomalies = html[html.index('id="anomalies"') :]
    assert "invalid_candidate_output" in anomalies
    assert reverse("admin:agents_anomaly_change", args=[anomaly.pk]) in anomalies
    assert "no valid candidate in the model" in html

    facts = decide(api, {"point": "refund_approval", "facts": {"refund_amount": 800}})
    html = squash(admin_client_.get(change_url(facts)).content.decode())
    assert "&quot;refund_amount&quot;: 800" in html
    assert "No rule matched" not in html and "no candidate was sent" in html


def test_a_deleted_rule_is_named_without_a_link(admin_client_, log, actor):
    record = log["complaint"]
    rule = Rule.objects.get(point__key="intent_routing", key="refund_words_watch")
    approved(lambda: records.rule_delete(rule=rule, actor=actor, reason="trial over"))
    html = squash(admin_client_.get(change_url(record)).content.decode())
    assert 'refund_words_watch <span class="quiet">(no longer exists)</span>' in html


# --- replay --------------------------------------------------------------------------------------------


def test_replay_is_identical_and_shows_the_current_outcome_after_a_threshold_change(admin_client_, log, actor):
    record = log["refund_big"]
    replay_url = reverse("admin:rules_decisionrecord_replay", args=[record.pk])
    before = squash(admin_client_.get(replay_url).content.decode())
    assert "identical: yes" in before
    assert "the outcome would be the same" in before

    limit = Threshold.objects.get(key="auto_refund_limit")
    limit.value = Decimal("1000")
    approved(lambda: records.threshold_save(threshold=limit, actor=actor, reason="raise the automatic refund limit"))

    response = admin_client_.get(replay_url)
    assert response.status_code == 200
    html = squash(response.content.decode())
    assert "identical: yes" in html
    assert f"Replayed under revision {record.revision}" in html
    table = html[html.index('id="replay-table"') :]
    headers = re.findall(r"<th scope=\"col\">([^<]+)<br><span class=\"quiet\">revision (\d+)</span>", table)
    current_revision = str(record.revision + 1)
    assert headers == [
        ("recorded", str(record.revision)),
        ("replayed under the recorded revision", str(record.revision)),
        ("under the current revision", current_revision),
    ]
    decisions = re.findall(r"<strong>(\w+)</strong>", table[: table.index("decided by")])
    assert decisions == ["human_handoff", "human_handoff", "auto_approve"]
    assert f"Under the current revision ({current_revision}) the outcome would differ" in html
    assert 'class="arbiter-differs"><strong>auto_approve' in html


def test_replay_says_why_it_cannot_run(admin_client_, log):
    record = log["refund_small"]
    DecisionRecord.objects.filter(pk=record.pk).update(revision=999)
    response = admin_client_.get(reverse("admin:rules_decisionrecord_replay", args=[record.pk]))
    assert response.status_code == 200
    assert "Revision 999 of the configuration no longer exists." in response.content.decode()
    missing = reverse("admin:rules_decisionrecord_replay", args=["00000000-0000-0000-0000-000000000000"])
    response = admin_client_.get(missing)
    assert response.status_code == 302 and response["Location"] == reverse("admin:rules_decisionrecord_changelist")


def test_anomaly_and_candidate_request_admins_are_read_only_lists(admin_client_, log, api):
    api.post("/api/v1/decisions", {"point": "intent_routing", "input": "你好"}, format="json")
    assert CandidateRequestCount.objects.exists()
    anomaly = Anomaly.objects.get(decision=log["invalid"])

    response = admin_client_.get(reverse("admin:agents_anomaly_changelist"))
    html = response.content.decode()
    assert "invalid_candidate_output" in html and change_url(log["invalid"]) in html
    assert reverse("admin:agents_anomaly_add") not in html
    assert admin_client_.get(reverse("admin:agents_anomaly_changelist"), {"q": "nope"}).context["cl"].result_count == 0
    found = admin_client_.get(reverse("admin:agents_anomaly_changelist"), {"q": "sess-b", "code": anomaly.code})
    assert list(found.context["cl"].result_list) == [anomaly]
    detail = admin_client_.get(reverse("admin:agents_anomaly_change", args=[anomaly.pk]))
    assert detail.status_code == 200 and 'name="_save"' not in detail.content.decode()

    counts = admin_client_.get(reverse("admin:rules_candidaterequestcount_changelist"))
    assert counts.status_code == 200 and "intent_routing" in counts.content.decode()
    assert admin_client_.get(reverse("admin:rules_candidaterequestcount_add")).status_code == 403
