"""Documents and helpers the configuration-as-code tests share (tests/rules/config/document/)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings

from rules.config.selectors import config_document
from rules.models import (
    Condition,
    ConfigRevision,
    DecisionPoint,
    KeywordList,
    KeywordTerm,
    Rule,
    StateMachine,
    Threshold,
)

DEMO_FILE = Path(settings.BASE_DIR) / "demo" / "after_sales.yaml"

AUDITED = (Threshold, KeywordList, KeywordTerm, DecisionPoint, Rule, Condition, StateMachine)

EMPTY_YAML = """\
version: 1
thresholds: []
keyword_lists: []
points: []
machines: []
"""

# Every condition kind, every match mode, effective dates (one given with an offset), a time window
# across midnight, shadow and off rules, literal facts of every type, a machine with actions, timeouts and
# fields of every type.
FULL_YAML = """\
version: 1
thresholds:
  - key: min_confidence
    value: 0.65
    unit: ratio
    min: 0
    max: 1
    high_risk: true
  - key: refund_limit
    name: Refund limit
    description: |-
      Above this a person looks.
      Second line, with 中文.
    value: 1234.5
    unit: CNY
  - key: tiny
    value: 0.000001
keyword_lists:
  - key: abuse
    name: Abuse
    match: word
    terms: [idiot, Stupid]
  - key: order_numbers
    match: regex
    terms: ['\\d{11}', 'ord-[0-9]+']
  - key: refund_words
    terms: [退款, '12315', ＲＥＦＵＮＤ]
points:
  - key: routing
    name: Routing
    description: Everything at once.
    facts:
      amount: number
      items: integer
      channel: string
      vip: boolean
      tags: string_list
      order_no: string
    outcomes: [answer, refund, clarify, human]
    candidate_whitelist: [answer, refund]
    default_outcome: clarify
    when_no_candidate: default
    mask_fact_paths: [order_no]
    rules:
      - key: abusive
        description: Abuse goes to a person.
        priority: 1
        category: compliance
        outcome: human
        conditions:
          - input_contains: abuse
      - key: big_refund
        priority: 5
        category: risk
        match: any
        outcome: human
        conditions:
          - fact: amount
            op: '>='
            threshold: refund_limit
          - fact: items
            op: '<'
            value: 3
          - fact: channel
            op: in
            value: [web, app]
          - fact: vip
            op: '=='
            value: true
          - fact: tags
            op: '!='
            value: spam
          - fact_matches: {fact: order_no, pattern: ' ^E\\d{10}$ '}
      - key: candidates
        priority: 7
        category: business
        outcome: refund
        effective_from: 2025-01-01T00:00:00Z
        effective_until: '2026-01-01T08:00:00+08:00'
        conditions:
          - candidate_in: [answer]
          - candidate_not_in: [refund, human]
          - input_contains: order_numbers
      - key: not_whitelisted
        priority: 8
        category: risk
        mode: shadow
        outcome: human
        conditions:
          - candidate_not_in_whitelist: true
      - key: unsure
        priority: 9
        category: quality
        outcome: clarify
        conditions:
          - candidate_confidence_below: min_confidence
      - key: night
        priority: 20
        category: business
        mode: off
        outcome: human
        conditions:
          - time_window: {from: 22:00, to: '06:30', tz: Asia/Shanghai}
          - session_state_in: [waiting, on]
  - key: second
    outcomes: [only]
    default_outcome: only
    mask_facts: false
machines:
  - key: flow
    name: Flow
    states: [start, work, person, done]
    initial: start
    handoff: person
    terminal: [done]
    transitions:
      start: [work, person]
      work: [done, person]
      person: [done]
      done: []
    actions:
      work: [do_it, undo_it]
    timeouts:
      work: 30
      person: 2.5
    max_anomalies: 5
    fields:
      - name: phone
        type: string
        description: 收货人手机号
        pattern: '^1[3-9]\\d{9}$'
        required_in: [work]
        pii: true
        normalize: [digits]
      - name: retry_count
        type: integer
        min: 0
        max: 3
        default: 0
      - name: confirmed
        type: boolean
        normalize: [boolean_words]
      - name: due
        type: datetime
        normalize: [trim, date]
      - name: channel
        type: enum
        enum: [web, app]
        default: web
      - name: items
        type: array
        min_length: 1
        max_length: 20
        schema: {type: array, items: {type: object, properties: {sku: {type: string}, quantity: {type: integer}}}}
      - name: amount
        type: number
        min: 0.5
      - name: address
        type: object
"""


def db_state() -> dict[str, Any]:
    """Everything an import could change: the configuration, every history table, the revisions."""
    return {
        "document": config_document(),
        "history": {model.__name__: model.history.count() for model in AUDITED},
        "revisions": ConfigRevision.objects.count(),
    }
