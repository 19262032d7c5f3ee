"""What the admin tests share: a small configuration built through the services, and a rendered admin
form turned back into the POST a browser would send."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from django import forms
from django.contrib.messages import get_messages

from agents.runtimes.services import agent_create
from agents.webhooks.services import webhook_subscription_create
from rules.config.machines import machine_save
from rules.config.mcp_servers import mcp_server_save, mcp_tools_seen
from rules.config.records import (
    condition_save,
    keyword_list_save,
    keyword_terms_add,
    point_save,
    rule_save,
    threshold_save,
)
from rules.config.revisions import config_change
from rules.config.tools import tool_save
from rules.models import (
    Condition,
    ConditionKind,
    DecisionPoint,
    KeywordList,
    MatchMode,
    Operator,
    Rule,
    RuleCategory,
    StateMachine,
    Threshold,
    ToolContract,
)

REASON = "Test configuration"


# --- building a small configuration through the services ------------------------------------------------


def build_config(actor: Any) -> dict[str, Any]:
    """Two thresholds, two keyword lists (one regex), a point with two rules of several condition kinds,
    a state machine, a read-only tool contract, an MCP server, an agent runtime, and a drift of one of the
    server's tools (a new tool whose schema cannot be a contract, so it files no change request); every write
    through a service, so history rows exist too.

    The writes join one configuration change: on an empty database that is the installation's first
    configuration, one revision that applies at once with the four-eyes gate on (as a first import does)."""
    with config_change(actor=actor, reason=REASON):
        built = _build_config(actor)
    broken = {"name": "cancel_order", "inputSchema": {"type": "object", "properties": {"id": {"type": "strng"}}}}
    assert mcp_tools_seen("orders", [broken]) == {"cancel_order"}
    return built


def _build_config(actor: Any) -> dict[str, Any]:
    kw = {"actor": actor, "reason": REASON}
    min_conf = threshold_save(
        threshold=Threshold(
            key="min_confidence",
            name="Minimum confidence",
            value=Decimal("0.65"),
            unit="ratio",
            min_value=Decimal("0"),
            max_value=Decimal("1"),
        ),
        **kw,
    )
    refund_limit = threshold_save(
        threshold=Threshold(
            key="auto_refund_limit",
            name="Automatic refund limit",
            value=Decimal("500"),
            unit="CNY",
            min_value=Decimal("0"),
            max_value=Decimal("10000"),
            high_risk=True,
        ),
        **kw,
    )
    refund_words = keyword_list_save(keyword_list=KeywordList(key="refund_words", name="Refund words"), **kw)
    keyword_terms_add(keyword_list=refund_words, terms=["refund", "退款", "money back"], **kw)
    complaint = keyword_list_save(keyword_list=KeywordList(key="complaint_patterns", match_mode=MatchMode.REGEX), **kw)
    keyword_terms_add(keyword_list=complaint, terms=[r"complain(t|ed)?", "投诉"], **kw)
    point = point_save(
        point=DecisionPoint(
            key="refund_approval",
            name="Refund approval",
            facts={"refund_amount": "number", "customer_tier": "string"},
            outcomes=["approve", "deny", "handoff"],
            candidate_whitelist=["approve", "deny"],
            default_outcome="handoff",
        ),
        **kw,
    )
    big_refund = rule_save(
        rule=Rule(
            point=point,
            key="big_refund",
            priority=10,
            category=RuleCategory.RISK,
            outcome="handoff",
            combinator="any",
            description="Large refunds and complaints go to a person.",
        ),
        **kw,
    )
    condition_save(
        condition=Condition(
            rule=big_refund,
            position=1,
            kind=ConditionKind.FACT,
            fact="refund_amount",
            operator=Operator.GT,
            threshold=refund_limit,
        ),
        **kw,
    )
    condition_save(
        condition=Condition(rule=big_refund, position=2, kind=ConditionKind.INPUT_CONTAINS, keyword_list=complaint),
        **kw,
    )
    unsure = rule_save(
        rule=Rule(point=point, key="unsure_gold", priority=20, category=RuleCategory.QUALITY, outcome="handoff"),
        **kw,
    )
    for position, condition in enumerate(
        [
            Condition(kind=ConditionKind.CANDIDATE_CONFIDENCE_BELOW, threshold=min_conf),
            Condition(kind=ConditionKind.CANDIDATE_IN, outcomes=["approve"]),
            Condition(kind=ConditionKind.FACT, fact="customer_tier", operator=Operator.IN, value=["gold", "platinum"]),
            Condition(
                kind=ConditionKind.TIME_WINDOW,
                window_start=dt.time(8),
                window_end=dt.time(22),
                timezone="Asia/Shanghai",
            ),
            Condition(kind=ConditionKind.SESSION_STATE_IN, states=["collecting"]),
            Condition(kind=ConditionKind.INPUT_CONTAINS, keyword_list=refund_words),
        ],
        start=1,
    ):
        condition.rule, condition.position = unsure, position
        condition_save(condition=condition, **kw)
    machine = machine_save(
        machine=StateMachine(
            key="support_flow",
            states=["greeting", "collecting", "handoff", "done"],
            initial_state="greeting",
            handoff_state="handoff",
            terminal_states=["done"],
            transitions={"greeting": ["collecting"], "collecting": ["handoff", "done"], "handoff": ["done"]},
            actions={"collecting": ["ask", "lookup_order"]},
            timeouts={"collecting": 900},
        ),
        **kw,
    )
    lookup_order = tool_save(
        tool=ToolContract(
            name="lookup_order",
            input_schema={"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
            error_codes=[{"code": "RATE_LIMIT_EXCEEDED", "retryable": True, "max_retries": 3}],
            risk="read_only",
        ),
        **kw,
    )
    mcp_server_save(user=actor, reason=REASON, name="orders", url="https://orders.example/mcp")
    agent, token = agent_create(name="support_bot", point_keys=["refund_approval"], **kw)
    webhook_subscription_create(
        agent=agent, url="https://hooks.example.com/arbiter", event_kinds=["session.handed_off"], **kw
    )
    return {
        "min_confidence": min_conf,
        "auto_refund_limit": refund_limit,
        "refund_words": refund_words,
        "complaint_patterns": complaint,
        "point": point,
        "big_refund": big_refund,
        "unsure_gold": unsure,
        "machine": machine,
        "lookup_order": lookup_order,
        "agent": agent,
        "token": token,
    }


# --- turning a rendered admin form back into POST data --------------------------------------------------


def _field_data(bf: forms.BoundField) -> dict[str, Any]:
    widget = bf.field.widget
    inner = getattr(widget, "widget", widget)  # RelatedFieldWidgetWrapper
    value = bf.value()
    if isinstance(inner, forms.CheckboxInput):
        return {bf.html_name: "on"} if value else {}
    if isinstance(inner, forms.MultiWidget):
        parts = value if isinstance(value, list | tuple) else inner.decompress(value)
        return {f"{bf.html_name}_{i}": "" if part is None else str(part) for i, part in enumerate(parts)}
    if isinstance(value, list | tuple):
        return {bf.html_name: [str(v) for v in value]}
    return {bf.html_name: "" if value is None else str(value)}


def form_data(response: Any) -> dict[str, Any]:
    """The POST a browser would send for the admin page in ``response`` if nothing were changed."""
    assert response.status_code == 200, response.status_code
    forms_: list[forms.BaseForm] = [response.context["adminform"].form]
    for inline in response.context.get("inline_admin_formsets", []):
        forms_.append(inline.formset.management_form)
        forms_.extend(inline.formset.forms)
    data: dict[str, Any] = {}
    for form in forms_:
        for bf in form:
            data.update(_field_data(bf))
    return data


def messages_of(response: Any) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]
