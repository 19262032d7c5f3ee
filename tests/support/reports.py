"""The configuration the report tests decide on: three points whose rules cover every way a rule can
show in a report (hard, shadow, off, candidate checks), with the window constants they count in."""

from __future__ import annotations

CONFIG = """
version: 1
thresholds:
  - {key: min_confidence, value: 0.65, min: 0, max: 1, high_risk: true}
keyword_lists:
  - {key: high_risk, match: substring, terms: [投诉, '12315']}
  - {key: complaint, match: substring, terms: [我要投诉]}
points:
  - key: guarded
    outcomes: [handoff, answer, clarify]
    candidate_whitelist: [answer]
    default_outcome: clarify
    rules:
      - {key: complaint, priority: 10, category: compliance, outcome: handoff,
         conditions: [{input_contains: high_risk}]}
      - {key: complaint_again, priority: 20, category: business, outcome: clarify,
         conditions: [{input_contains: complaint}]}
      - {key: low_confidence, priority: 50, category: quality, outcome: clarify,
         conditions: [{candidate_confidence_below: min_confidence}]}
      - {key: trial, priority: 60, category: quality, outcome: clarify, mode: shadow,
         conditions: [{candidate_in: [answer]}]}
      - {key: retired, priority: 70, category: quality, outcome: clarify, mode: 'off',
         conditions: [{candidate_in: [clarify]}]}
  - key: half
    outcomes: [answer, clarify]
    candidate_whitelist: [answer]
    default_outcome: clarify
    rules:
      - {key: low_confidence, priority: 50, category: quality, outcome: clarify,
         conditions: [{candidate_confidence_below: min_confidence}]}
  - key: open
    outcomes: [handoff, answer, clarify]
    candidate_whitelist: [answer]
    default_outcome: clarify
    when_no_candidate: default
    rules:
      - {key: complaint, priority: 10, category: compliance, outcome: handoff,
         conditions: [{input_contains: high_risk}]}
machines: []
"""
