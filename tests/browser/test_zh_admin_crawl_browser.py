"""Every admin page in Simplified Chinese, in a real browser: no English that Arbiter wrote.

``bin/check-translations`` only sees strings marked for translation; an f-string in a service or an
admin column is invisible to it and shows as English in the Chinese admin. This test signs in as a
superuser whose browser asks for ``zh-hans``, builds data so that every kind of page has content (a
decision log with an overridden decision, change requests with risks and history events, a session
with a timeline, a queue item, revisions, history rows, the map, the simulator with a result and with a
JSON error), then crawls every admin page reachable from the index — de-duplicated by URL pattern,
bounded — and fails on:

- a run of two or more English words in the visible text once the data is taken out. "The data" is
  every text value the records hold that a person or an agent typed (configuration, the demo's English
  descriptions, inputs, usernames, JSON shown as data), but not the fields Arbiter itself writes (see
  ``ARBITER_WRITTEN``): those must be translated when shown;
- any msgid of the catalogue (two words or more) shown as it is, i.e. untranslated.

The failure lists each page read and each English run found on it, so it says what to fix.
"""

from __future__ import annotations

import contextlib
import gettext as gettext_module
import json
import re
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import django
import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.db import models
from rest_framework.test import APIClient

from agents.runtimes.services import agent_create
from decision_service.admin.forms import DEFAULT_REASON, DEFAULT_REASONS
from rules.config.mcp_servers import mcp_server_save, mcp_tools_seen
from rules.config.records import threshold_save
from rules.config.selectors import config_document
from rules.decisions.compute import DecideRequest
from rules.decisions.presenters import replay_body
from rules.decisions.replay import decision_replay
from rules.errors import ApprovalRequired
from rules.governance.change_requests import change_request_approve, change_request_propose
from rules.governance.simulate import decision_simulate
from rules.models import ChangeRequest, DecisionRecord, McpToolDrift, Threshold
from tests.support import ROOT, load_demo, reviewed_digest

pytestmark = [pytest.mark.browser]

USERNAME, PASSWORD = "ops_zh_crawl", "ops-password-crawl"
APPROVER = "li_wei_approver"
MO = ROOT / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.mo"
MAX_PAGES = 260
PER_PATTERN = 3  # a few instances of each URL pattern: the first record of a list is not always the telling one
BUDGET_SECONDS = 150
CHOICE_MEMBERS = {"category", "mode", "match", "when_no_candidate", "combinator", "type", "op", "kind"}
SIMULATED = DecideRequest(point="refund_approval", facts={"refund_amount": 800})

# Fields whose text Arbiter writes (not a person, not an agent): shown in the admin, they must be in the
# operator's language, so they are not taken out as data.
ARBITER_WRITTEN = {
    ("rules", "changerequest", "risks"),
    ("rules", "changerequest", "failure"),
    ("rules", "changerequest", "superseded_by"),
    ("rules", "changerequestevent", "detail"),
    ("*", "*", "history_change_reason"),
}
# Names and formats that stay as they are in Chinese text (products, formats, protocols).
PROPER_NAMES = {
    "arbiter", "json", "yaml", "csv", "api", "http", "https", "url", "id", "uuid", "llm", "celery", "redis",
    "postgresql", "sqlite", "django", "utc", "ok", "svg", "png", "cny",
}  # fmt: skip
WORD = r"[A-Za-z][a-z]*(?:['’-][a-z]+)*"
# Two or more words, each standing alone (not part of an identifier, a path, an address or a number).
ENGLISH_RUN = re.compile(rf"(?<![\w./@:#=’'-])(?:{WORD})(?:[ ]+(?:{WORD}))+(?![\w/@#=’'-])")
SKIP_PATH = re.compile(
    r"/(logout|delete|password|set_language|jsi18n|autocomplete)/|/r/\d+/|\.(csv|json|yaml|svg|png)$"
)


def _normalise(path: str) -> str:
    path = re.sub(r"/[0-9a-f]{8}-[0-9a-f-]{27}/", "/<uuid>/", path)
    return re.sub(r"/\d+/", "/<n>/", path)


