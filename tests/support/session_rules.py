"""A configuration whose rules read the session (issue 24, "Rules read the session"): seed 003's change of
address collects ``receiver_phone`` (personal data) and counts ``retry_count``; seed 001 §4.2's "has the
user used complaint keywords before", combined with the state. Shared by the decide, replay, simulator and
round-trip tests."""

from __future__ import annotations

from typing import Any

SESSION_RULES_YAML = """
version: 1
thresholds:
  - key: max_retries
    value: 3
keyword_lists:
  - key: complaint
    match: substring
    terms: [投诉, 12315]
points:
  - key: address_check
    outcomes: [proceed, clarify, human_handoff, ask_phone]
    default_outcome: clarify
    when_no_candidate: default
    machine: address
    state_map: {human_handoff: handoff, proceed: executing}
    fallback_state: collecting_params
    rules:
      - key: complaint_now
        priority: 10
        category: compliance
        outcome: human_handoff
        conditions:
          - input_contains: complaint
      - key: complained_before
        description: The user complained earlier in this conversation and is still giving details.
        priority: 20
        category: risk
        outcome: human_handoff
        conditions:
          - session_keyword_seen: complaint
            last: 3
          - session_state_in: [collecting_params]
      - key: too_many_retries
        priority: 30
        category: quality
        outcome: human_handoff
        conditions:
          - session_field: retry_count
            op: ">="
            threshold: max_retries
      - key: phone_ready
        priority: 40
        category: business
        outcome: proceed
        conditions:
          - session_field: receiver_phone
            pattern: '^1[3-9]\\d{9}$'
      - key: no_phone
        priority: 50
        category: business
        outcome: ask_phone
        conditions: []
  - key: complaint_watch
    description: Reads the session's latest decisions and its state, no field.
    outcomes: [human_handoff, carry_on]
    default_outcome: carry_on
    when_no_candidate: default
    machine: address
    rules:
      - key: complaint_now
        priority: 10
        category: compliance
        outcome: human_handoff
        conditions:
          - input_contains: complaint
      - key: complained_before
        priority: 20
        category: risk
        outcome: human_handoff
        conditions:
          - session_keyword_seen: complaint
            last: 3
          - session_state_in: [collecting_params]
machines:
  - key: address
    states: [collecting_params, executing, handoff, completed]
    initial: collecting_params
    handoff: handoff
    terminal: [completed]
    transitions:
      collecting_params: [executing, handoff]
      executing: [completed, handoff]
      handoff: [collecting_params]
    fields:
      - name: receiver_phone
        type: string
        pattern: '^1[3-9]\\d{9}$'
        normalize: [digits]
        pii: true
      - name: retry_count
        type: integer
        min: 0
        max: 5
"""


def session_rules_import() -> Any:
    """Import the configuration (the first import of a test database applies at once)."""
    from rules.config.yaml_import import config_import

    return config_import(text=SESSION_RULES_YAML, source="session_rules", actor=None, reason="test")
