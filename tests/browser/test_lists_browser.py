"""Every admin list at a laptop's 1366×768: no key column is pushed out of sight or clipped, and every
date-time on the pages is written one way (``2026-12-01 03:10:32 UTC``).

The data is what operators really see: long keyword lists, rules with many conditions, Chinese
inputs and reasons, long session ids, model output pasted into anomalies. For each list the test
measures, in Chromium, each key column's header and cells: inside the viewport, inside the list's own
box (which scrolls sideways when the table is too wide), and not cut inside the cell.
Same Chromium as ``test_admin_browser``. Screenshots go to /tmp.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.contrib.auth import get_user_model
from django.utils import timezone

from agents.sessions.models import Anomaly, Session
from rules.config.yaml_import import config_import
from rules.models import CandidateRequestCount, ChangeRequest, ConfigRevision, DecisionRecord, RegressionCase, Rule
from tests.support import DEMO_TEXT, agent_api

SHOTS = Path("/tmp")  # noqa: S108 - where the brief asks for them
USERNAME, PASSWORD = "ops_lists", "ops-password-1"
VIEWPORT = {"width": 1366, "height": 768}

pytestmark = pytest.mark.browser

# The one date-time format (decision_service/formats), and what any other way of writing one looks like.
DATETIME = re.compile(r"\b\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC\b")
DATETIME_LIKE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}[ T]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2}| ?[A-Z]{2,5})?"
    r"|\b(?:Jan|Feb|Mar|Apr|May|June?|July?|Aug|Sept?|Oct|Nov|Dec)[a-z]*\.? \d{1,2}, \d{4}(?:, [\d:]+ ?[ap]\.?m\.?)?"
    r"|\b\d{4}年\d{1,2}月\d{1,2}日"
)

# list URL → the columns (``list_display`` names) an operator needs to see without scrolling.
LISTS: dict[str, tuple[str, ...]] = {
    "rules/rule/": ("key", "point", "priority", "category", "high_risk", "mode", "outcome", "condition_summary"),
    "rules/decisionrecord/": (
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
    ),
    "agents/session/?status=all": (
        "session_id",
        "agent",
        "machine",
        "state_label",
        "seq",
        "anomalies",
        "time_in_state",
        "handoff_reason_label",
        "updated",
    ),
    "agents/anomaly/": ("when", "code", "agent_label", "session", "point", "short_detail", "decision_link"),
    "rules/changerequest/": (
        "number",
        "state",
        "risk",
        "author_name",
        "reason_short",
        "records",
        "approvals_given",
        "created",
    ),
    "rules/decisionpoint/": ("key", "name", "outcome_list", "default_outcome", "no_candidate", "rule_total"),
    "rules/keywordlist/": ("key", "name", "match_mode", "term_count", "used_by"),
    "rules/threshold/": ("key", "name", "value_shown", "unit", "allowed_range", "high_risk", "used_by"),
    "rules/statemachine/": ("key", "name", "state_list", "initial_state", "handoff_state", "max_anomalies"),
    "rules/configrevision/": ("number", "created", "created_by", "reason_short", "short_digest"),
    "rules/regressioncase/": ("pk", "point", "expected", "input_short", "note_short", "created_by", "created"),
    "rules/candidaterequestcount/": ("day", "point", "agent_name", "count"),
    "agents/agentruntime/": ("name", "token_start", "is_active", "point_list", "rate_limit", "created"),
}

# What the browser reports for one list: every key column's header and cells that stick out of the
# viewport or of the list's box, or whose content is cut inside the cell; and sideways scrolling.
MEASURE = """
([columns, table]) => {
  const viewport = document.documentElement.clientWidth;
  const box = document.querySelector(table).closest('.results') || document.querySelector(table).parentElement;
  const limit = Math.min(viewport, box.getBoundingClientRect().right);
  const problems = [];
  for (const name of columns) {
    const cells = document.querySelectorAll(
      `${table} thead th.column-${name}, ${table} tbody .field-${name}, ${table} [data-column="${name}"]`);
    if (cells.length < 2) problems.push(`${name}: ${cells.length} cells`);
    for (const cell of cells) {
      const r = cell.getBoundingClientRect();
      const where = `${name} (${cell.tagName.toLowerCase()} "${cell.innerText.slice(0, 30)}")`;
      if (r.left < 0 || r.right > limit + 1) problems.push(`${where}: ${r.left}..${r.right} beyond ${limit}`);
      if (cell.scrollWidth > cell.clientWidth + 1) {
        problems.push(`${where}: content ${cell.scrollWidth} > ${cell.clientWidth}`);
      }
      for (const inner of cell.querySelectorAll('*')) {
        const ir = inner.getBoundingClientRect();
        if (ir.width && ir.right > r.right + 1) problems.push(`${where}: inner ${inner.tagName} ends at ${ir.right}`);
      }
    }
  }
  if (box.scrollWidth > box.clientWidth + 1) {
    problems.push(`the list scrolls sideways: ${box.scrollWidth} > ${box.clientWidth}`);
  }
  const page = document.documentElement.scrollWidth;
  if (page > viewport + 1) problems.push(`the page scrolls sideways: ${page}`);
  return problems;
}
"""

# Boxes of long text on detail pages: they wrap inside, never push the page sideways.
BOXES = """
(selector) => [...document.querySelectorAll(selector)].filter(
  (el) => el.scrollWidth > el.clientWidth + 1
    || el.getBoundingClientRect().right > document.documentElement.clientWidth + 1
).map((el) => `${el.className}: ${el.scrollWidth} > ${el.clientWidth}`)
"""

LONG_TERMS = [
    "我要去消费者协会投诉你们这个不负责任的商家",
    "你们再不处理我就打电话给市场监督管理局",
    "我已经联系了电视台的记者准备曝光你们",
    "律师函已经在路上了请你们做好准备",
    "这是我第三次打电话了还是没有人解决",
    "把你们经理叫出来否则我就去法院起诉",
    *(f"售后服务态度恶劣第{i}次被拒绝退货" for i in range(1, 30)),
]


def _config() -> str:
    """The demo, with what makes lists wide: many and long keyword terms and names, a rule with many
    conditions, a long description, a point with many outcomes."""
    document: dict[str, Any] = yaml.safe_load(DEMO_TEXT)
    document["keyword_lists"].append(
        {
            "key": "escalation_phrases_from_the_complaints_team_2026_q4",
            "name": "客户升级投诉常用语（售后二组整理，2026 年第四季度，包含监管机构、媒体与法律途径）",
            "match": "substring",
            "terms": LONG_TERMS,
        }
    )
    routing = next(p for p in document["points"] if p["key"] == "intent_routing")
    routing["rules"].append(
        {
            "key": "repeated_complaint_with_regulator_or_media_threat",
            "description": "客户在多次投诉后提到监管机构、媒体或律师：必须立即转人工处理。见"
            "https://wiki.example.com/ops/after-sales/escalation-playbook?ticket=OPS-4821&section=regulators-and-media",
            "priority": 15,
            "category": "compliance",
            "match": "any",
            "outcome": "human_handoff",
            "conditions": [
                {"input_contains": "escalation_phrases_from_the_complaints_team_2026_q4"},
                {"input_contains": "high_risk"},
                {"input_contains": "refund_triggers"},
                {"candidate_confidence_below": "min_confidence"},
                {"candidate_in": ["refund_request", "refund_review", "close_order", "product_info"]},
                {"time_window": {"from": "22:00", "to": "06:00", "tz": "Asia/Shanghai"}},
                {"session_state_in": ["intent_clarify", "received", "refund_review", "escalated"]},
            ],
        }
    )
    return yaml.safe_dump(document, allow_unicode=True, sort_keys=False)


def _seed(user: Any) -> None:
    config_import(
        text=_config(),
        source="lists test",
        actor=user,
        reason="售后二组：加入升级投诉常用语和夜间转人工规则，按 2026 年第四季度的投诉记录整理（工单 OPS-4821）",
    )
    bot = "after_sales_assistant_wechat_official_account_production_cn_east"
    client = agent_api(bot, actor=user)
    inputs = [
        ("你好，我想问一下我上周买的空气净化器什么时候能发货，订单号是 E2026112900123", "general_query", 0.91),
        ("我要退款，这个产品质量太差了，用了两天就坏了，我已经联系了电视台的记者准备曝光你们", "refund_request", 0.88),
        ("把你们经理叫出来否则我就去法院起诉", "close_order", 0.42),
    ]
    for n, (text, candidate, confidence) in enumerate(inputs):
        session = f"wx-oa-o6_bmjrPTlm6_2A2Y9Z8X7W6V5U4T3S2R1-{n:04d}-2026120103103{n}"
        client.post("/api/v1/sessions", {"machine": "after_sales", "session_id": session}, format="json")
        answer = client.post(
            "/api/v1/decisions",
            {
                "point": "intent_routing",
                "session_id": session,
                "input": text,
                "candidate": {"decision": candidate, "confidence": confidence, "reason": "用户多次提到退款和投诉"},
                "apply": True,
            },
            format="json",
        )
        assert answer.status_code == 201, answer.content
    # Model output with a long unbroken token (a trace id, a base64 blob): boxes must wrap it too.
    raw = (
        '{"intent": "refund_request", "confidence": 0.93, "trace": "'
        + "eyJhbGciOiJIUzI1NiJ9" * 20
        + '", "reason": "'
        + "用户反复要求退款并威胁投诉，" * 30
        + '"}'
    )
    answer = client.post(
        "/api/v1/decisions",
        {"point": "intent_routing", "session_id": session, "input": inputs[0][0], "candidate_raw": raw},
        format="json",
    )
    assert answer.status_code == 201, answer.content
    record = DecisionRecord.objects.get(pk=answer.json()["id"])
    for n in range(3):
        Anomaly.objects.create(
            agent_id=record.agent_id,
            session_id=record.session_id,
            point="intent_routing",
            code="candidate_not_an_outcome" if n else "invalid_model_output",
            detail=(
                "The model proposed “refund_request_with_compensation_and_apology_letter”, which is not an outcome"
                " of intent_routing (close_order, refund_request, general_query, human_handoff, product_info,"
                " refund_review, intent_clarify); 模型给出的意图不在该决策点的结果列表中，已按默认结果处理。"
            ),
            raw=raw,
            decision_id=record.pk,
        )
    changes = [
        {
            "action": "update",
            "kind": "keyword_list",
            "key": f"escalation_phrases_from_the_complaints_team_2026_q{n}",
            "point": "",
            "before": {"terms": LONG_TERMS[:3]},
            "after": {"terms": LONG_TERMS},
        }
        for n in range(6)
    ]
    ChangeRequest.objects.create(
        risk="high",
        author=user,
        author_name=user.get_username(),
        reason="提高自动退款上限到 2000 元并加入新的升级投诉常用语，依据 2026 年 11 月售后复盘会议纪要第 3 条和第 7 条",
        base_revision=1,
        changes=changes,
    )
    RegressionCase.objects.create(
        point="intent_routing",
        input=inputs[1][0],
        expected="human_handoff",
        decided_at=record.created_at,
        decision_id=record.pk,
        note="售后二组：媒体曝光威胁必须转人工，这条用例来自 11 月 29 日的真实对话（已脱敏），不要删除。",
        created_by=user,
    )
    CandidateRequestCount.objects.create(
        day=timezone.now().date(), point="intent_routing", agent_id=record.agent_id, agent_name=bot, count=12
    )
    # One session waits in the queue for a while; one is claimed by this operator.
    Session.objects.filter(state="human_handoff").update(state_entered_at=timezone.now() - dt.timedelta(minutes=95))


def _login(page: Any, base: str) -> None:
    page.goto(f"{base}/admin/")
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")


def _datetimes(page: Any) -> tuple[list[str], list[str]]:
    """Date-times written on the page (text and title attributes): those in the one format, and others."""
    text = page.evaluate(
        "() => document.body.innerText + '\\n' +"
        " [...document.querySelectorAll('[title]')].map((e) => e.title).join('\\n')"
    )
    good = DATETIME.findall(text)
    bad = [m.group(0) for m in DATETIME_LIKE.finditer(text) if not DATETIME.match(text, m.start())]
    return good, bad


def test_every_list_fits_a_laptop_and_dates_are_written_one_way(
    live_server,
    transactional_db,
    chromium_page,
):
    user = get_user_model().objects.create_user(username=USERNAME, password=PASSWORD, is_staff=True, is_superuser=True)
    _seed(user)
    page = chromium_page
    page.set_viewport_size(VIEWPORT)
    base = live_server.url
    _login(page, base)

    problems: dict[str, list[str]] = {}
    for url, columns in LISTS.items():
        page.goto(f"{base}/admin/{url}")
        page.wait_for_selector("#result_list")
        found = page.evaluate(MEASURE, [list(columns), "#result_list"])
        _, bad = _datetimes(page)
        found += [f"date-time not in the one format: {b}" for b in bad]
        if found:
            problems[url] = found
        name = url.split("?")[0].strip("/").replace("/", "-")
        page.screenshot(path=str(SHOTS / f"arbiter-list-{name}.png"))
    assert not problems, "\n".join(f"{url}: {p}" for url, found in problems.items() for p in found)

    # The human queue (its own table) and the session and decision pages, with their timelines and boxes.
    page.goto(f"{base}/admin/agents/session/human-queue/")
    page.wait_for_selector("#human-queue")
    page.screenshot(path=str(SHOTS / "arbiter-list-human-queue.png"))
    found = page.evaluate(MEASURE, [["session", "agent", "waiting", "why", "holder", "actions"], "#human-queue"])
    assert not found, found
    good, bad = _datetimes(page)
    assert good and not bad, (good, bad)

    session = Session.objects.order_by("pk").first()
    assert session is not None
    details = {
        f"agents/session/{session.pk}/change/": "pre, .arbiter-timeline td",
        f"rules/decisionrecord/{DecisionRecord.objects.order_by('created_at').first().pk}/change/": "pre, td",
        f"agents/anomaly/{Anomaly.objects.order_by('pk').first().pk}/change/": "pre, .readonly",
        f"rules/changerequest/{ChangeRequest.objects.get().pk}/change/": "pre, td",
        f"rules/configrevision/{ConfigRevision.objects.order_by('-pk').first().pk}/change/": "pre, .readonly",
        "rules/decisionrecord/map/": "td, p",
        f"rules/rule/{Rule.objects.order_by('-pk').first().pk}/history/": "td",
    }
    for number, (url, boxes) in enumerate(details.items()):
        page.goto(f"{base}/admin/{url}")
        page.wait_for_selector("#content")
        page.screenshot(path=str(SHOTS / f"arbiter-detail-{number}-{url.split('/')[1]}.png"), full_page=True)
        overflowing = page.evaluate(BOXES, boxes)
        good, bad = _datetimes(page)
        assert not overflowing and good and not bad, (url, overflowing, good, bad)

    # In Chinese the dates read the same (Django's zh-hans formats would write 2026年12月1日 03:10).
    page.set_extra_http_headers({"Accept-Language": "zh-hans"})
    for url in ("rules/decisionrecord/", "agents/anomaly/", "rules/changerequest/", "agents/session/human-queue/"):
        page.goto(f"{base}/admin/{url}")
        page.wait_for_selector("#content")
        assert page.evaluate("document.documentElement.lang") == "zh-hans"
        good, bad = _datetimes(page)
        assert good and not bad, (url, good, bad)
