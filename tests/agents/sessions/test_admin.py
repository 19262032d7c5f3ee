"""The sessions admin: the list (stuck first, filters, search), a session's page with its timeline, the
human queue, and the state machine page with its picture and its validation errors.

Sessions are built through the HTTP API, as agents build them; only their clocks are set back in the
database (``state_entered_at``), to make sessions look as old as the test needs.
"""

from __future__ import annotations

import datetime as dt
import re
from html import unescape

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from agents.sessions.models import Session
from agents.sessions.timeouts import session_timeouts_sweep
from rules.models import StateMachine
from tests.support import ADDRESS_FIELDS, agent_api, move_of
from tests.support.admin import form_data

CHANGELIST = "admin:agents_session_changelist"

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(demo, actor) -> APIClient:
    return agent_api("support_bot", actor=actor)


@pytest.fixture
def other_api(demo, actor) -> APIClient:
    return agent_api("other_bot", actor=actor)


@pytest.fixture
def admin_client_(staff_user) -> Client:
    client = Client()
    client.force_login(staff_user)
    return client


def call(api: APIClient, path: str, body: dict, status: int = 200) -> dict:
    response = api.post(path, body, format="json")
    assert response.status_code == status, response.content
    return response.json()


def start(api: APIClient, key: str, machine: str = "after_sales") -> Session:
    call(api, "/api/v1/sessions", {"machine": machine, "session_id": key}, 201)
    return Session.objects.filter(key=key).latest("pk")


def move(api: APIClient, key: str, to: str, expected: str, status: int = 200) -> dict:
    return call(api, f"/api/v1/sessions/{key}/transitions", {"to": to, "expected_state": expected}, status)


def age(session: Session, **ago: float) -> None:
    """Pretend the session entered its current state ``ago`` (arranging the clock, not a state change)."""
    Session.objects.filter(pk=session.pk).update(state_entered_at=timezone.now() - dt.timedelta(**ago))


def listed(response) -> list[str]:
    """The session ids a changelist page shows, in order."""
    assert response.status_code == 200
    html = response.content.decode()
    return [unescape(k) for k in re.findall(r'<th class="field-session_id"><a href="[^"]+">([^<]+)</a>', html)]


def changelist(client: Client, **params: str):
    return client.get(reverse(CHANGELIST), params)


@pytest.fixture
def sessions(api):
    """Sessions of after_sales and change_address in various states and ages."""
    fresh = start(api, "fresh")  # init, 2 minutes: not stuck
    age(fresh, minutes=2)
    slow = start(api, "slow")  # received for 20 minutes: stuck (no timeout, over 10 minutes)
    move(api, "slow", "received", "init")
    age(slow, minutes=20)
    oldest = start(api, "oldest")  # init for 3 hours: stuck
    age(oldest, hours=3)
    waiting = start(api, "waiting", machine="change_address")  # awaiting_intent for 40 s, timeout 30 s: stuck
    move(api, "waiting", "awaiting_intent", "created")
    age(waiting, seconds=40)
    done = start(api, "done")  # closed two days ago: ended
    move(api, "done", "received", "init")
    move(api, "done", "closed", "received")
    age(done, days=2)
    handed = start(api, "handed")  # moved to the handoff state an hour ago
    move(api, "handed", "human_handoff", "init")
    age(handed, hours=1)
    return {s.key: s for s in Session.objects.all()}


# --- the list -------------------------------------------------------------------------------------------


def test_the_list_shows_open_sessions_stuck_first(admin_client_, sessions):
    response = changelist(admin_client_)
    # Stuck first (the longest in their state first), then the rest; "done" has ended.
    assert listed(response) == ["oldest", "handed", "slow", "waiting", "fresh"]
    html = response.content.decode()
    for column in ("session id", "machine", "state", "seq", "anomalies", "time in state", "handoff reason", "updated"):
        assert column in html.lower() or column.replace(" ", "_") in html
    assert "3\xa0hours" in html  # time in state, humanised
    assert "Human queue (1)" in html
    assert "longer than 10 minutes" in html  # what "stuck" means


