"""The ``events:`` and ``guards:`` blocks of a machine in the configuration document: checked with line
numbers against the machine's states, transitions and fields and the document's points; pure."""

from __future__ import annotations

from rules.config.document.validate import config_from_yaml, config_problems

# Line numbers matter below.
DOC = """\
version: 1
thresholds: []
keyword_lists: []
points:
  - key: params_check
    outcomes: [complete, incomplete]
    default_outcome: complete
machines:
  - key: address
    states: [collecting, executing, done, handoff]
    initial: collecting
    handoff: handoff
    terminal: [done]
    transitions:
      collecting: [executing, handoff]
      executing: [done, collecting, handoff]
    fields:
      - name: phone
        type: string
    events:
      - name: clarification_required
        from: [executing]
        to: collecting
      - name: params_collected
        from: [collecting]
        to: executing
        guard:
          requires_decision: {point: params_check, outcomes: [complete]}
    guards:
      executing:
        done:
          requires_fields: [phone]
"""


def test_events_and_guards_read_in_canonical_form():
    (machine,) = config_from_yaml(DOC)["machines"]
    assert machine["events"][0] == {"name": "clarification_required", "from": ["executing"], "to": "collecting"}
    assert machine["events"][1]["guard"] == {"requires_decision": {"point": "params_check", "outcomes": ["complete"]}}
    assert machine["guards"] == {"executing": {"done": {"requires_fields": ["phone"]}}}


def test_each_problem_is_reported_at_its_line():
    broken = (
        DOC.replace("from: [executing]\n        to: collecting", "from: [collecting]\n        to: done")
        .replace("outcomes: [complete]}", "outcomes: [maybe]}")
        .replace("requires_fields: [phone]", "requires_fields: [email]")
        .replace("      - name: params_collected", "      - name: clarification_required")
    )
    problems = config_problems(broken)
    assert any("line 22" in p and "do not allow collecting → done" in p for p in problems), problems
    assert any("line 24" in p and "declared twice" in p for p in problems), problems
    assert any("line 28" in p and "not an outcome of params_check: maybe" in p for p in problems), problems
    assert any("line 32" in p and "not a field of the machine: email" in p for p in problems), problems


def test_an_unknown_point_and_an_edge_not_in_the_table():
    broken = DOC.replace("point: params_check", "point: nowhere").replace("        done:\n", "        nowhere:\n")
    problems = config_problems(broken)
    assert any("line 28" in p and "there is no decision point nowhere" in p for p in problems), problems
    assert any("line 31" in p and "not a state of the machine: nowhere" in p for p in problems), problems