def _texts(value: Any) -> Iterator[str]:
    """Every string in a value as a page may show it: JSON's keys and scalars, each line of a text."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _texts(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _texts(item)
    elif value is not None and not isinstance(value, bool):
        text = str(value)
        yield text
        yield from (line.strip() for line in text.splitlines())


def _data_strings() -> list[str]:
    """The text values of every record that a person or an agent wrote, longest first."""
    found: set[str] = set()
    for model in apps.get_models():
        label = model._meta.app_label, model._meta.model_name
        fields = [
            field
            for field in model._meta.concrete_fields
            if isinstance(field, models.CharField | models.TextField | models.JSONField)
            and not {(*label, field.name), ("*", "*", field.name)} & ARBITER_WRITTEN
        ]
        if not fields or label[0] in ("sessions", "admin", "contenttypes"):
            continue
        for row in model._default_manager.values_list(*(f.name for f in fields)):
            for value in row:
                if isinstance(value, str) and value[:1] in "[{":
                    with contextlib.suppress(ValueError):
                        value = json.loads(value)
                # The admin's default change reasons are its own words, even where a record keeps them.
                found.update(t for t in _texts(value) if len(t) >= 2 and t not in DEFAULT_REASONS)
    # A decision's ``reason`` is the engine's one line for logs, in English as the API answers it (the
    # log stores it so): the replays and simulations the pages compute show the same kind of line.
    for record in DecisionRecord.objects.all():
        found.update(_texts(replay_body(decision_replay(record=record))))
    for revision in (None, 1):
        simulated = decision_simulate(request=SIMULATED, session_state="", revision=revision)
        found.update(_texts(simulated.decision.reason))
    return sorted(found, key=len, reverse=True)


def _po_msgids(path: Path) -> Iterator[str]:
    """The msgids (and plural msgids) of a .po file."""
    current: list[str] | None = None
    for line in [*path.read_text(encoding="utf-8").splitlines(), ""]:
        if line.startswith(("msgid ", "msgid_plural ")):
            if current:
                yield "".join(current)
            current = [json.loads(line.split(" ", 1)[1])]
        elif line.startswith('"') and current is not None:
            current.append(json.loads(line))
        else:
            if current:
                yield "".join(current)
            current = None


def _fragments(msgid: str) -> Iterator[str]:
    """The parts of a message of two words or more between its placeholders and punctuation."""
    for piece in re.split(r"%\(\w+\)[sd]|%[sd]|\{[^}]*\}|<[^>]+>|[\n:;,()“”\"]", msgid):
        piece = piece.strip(" .,…")
        words = [w for w in piece.split() if w.lower() not in PROPER_NAMES]
        if len(words) >= 2 and ENGLISH_RUN.fullmatch(piece):
            yield piece


def _django_untranslated() -> list[str]:
    """What Django's own admin shows in English under zh-hans (its catalogue lacks the translation):
    Django's English, not Arbiter's."""
    root = Path(django.__file__).parent
    translated: set[str] = set()
    for mo in root.glob("**/locale/zh_Hans/LC_MESSAGES/*.mo"):
        with mo.open("rb") as handle:
            catalogue = gettext_module.GNUTranslations(handle)._catalog  # type: ignore[attr-defined]
        translated.update(k if isinstance(k, str) else k[0] for k, v in catalogue.items() if v)
    fragments = {
        piece
        for po in root.glob("**/locale/en/LC_MESSAGES/*.po")
        for msgid in _po_msgids(po)
        if msgid and msgid not in translated
        for piece in _fragments(msgid)
    }
    return sorted(fragments, key=len, reverse=True)


def _catalogue() -> list[str]:
    """The msgids with a translation that differs, as fragments of two words or more (placeholders cut out)."""
    with MO.open("rb") as handle:
        catalogue = gettext_module.GNUTranslations(handle)._catalog  # type: ignore[attr-defined]
    fragments = {
        piece
        for msgid, msgstr in catalogue.items()
        if isinstance(msgid, str) and msgid and msgid != msgstr
        for piece in _fragments(msgid)
    }
    return sorted(fragments, key=len, reverse=True)


class Data:
    """What the records hold, split in two: texts with more than one word (or non-ASCII), taken out of the
    page before looking for English; and single ASCII words (keys, names, JSON members), which stay in the
    text — taking "value" out of "changes value of a threshold" would hide the sentence — but a run made
    of nothing else is data."""

    def __init__(self, strings: list[str]) -> None:
        single = re.compile(r"[A-Za-z][A-Za-z_’'-]*")
        self.words = {s.lower() for s in strings if single.fullmatch(s)}
        self.texts = [s for s in strings if not single.fullmatch(s)]

    def without(self, text: str) -> str:
        for value in self.texts:
            if value in text:
                text = text.replace(value, "\n")
        return text

    def english(self, text: str) -> list[str]:
        runs = []
        for match in ENGLISH_RUN.finditer(text):
            words = [w for w in match.group().split() if w.lower() not in PROPER_NAMES]
            if len(words) < 2 and len(match.group().split()) < 3:
                continue
            if all(w.lower() in self.words for w in words):
                continue
            runs.append(match.group())
        return runs


def _config_words() -> set[str]:
    """Keys and names of the configuration and the sessions (outcomes, states, machines, points, rules)."""
    from rules.config.selectors import config_document as document

    def keys(value: Any) -> Iterator[str]:
        if isinstance(value, dict):
            for key, item in value.items():
                yield str(key)
                if key not in CHOICE_MEMBERS:  # a rule's category or mode is a label to translate
                    yield from keys(item)
        elif isinstance(value, list):
            for item in value:
                yield from keys(item)
        elif isinstance(value, str):
            yield value

    words = {t for t in keys(document()) if re.fullmatch(r"[a-z][a-z0-9_]*", t)}
    for model in apps.get_models():
        if model._meta.app_label == "agents" and model._meta.model_name in ("session", "transition"):
            for field in ("state", "from_state", "to_state"):
                if field in {f.name for f in model._meta.concrete_fields}:
                    words.update(model._default_manager.values_list(field, flat=True))
    return words


def _choice_values(data_words: set[str]) -> set[str]:
    """The stored values of Arbiter's choice fields whose label says something else (``compliance`` →
    合规): shown alone, such a value is a label left untranslated. Values that are also keys of the
    configuration or words typed into it are left out."""
    values: set[str] = set()
    for model in apps.get_models():
        if model._meta.app_label not in ("rules", "agents"):
            continue
        for field in model._meta.concrete_fields:
            for value, label in field.choices or ():
                if isinstance(value, str) and re.fullmatch(r"[a-z][a-z_]+", value) and value != str(label):
                    values.add(value)
    # Long keys are shown with a break opportunity after each underscore (refund_<wbr>approval): their
    # pieces are text nodes of their own, and a piece may spell a choice value ("approval").
    pieces = {piece for word in data_words for piece in word.split("_") if piece}
    return values - data_words - pieces


TEXT_NODES = """() => {
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const found = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (parent && !['SCRIPT', 'STYLE', 'TEXTAREA'].includes(parent.tagName) && parent.offsetParent !== null) {
      found.push(node.textContent.trim());
    }
  }
  return found;
}"""


def _build_data(user: Any) -> None:
    """Demo plus one of every kind of record the admin has pages for."""
    User = get_user_model()
    load_demo(actor=user, reason="导入演示配置")
    approver = User.objects.create_user(username=APPROVER, password="x-approver-1", is_staff=True, is_superuser=True)
    _, token = agent_create(
        name="support_bot", point_keys=["intent_routing", "refund_approval"], actor=user, reason="t"
    )
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")

    def post(path: str, body: dict, status: int) -> dict:
        response = api.post(path, body, format="json")
        assert response.status_code == status, response.content
        return response.json()

    # A session with a timeline: a fallback with an anomaly, an illegal move, an interrupt and resume.
    post("/api/v1/sessions", {"machine": "after_sales", "session_id": "chat-42"}, 201)
    post(
        "/api/v1/decisions",
        {"point": "intent_routing", "session_id": "chat-42", "input": "我要退款", "apply": True},
        201,
    )
    post("/api/v1/sessions/chat-42/transitions", {"to": "closed", "expected_state": "intent_clarify"}, 422)
    post("/api/v1/sessions/chat-42/interrupt", {"to": "refund_review", "expected_state": "intent_clarify"}, 200)
    post("/api/v1/sessions/chat-42/resume", {"expected_state": "refund_review"}, 200)
    # A queue item: a rule's handoff, from an overridden candidate.
    post("/api/v1/sessions", {"machine": "after_sales", "session_id": "chat-7"}, 201)
    candidate = {"decision": "general_query", "confidence": 0.9, "reason": "顾客在提问"}
    post(
        "/api/v1/decisions",
        {"point": "intent_routing", "session_id": "chat-7", "input": "我要投诉", "candidate": candidate, "apply": True},
        201,
    )
    # Decisions of every kind: low confidence, accepted, raw output without a candidate, refund over the limit.
    post(
        "/api/v1/decisions",
        {
            "point": "intent_routing",
            "input": "有几种颜色？",
            "candidate": {"decision": "product_info", "confidence": 0.3},
        },
        201,
    )
    post(
        "/api/v1/decisions",
        {
            "point": "intent_routing",
            "input": "有几种颜色？",
            "candidate": {"decision": "product_info", "confidence": 0.9},
        },
        201,
    )
    post("/api/v1/decisions", {"point": "intent_routing", "input": "你好", "candidate_raw": "不是 JSON"}, 201)
    post("/api/v1/decisions", {"point": "refund_approval", "facts": {"refund_amount": 800}}, 201)
    post("/api/v1/decisions", {"point": "intent_routing", "input": "有几种颜色？"}, 200)  # a count of "ask the LLM"
    post("/api/v1/sessions/chat-7/anomalies", {"code": "invalid_json", "detail": "模型没有返回 JSON"}, 201)

    # An edit in the admin's words (the default reason) and a second revision, so that "revision 1" is offered.
    spare = threshold_save(
        threshold=Threshold(key="vip_limit", name="VIP 限额", value=Decimal("1000"), unit="CNY"),
        actor=user,
        reason="新增",
    )
    spare.value = Decimal("1200")
    threshold_save(threshold=spare, actor=user, reason=DEFAULT_REASON)
    # A high-risk edit made the way the admin makes it: held as a change request with its risks.
    threshold = Threshold.objects.get(key="min_confidence")
    threshold.value = Decimal("0.66")
    with pytest.raises(ApprovalRequired):
        threshold_save(threshold=threshold, actor=user, reason=DEFAULT_REASON)

    # Change requests: one applied by a second approver (events, a third revision), one pending with risks.
    document = config_document()
    for item in document["thresholds"]:
        if item["key"] == "auto_refund_limit":
            item["value"] = 800
    applied = change_request_propose(document=document, actor=user, reason="提高自动退款上限")
    change_request_approve(request=applied, actor=approver, reason="已与财务核对", digest=reviewed_digest(applied))
    document = config_document()
    for item in document["thresholds"]:
        if item["key"] == "auto_refund_limit":
            item["value"] = 900
    pending = change_request_propose(document=document, actor=user, reason="再提高一次")
    assert ChangeRequest.objects.get(pk=pending.pk).state == "pending"

    # An MCP server and its tool's drifts: one adopted (its request approved), one resolved (the upstream
    # went back, its request withdrawn), one open with its pending request.
    # Not the demo's own `orders` server: its write tools make a change of its URL wait for a second person.
    mcp_server_save(user=user, reason="客户服务系统", name="crm", url="https://crm.example/mcp")
    lookup = {"name": "lookup", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}}
    wider = {**lookup, "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}}}
    mcp_tools_seen("crm", [lookup])
    new = McpToolDrift.objects.get().change_request
    change_request_approve(request=new, actor=approver, reason="上游新工具", digest=reviewed_digest(new))
    for upstream in (lookup, wider, lookup, {**wider, "description": "按编号查询"}):
        mcp_tools_seen("crm", [upstream])
    assert sorted(McpToolDrift.objects.values_list("status", flat=True)) == ["adopted", "open", "resolved"]


def _visible_text(page: Any) -> str:
    # Option labels of closed selects are not in innerText in every engine: read them too.
    options = page.eval_on_selector_all("option", "els => els.map(e => e.textContent)")
    return page.inner_text("body") + "\n" + "\n".join(options)


def test_the_chinese_admin_shows_no_english_arbiter_wrote(live_server, transactional_db, chromium_page):
    user = get_user_model().objects.create_user(username=USERNAME, password=PASSWORD, is_staff=True, is_superuser=True)
    _build_data(user)
    page = chromium_page
    base = live_server.url
    page.set_extra_http_headers({"Accept-Language": "zh-hans,zh;q=0.9"})
    page.goto(f"{base}/admin/login/")
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")
    assert page.get_attribute("html", "lang") == "zh-hans"

    data = Data(sorted({*_data_strings(), *_django_untranslated()}, key=len, reverse=True))
    msgids = _catalogue()
    choices = _choice_values(_config_words())
    findings: dict[str, list[str]] = {}
    read: list[str] = []

    def check(label: str) -> None:
        text = data.without(_visible_text(page))
        runs = data.english(text)
        shown = [m for m in msgids if re.search(rf"(?<![A-Za-z]){re.escape(m)}(?![A-Za-z])", text)]
        alone = sorted({t for t in page.evaluate(TEXT_NODES) if t in choices})
        if runs or shown or alone:
            findings[label] = (
                sorted(set(runs))
                + [f"untranslated msgid: {m!r}" for m in shown]
                + [f"choice value shown for its label: {v!r}" for v in alone]
            )

    # The simulator with a result (under the current revision and compared with revision 1), then a JSON error.
    page.goto(f"{base}/admin/rules/decisionrecord/simulator/")
    page.select_option("select[name=point]", "refund_approval")
    page.fill("textarea[name=facts]", '{"refund_amount": 800}')
    page.select_option("select[name=compare]", "r1")
    page.click("input[name=simulate]")
    page.wait_for_selector("#simulation-results")
    read.append("simulator (a result, compared with revision 1)")
    check(read[-1])
    page.fill("textarea[name=facts]", '{"refund_amount": 80')
    page.click("input[name=simulate]")
    page.wait_for_selector(".errorlist")
    read.append("simulator (facts that are not JSON)")
    check(read[-1])

    started = time.monotonic()
    # The records made above for their texts, whatever their place in their lists.
    vip = Threshold.objects.get(key="vip_limit").pk
    queue = [
        f"{base}/admin/",
        f"{base}/admin/rules/threshold/{vip}/change/",
        f"{base}/admin/rules/threshold/{vip}/history/",
        *(
            f"{base}/admin/rules/changerequest/{pk}/change/"
            for pk in ChangeRequest.objects.values_list("pk", flat=True)
        ),
    ]
    seen_urls: set[str] = set()
    per_pattern: dict[str, int] = {}
    while queue and len(read) < MAX_PAGES and time.monotonic() - started < BUDGET_SECONDS:
        url = queue.pop(0)
        if url in seen_urls:
            continue
        seen_urls.add(url)
        response = page.goto(url)
        if response is None or response.status != 200 or "html" not in (response.headers.get("content-type") or ""):
            findings.setdefault(urlsplit(url).path, []).append(f"answered {response and response.status}")
            continue
        path = urlsplit(page.url).path
        read.append(path)
        check(path)
        for href in page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))"):
            target = urljoin(page.url, href).split("#")[0]
            parts = urlsplit(target)
            if not target.startswith(f"{base}/admin/") or SKIP_PATH.search(parts.path):
                continue
            target = f"{base}{parts.path}"  # filters and sorting repeat their list: one per list
            pattern = _normalise(parts.path)
            if target in seen_urls or target in queue or per_pattern.get(pattern, 0) >= PER_PATTERN:
                continue
            per_pattern[pattern] = per_pattern.get(pattern, 0) + 1
            queue.append(target)

    report = "\n".join(f"  {path}: {runs}" for path, runs in findings.items())
    kinds = {_normalise(p) for p in read}
    # The crawl reached every kind of page the brief names.
    for kind in (
        "/admin/",
        "/admin/rules/decisionrecord/",
        "/admin/rules/decisionrecord/<uuid>/change/",
        "/admin/rules/changerequest/<n>/change/",
        "/admin/rules/threshold/<n>/history/",
        "/admin/rules/threshold/<n>/history/<n>/",
        "/admin/rules/rule/add/",
        "/admin/rules/decisionrecord/map/",
        "/admin/agents/session/<n>/change/",
        "/admin/rules/configrevision/<n>/change/",
    ):
        assert kind in kinds, f"the crawl did not reach {kind}; read {len(read)} pages:\n" + "\n".join(sorted(kinds))
    assert not findings, f"English in the Chinese admin on {len(findings)} of {len(read)} pages read:\n{report}"