def test_the_list_filters(admin_client_, sessions):
    assert listed(changelist(admin_client_, status="ended")) == ["done"]
    assert set(listed(changelist(admin_client_, status="all"))) == set(sessions)
    assert listed(changelist(admin_client_, handoff="yes")) == ["handed"]
    assert set(listed(changelist(admin_client_, stuck="yes"))) == {"oldest", "handed", "slow", "waiting"}
    assert listed(changelist(admin_client_, stuck="no")) == ["fresh"]
    machine = StateMachine.objects.get(key="change_address")
    assert listed(changelist(admin_client_, machine__id__exact=str(machine.pk))) == ["waiting"]
    assert listed(changelist(admin_client_, state="init")) == ["oldest", "fresh"]
    agent = sessions["fresh"].agent
    assert len(listed(changelist(admin_client_, agent__id__exact=str(agent.pk)))) == 5


def test_the_list_searches_session_ids_open_or_ended(admin_client_, sessions):
    assert listed(changelist(admin_client_, q="done")) == ["done"]  # ended, found all the same
    assert listed(changelist(admin_client_, q="fre*")) == ["fresh"]
    assert listed(changelist(admin_client_, q="fre")) == []  # exact unless it ends with *


def test_sessions_are_read_only(admin_client_, sessions):
    session = sessions["fresh"]
    assert admin_client_.get(reverse("admin:agents_session_add")).status_code == 403
    assert admin_client_.get(reverse("admin:agents_session_delete", args=[session.pk])).status_code == 403
    url = reverse("admin:agents_session_change", args=[session.pk])
    response = admin_client_.post(url, {"state": "closed"})
    assert response.status_code == 403
    html = admin_client_.get(url).content.decode()
    assert 'name="_save"' not in html
    assert "deletelink" not in html
    assert 'value="delete_selected"' not in changelist(admin_client_).content.decode()
    session.refresh_from_db()
    assert session.state == "init"
    assert "Nothing has happened in this session yet." in html
    ended = admin_client_.get(reverse("admin:agents_session_change", args=[sessions["done"].pk])).content.decode()
    assert re.search(r'id="session-allowed-transitions">none — the session has ended<', ended)


# --- a session's page -------------------------------------------------------------------------------------


def test_the_session_page_interleaves_transitions_decisions_and_anomalies(admin_client_, api, other_api):
    start(api, "s1")
    # init cannot go to refund_review: the point's fallback (intent_clarify) applies, with an anomaly.
    body = {"point": "intent_routing", "session_id": "s1", "input": "我要退款", "apply": True}
    first = call(api, "/api/v1/decisions", body, 201)
    assert move_of(first["session"]) == {"from": "init", "state": "intent_clarify", "seq": 1}
    move(api, "s1", "closed", "intent_clarify", status=422)  # illegal: an anomaly
    call(api, "/api/v1/sessions/s1/interrupt", {"to": "refund_review", "expected_state": "intent_clarify"})
    call(api, "/api/v1/sessions/s1/resume", {"expected_state": "refund_review"})
    body = {
        "point": "intent_routing",
        "session_id": "s1",
        "input": "颜色",
        "candidate": {"decision": "product_info", "confidence": 0.9},
        "apply": True,
    }
    second = call(api, "/api/v1/decisions", body, 201)
    assert move_of(second["session"]) == {"from": "intent_clarify", "state": "received", "seq": 4}
    # The same session id of another agent is another session: none of it shows on this page.
    start(other_api, "s1")
    move(other_api, "s1", "received", "init")

    session = Session.objects.get(key="s1", agent__name="support_bot")
    response = admin_client_.get(reverse("admin:agents_session_change", args=[session.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    rows = re.findall(r'<tr class="arbiter-event arbiter-event-(\w+)" data-kind="\w+"(?: data-seq="(\d+)")?>', html)
    assert rows == [
        ("decision", ""),
        ("anomaly", ""),
        ("transition", "1"),
        ("anomaly", ""),
        ("transition", "2"),
        ("transition", "3"),
        ("decision", ""),
        ("transition", "4"),
    ]
    timeline = html[html.index('id="session-timeline"') :]
    for text in (
        "init → intent_clarify",
        "fallback",
        "rule_move_not_allowed",
        "illegal_transition",
        "intent_clarify → refund_review",
        "interrupt",
        "refund_review → intent_clarify",
        "resume",
        "intent_clarify → received",
        "product_info (0.90)",
        "llm_candidate".replace("_", " ").replace("llm", "LLM"),
    ):
        assert text in timeline, text
    # Links to the decisions' why panels, from the decision rows and from the moves they made.
    for decision_id in (first["id"], second["id"]):
        assert reverse("admin:rules_decisionrecord_change", args=[decision_id]) in timeline
    # The header: where the session is now and what it may do.
    header = html[html.index('id="session-header"') : html.index('id="session-timeline"')]
    assert "received" in header and "after_sales" in header
    assert re.search(r"anomalies</th><td>1 ", header)  # the rule's refused mapping is not counted
    allowed = re.search(r'id="session-allowed-transitions">([^<]*)<', header).group(1)
    assert allowed == "refund_review, human_handoff, closed"


def test_raw_model_output_is_escaped_and_cut_short(admin_client_, api):
    session = start(api, "raw")
    raw = "<script>alert(1)</script>" + "x" * 2000
    call(api, "/api/v1/sessions/raw/anomalies", {"code": "invalid_json", "detail": "<b>not JSON</b>", "raw": raw}, 201)
    html = admin_client_.get(reverse("admin:agents_session_change", args=[session.pk])).content.decode()
    timeline = html[html.index('id="session-timeline"') :]
    assert "<script>alert(1)</script>" not in html and "<b>not JSON</b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in timeline
    assert "&lt;b&gt;not JSON&lt;/b&gt;" in timeline
    assert "x" * 700 not in timeline
    assert "the whole raw output" in timeline
    # The anomaly's own page links back to the session's.
    anomaly_url = re.search(r'href="(/admin/agents/anomaly/\d+/change/)"', timeline).group(1)
    anomaly_page = admin_client_.get(anomaly_url).content.decode()
    assert reverse("admin:agents_session_change", args=[session.pk]) in anomaly_page


def test_the_session_page_shows_the_interrupt_stack(admin_client_, demo, actor):
    api = agent_api("support_bot", actor=actor)
    start(api, "deep", machine="change_address")
    move(api, "deep", "awaiting_intent", "created")
    call(api, "/api/v1/sessions/deep/interrupt", {"to": "collecting_params", "expected_state": "awaiting_intent"})
    fields = {"expected_state": "collecting_params", "updates": ADDRESS_FIELDS}  # what executing requires
    assert api.patch("/api/v1/sessions/deep/fields", fields, format="json").status_code == 200
    call(api, "/api/v1/sessions/deep/interrupt", {"to": "executing", "expected_state": "collecting_params"})
    session = Session.objects.get(key="deep")
    html = admin_client_.get(reverse("admin:agents_session_change", args=[session.pk])).content.decode()
    stack = re.search(r'id="session-stack">([^<]*)<', html).group(1)
    assert stack == "awaiting_intent ← collecting_params "
    assert "change_address" in html


# --- the human queue --------------------------------------------------------------------------------------


def test_the_human_queue_lists_handoff_sessions_oldest_first_with_why(admin_client_, api, sessions):
    # Three anomalies: the model-failure policy hands "failing" over.
    start(api, "failing")
    for _ in range(3):
        call(api, "/api/v1/sessions/failing/anomalies", {"code": "invalid_json", "detail": "not JSON"}, 201)
    age(Session.objects.get(key="failing"), minutes=30)
    # "waiting" is over its 30 s timeout: the sweep hands it over (just now: the newest in the queue).
    assert session_timeouts_sweep() == 1

    response = admin_client_.get(reverse("admin:agents_session_human_queue"))
    assert response.status_code == 200
    html = response.content.decode()
    queued = re.findall(r'<tr class="arbiter-queue-row" data-session="([^"]+)"', html)
    assert queued == ["handed", "failing", "waiting"]
    rows = dict(zip(queued, html.split('<tr class="arbiter-queue-row"')[1:], strict=True))
    assert "model_failure" in rows["failing"] and "3 anomalies" in rows["failing"]
    assert [re.search(r'data-reason="([^"]+)"', rows[k]).group(1) for k in queued] == [
        "agent",
        "model_failure",
        "timeout",
    ]
    assert "timeout" in rows["waiting"] and "more than 30 s in awaiting_intent" in rows["waiting"]
    assert "init → human_handoff" in rows["handed"]
    for key in queued:
        pk = Session.objects.get(key=key).pk
        assert reverse("admin:agents_session_change", args=[pk]) in rows[key]
    # Reachable from the session list and the agents app page.
    assert reverse("admin:agents_session_human_queue") in changelist(admin_client_).content.decode()
    app_page = admin_client_.get(reverse("admin:app_list", args=["agents"])).content.decode()
    assert reverse("admin:agents_session_human_queue") in app_page


def test_the_human_queue_is_empty_when_nobody_waits(admin_client_, api):
    start(api, "calm")
    response = admin_client_.get(reverse("admin:agents_session_human_queue"))
    assert "No session is waiting for a person." in response.content.decode()


def test_the_human_queue_needs_the_view_permission(client, django_user_model, demo):
    user = django_user_model.objects.create_user(username="intern", password="pw-intern-1", is_staff=True)
    client.force_login(user)
    assert client.get(reverse("admin:agents_session_human_queue")).status_code == 403


# --- the state machine page -------------------------------------------------------------------------------


def test_the_machine_page_draws_the_machine(admin_client_, demo):
    machine = StateMachine.objects.get(key="after_sales")
    response = admin_client_.get(reverse("admin:rules_statemachine_change", args=[machine.pk]))
    html = response.content.decode()
    begin = html.index('class="arbiter-machine"')
    svg = html[begin : html.index("</svg>", begin)]
    assert len(re.findall(r'<g class="state[ "]', svg)) == len(machine.states)
    assert len(re.findall(r'<g class="edge[ "]', svg)) == sum(len(t) for t in machine.transitions.values())
    assert 'class="state initial" data-state="init"' in svg
    assert 'class="state handoff" data-state="human_handoff"' in svg
    assert 'class="state terminal" data-state="closed"' in svg


def test_the_machine_add_page_has_no_picture(admin_client_):
    html = admin_client_.get(reverse("admin:rules_statemachine_add")).content.decode()
    assert "arbiter-machine" not in html


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        (
            {"states": "init\nintent_clarify\nreceived\nrefund_review\nhuman_handoff\nclosed\nescalated\nlimbo"},
            "transitions",
            "Not reachable from the initial state 'init': limbo.",
        ),
        (
            {"terminal_states": "closed\nescalated"},
            "terminal_states",
            "Terminal states cannot have outgoing transitions: escalated.",
        ),
        ({"handoff_state": "people"}, "handoff_state", "'people' is not one of the states."),
    ],
)
def test_an_invalid_machine_edit_shows_the_problem_on_its_field(admin_client_, demo, changes, field, message):
    machine = StateMachine.objects.get(key="after_sales")
    url = reverse("admin:rules_statemachine_change", args=[machine.pk])
    data = form_data(admin_client_.get(url))
    data.update(changes, change_reason="Trying")
    history_before = machine.history.count()
    response = admin_client_.post(url, data)
    assert response.status_code == 200
    assert message in " ".join(response.context["adminform"].form.errors[field])
    assert machine.history.count() == history_before
    html = response.content.decode()
    if "limbo" in changes.get("states", ""):  # the picture shows what was typed, the stray state in red
        assert 'class="state unreachable" data-state="limbo"' in html
