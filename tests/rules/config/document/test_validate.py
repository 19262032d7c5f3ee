"""Document checks: pure, no database. Every problem names its YAML path and line."""

from __future__ import annotations

import pytest

from rules.config.document.validate import config_from_yaml, config_problems
from rules.errors import ConfigError
from tests.support.configio import DEMO_FILE, EMPTY_YAML, FULL_YAML

# Line numbers matter below: each test changes one line of this document and expects that line.
BASE = """\
version: 1
thresholds:
  - key: limit
    value: 500
    min: 0
    max: 1000
keyword_lists:
  - key: words
    terms: [退款, refund]
points:
  - key: refund
    facts: {amount: number, channel: string}
    outcomes: [approve, handoff]
    default_outcome: approve
    rules:
      - key: big
        priority: 10
        category: risk
        outcome: handoff
        conditions:
          - fact: amount
            op: '>'
            threshold: limit
machines: []
"""


def problems_after(old: str, new: str) -> list[str]:
    assert old in BASE, old
    return config_problems(BASE.replace(old, new, 1))


def test_the_base_document_and_the_examples_are_valid():
    assert config_problems(BASE) == []
    assert config_problems(EMPTY_YAML) == []
    assert config_problems(FULL_YAML) == []
    assert config_problems(DEMO_FILE.read_text(encoding="utf-8")) == []


def test_validation_needs_no_database():
    # No django_db mark: pytest-django fails any query made here.
    config_from_yaml(FULL_YAML)
    config_problems(BASE.replace("outcome: handoff", "outcome: refund"))


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        # an outcome the point does not declare, wherever it is used
        (
            "outcome: handoff",
            "outcome: refund",
            "points[0].rules[0].outcome: 'refund' is not an outcome of refund (line 19)",
        ),
        (
            "default_outcome: approve",
            "default_outcome: maybe",
            "points[0].default_outcome: 'maybe' is not an outcome of refund (line 14)",
        ),
        (
            "    default_outcome: approve",
            "    default_outcome: approve\n    candidate_whitelist: [approve, deny]",
            "points[0].candidate_whitelist[1]: 'deny' is not an outcome of refund (line 15)",
        ),
        (
            "          - fact: amount\n            op: '>'\n            threshold: limit",
            "          - candidate_not_in: [approve, refuse]\n\n",
            "points[0].rules[0].conditions[0].candidate_not_in[1]: 'refuse' is not an outcome of refund (line 21)",
        ),
        # thresholds
        (
            "    value: 500",
            "    value: 1500",
            "thresholds[0].value: 1500 is outside the allowed bounds 0 … 1000 (line 4)",
        ),
        (
            "    min: 0",
            "    min: 2000",
            "thresholds[0].max: the upper bound 1000 is below the lower bound 2000 (line 6)",
        ),
        ("    value: 500", "    value: '500'", "thresholds[0].value: expected a number, got the text '500' (line 4)"),
        (
            "    value: 500",
            "    value: 0.1234567",
            "thresholds[0].value: 0.1234567 has more than 6 decimal places (line 4)",
        ),
        ("    value: 500", "    value: .nan", "thresholds[0].value: expected a finite number, got nan (line 4)"),
        # references to records that do not exist
        (
            "            threshold: limit",
            "            threshold: ceiling",
            "points[0].rules[0].conditions[0].threshold: there is no threshold 'ceiling' in thresholds (line 23)",
        ),
        (
            "          - fact: amount\n            op: '>'\n            threshold: limit",
            "          - input_contains: phrases\n\n",
            "points[0].rules[0].conditions[0].input_contains: there is no keyword list 'phrases' in keyword_lists "
            "(line 21)",
        ),
        (
            "          - fact: amount\n            op: '>'\n            threshold: limit",
            "          - candidate_confidence_below: confidence\n\n",
            "points[0].rules[0].conditions[0].candidate_confidence_below: there is no threshold 'confidence' "
            "in thresholds (line 21)",
        ),
        # facts masked in the log
        (
            "    default_outcome: approve",
            "    default_outcome: approve\n    mask_fact_paths: [phone]",
            "points[0].mask_fact_paths: 'phone' is not a fact of this point (line 15)",
        ),
        (
            "    default_outcome: approve",
            "    default_outcome: approve\n    mask_fact_paths: [channel.code]",
            "points[0].mask_fact_paths: 'channel.code': a string fact has no parts; name the fact (line 15)",
        ),
        (
            "    default_outcome: approve",
            "    default_outcome: approve\n    mask_fact_paths: [channel]\n    mask_facts: false",
            "points[0].mask_fact_paths: this point does not mask its facts: remove the paths or mask the facts "
            "(line 15)",
        ),
        (
            "    default_outcome: approve",
            "    default_outcome: approve\n    mask_facts: 'no'",
            "points[0].mask_facts: expected true or false, got the text 'no' (line 15)",
        ),
        (
            "    default_outcome: approve",
            "    default_outcome: approve\n    store_raw_output: 1",
            "points[0].store_raw_output: expected true or false, got 1 (line 15)",
        ),
        # facts
        (
            "          - fact: amount",
            "          - fact: total",
            "points[0].rules[0].conditions[0].fact: 'total' is not a declared fact of refund (line 21)",
        ),
        (
            "          - fact: amount",
            "          - fact: channel",
            "points[0].rules[0].conditions[0].op: the operator > needs a number fact; this one is string (line 22)",
        ),
        (
            "            threshold: limit",
            "            value: lots",
            "points[0].rules[0].conditions[0].value: the value 'lots' does not fit a number fact (line 23)",
        ),
        (
            "            op: '>'",
            "            op: '=~'",
            "points[0].rules[0].conditions[0].op: '=~' is not one of <, <=, >, >=, ==, !=, in (line 22)",
        ),
        (
            "            threshold: limit",
            "            threshold: limit\n            value: 3",
            "points[0].rules[0].conditions[0]: compare the fact with either a threshold or a value, not both or "
            "neither (line 21)",
        ),
        (
            "    facts: {amount: number, channel: string}",
            "    facts: {amount: money, channel: string}",
            "points[0].facts.amount: unknown fact type 'money' (use string, number, integer, boolean, string_list) "
            "(line 12)",
        ),
        # rules
        ("priority: 10", "priority: -1", "points[0].rules[0].priority: expected a whole number ≥ 0, got -1 (line 17)"),
        (
            "priority: 10",
            "priority: high",
            "points[0].rules[0].priority: expected a whole number ≥ 0, got the text 'high' (line 17)",
        ),
        (
            "priority: 10",
            "priority: 1.5",
            "points[0].rules[0].priority: expected a whole number ≥ 0, got 1.5 (line 17)",
        ),
        (
            "category: risk",
            "category: legal",
            "points[0].rules[0].category: 'legal' is not one of compliance, risk, business, quality (line 18)",
        ),
        (
            "category: risk",
            "category: risk\n        mode: loud",
            "points[0].rules[0].mode: 'loud' is not one of enforce, shadow, off (line 19)",
        ),
        (
            "category: risk",
            "category: risk\n        match: most",
            "points[0].rules[0].match: 'most' is not one of all, any (line 19)",
        ),
        (
            "category: risk",
            "category: risk\n        effective_from: 2025-06-01T00:00:00Z\n"
            "        effective_until: 2025-06-01T08:00:00+08:00",
            "points[0].rules[0].effective_until: the end of the effective period must come after its start (line 20)",
        ),
        (
            "category: risk",
            "category: risk\n        effective_from: 2025-06-01 10:00",
            "points[0].rules[0].effective_from: give the time zone offset (e.g. 2025-06-01T00:00:00Z or "
            "2025-06-01T08:00:00+08:00) (line 19)",
        ),
        # keyword lists
        (
            "    terms: [退款, refund]",
            "    terms: [退款, refund, ＲＥＦＵＮＤ]",
            "keyword_lists[0].terms[2]: 'ＲＥＦＵＮＤ' is the same term as terms[1] ('refund') after normalisation "
            "(NFKC, case folding) (line 9)",
        ),
        (
            "    terms: [退款, refund]",
            "    match: regex\n    terms: ['(退款', refund]",
            "keyword_lists[0].terms[0]: '(退款' is not a valid regular expression: missing ), unterminated "
            "subpattern at position 0 (line 10)",
        ),
        (
            "    terms: [退款, refund]",
            "    match: fuzzy\n    terms: [退款, refund]",
            "keyword_lists[0].match: 'fuzzy' is not one of substring, word, segmented, regex (line 9)",
        ),
        # time windows
        (
            "          - fact: amount\n            op: '>'\n            threshold: limit",
            "          - time_window: {from: '22:00', to: '06:00', tz: Mars/Olympus}\n\n",
            "points[0].rules[0].conditions[0].time_window.tz: 'Mars/Olympus' is not a known time zone (use an IANA "
            "name such as Asia/Shanghai) (line 21)",
        ),
        (
            "          - fact: amount\n            op: '>'\n            threshold: limit",
            "          - time_window: {from: '24:00', to: '06:00', tz: UTC}\n\n",
            "points[0].rules[0].conditions[0].time_window.from: expected a time of day as HH:MM, got '24:00' (line 21)",
        ),
        # structure
        (
            "    default_outcome: approve",
            "    default_outcome: approve\n    colour: red",
            "points[0].colour: unknown key 'colour' (expected one of: key, name, description, facts, outcomes, "
            "candidate_whitelist, default_outcome, when_no_candidate, machine, state_map, fallback_state, mask_skip, "
            "mask_patterns, mask_fact_paths, mask_facts, store_raw_output, rules) (line 15)",
        ),
        ("    value: 500\n", "", "thresholds[0]: missing required key 'value' (line 3)"),
        ("machines: []", "", "document: missing required key 'machines' (line 1)"),
        (
            "    outcomes: [approve, handoff]",
            "    outcomes: approve",
            "points[0].outcomes: expected a list, got the text 'approve' (line 13)",
        ),
        ("version: 1", "version: 2", "version: unsupported format version 2; this Arbiter reads version 1 (line 1)"),
        (
            "          - fact: amount\n            op: '>'\n            threshold: limit",
            "          - candidate_in: [approve]\n            candidate_not_in: [handoff]\n",
            "points[0].rules[0].conditions[0]: a condition has exactly one kind; this one has candidate_in and "
            "candidate_not_in (line 21)",
        ),
        (
            "          - fact: amount\n            op: '>'\n            threshold: limit",
            "          - candidate_not_in_whitelist: false\n\n",
            "points[0].rules[0].conditions[0].candidate_not_in_whitelist: write candidate_not_in_whitelist: true "
            "(got false) (line 21)",
        ),
        (
            "  - key: words",
            "  - key: Words",
            "keyword_lists[0].key: 'Words' is not a valid key (use lower-case letters, digits and underscores, "
            "starting with a letter, at most 64) (line 8)",
        ),
    ],
)
def test_each_problem_names_its_path_and_line(old, new, expected):
    assert problems_after(old, new) == [expected]


def test_invalid_yaml_names_the_line():
    assert problems_after("    min: 0", "    min: [0") == [
        "document: invalid YAML: expected ',' or ']', but got ':' (while parsing a flow sequence that starts on "
        "line 5) (line 6)"
    ]
    assert problems_after("    min: 0", "  min: 0") == [
        "document: invalid YAML: expected <block end>, but found '?' (while parsing a block collection that "
        "starts on line 3) (line 5)"
    ]


def test_a_document_that_is_not_a_mapping_or_is_empty():
    assert config_problems("- 1\n- 2\n") == [
        "document: expected a mapping with the keys version, thresholds, keyword_lists, points, machines, tools, "
        "mcp_servers, got a list (line 1)"
    ]
    assert config_problems("") == ["document: the file is empty (line 1)"]
    assert config_problems("# only a comment\n") == ["document: the file is empty (line 1)"]


def test_duplicate_yaml_keys_are_reported_not_silently_overwritten():
    assert problems_after("        outcome: handoff", "        outcome: handoff\n        outcome: approve") == [
        "points[0].rules[0].outcome: duplicate key 'outcome' (first given on line 19) (line 20)"
    ]


def test_duplicate_record_keys_name_both_records():
    two_thresholds = BASE.replace("keyword_lists:", "  - key: limit\n    value: 1\nkeyword_lists:")
    assert config_problems(two_thresholds) == [
        "thresholds[1].key: duplicate key 'limit': thresholds[0] (line 3) has it too (line 7)"
    ]
    second_rule = (
        "      - key: big\n        priority: 20\n        category: business\n        outcome: approve\n"
        "        conditions: []\nmachines: []"
    )
    assert problems_after("machines: []", second_rule) == [
        "points[0].rules[1].key: duplicate key 'big': rules[0] (line 16) has it too (line 24)"
    ]


def test_machines_are_checked_with_the_state_machine_rules():
    machine = """\
machines:
  - key: flow
    states: [start, done, lost]
    initial: begin
    handoff: done
    terminal: [done]
    transitions:
      start: [done]
      done: [start]
"""
    assert problems_after("machines: []\n", machine) == [
        "machines[0].initial: 'begin' is not one of the states (line 27)",
        "machines[0].terminal: terminal states cannot have outgoing transitions: done (line 29)",
    ]
    unreachable = machine.replace("initial: begin", "initial: start").replace("      done: [start]\n", "")
    assert problems_after("machines: []\n", unreachable) == [
        "machines[0].transitions: not reachable from the initial state 'start': lost (line 30)"
    ]
    assert problems_after("machines: []\n", machine + "    timeouts: {start: -5}\n    max_anomalies: 0\n") == [
        "machines[0].initial: 'begin' is not one of the states (line 27)",
        "machines[0].terminal: terminal states cannot have outgoing transitions: done (line 29)",
        "machines[0].timeouts.start: expected a positive number of seconds, got -5 (line 33)",
        "machines[0].max_anomalies: expected a whole number ≥ 1, got 0 (line 34)",
    ]


def test_every_problem_is_reported_at_once_in_line_order():
    text = (
        BASE.replace("    value: 500", "    value: 5000")
        .replace("outcome: handoff", "outcome: nowhere")
        .replace("category: risk", "category: loud")
    )
    assert config_problems(text) == [
        "thresholds[0].value: 5000 is outside the allowed bounds 0 … 1000 (line 4)",
        "points[0].rules[0].category: 'loud' is not one of compliance, risk, business, quality (line 18)",
        "points[0].rules[0].outcome: 'nowhere' is not an outcome of refund (line 19)",
    ]


def test_a_problem_with_a_threshold_is_not_repeated_by_the_rules_using_it():
    assert problems_after("    value: 500", "    value: high") == [
        "thresholds[0].value: expected a number, got the text 'high' (line 4)"
    ]


def test_config_from_yaml_raises_config_error_with_every_problem():
    with pytest.raises(ConfigError) as exc:
        config_from_yaml(BASE.replace("outcome: handoff", "outcome: refund").replace("priority: 10", "priority: -2"))
    assert exc.value.problems == [
        "points[0].rules[0].priority: expected a whole number ≥ 0, got -2 (line 17)",
        "points[0].rules[0].outcome: 'refund' is not an outcome of refund (line 19)",
    ]
    assert exc.value.code == "invalid_config"


def test_yaml_one_point_one_surprises_are_read_as_written():
    # Unquoted 18:00 is a base-60 integer and on/off are booleans in YAML 1.1; where text is expected,
    # the text as written is taken instead.
    document = config_from_yaml(FULL_YAML)
    night = document["points"][0]["rules"][-1]
    assert night["mode"] == "off"
    assert night["conditions"] == [
        {"time_window": {"from": "22:00", "to": "06:30", "tz": "Asia/Shanghai"}},
        {"session_state_in": ["waiting", "on"]},
    ]
    assert document["keyword_lists"][2]["terms"] == ["退款", "12315", "refund"]


def test_the_canonical_form_fills_defaults_and_orders_like_the_selector():
    document = config_from_yaml(FULL_YAML)
    assert [t["key"] for t in document["thresholds"]] == ["min_confidence", "refund_limit", "tiny"]
    assert document["thresholds"][2] == {"key": "tiny", "value": 1e-06, "high_risk": False}
    routing = document["points"][0]
    assert [r["key"] for r in routing["rules"]] == [
        "abusive",
        "big_refund",
        "candidates",
        "not_whitelisted",
        "unsure",
        "night",
    ]
    candidates = routing["rules"][2]
    assert candidates["effective_from"] == "2025-01-01T00:00:00Z"
    assert candidates["effective_until"] == "2026-01-01T00:00:00Z"
    assert document["points"][1] == {
        "key": "second",
        "outcomes": ["only"],
        "candidate_whitelist": [],
        "default_outcome": "only",
        "when_no_candidate": "ask",
        "mask_facts": False,
        "rules": [],
    }
    # A state with no way out is left out of transitions, as the selector leaves it out.
    assert "done" not in document["machines"][0]["transitions"]


def test_the_complete_example_in_the_docs_is_the_demo_configuration():
    docs = (DEMO_FILE.parent.parent / "docs" / "config.md").read_text(encoding="utf-8")
    example = docs.split("## A complete example", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    assert config_problems(example) == []

    def without_names(document):
        # The docs leave out some record names and descriptions; everything else is the demo's.
        for section in ("thresholds", "keyword_lists", "points", "machines"):
            for record in document[section]:
                record.pop("name", None)
                record.pop("description", None)
        return document

    assert without_names(config_from_yaml(example)) == without_names(
        config_from_yaml(DEMO_FILE.read_text(encoding="utf-8"))
    )


def test_a_date_beyond_the_storable_range_is_a_problem_not_a_crash():
    from rules.config.document.validate import config_problems

    text = """version: 1
thresholds: []
keyword_lists: []
points:
  - key: p
    outcomes: [a]
    default_outcome: a
    rules:
      - key: r
        priority: 1
        category: business
        outcome: a
        effective_until: "9999-12-31T23:00:00-05:00"
        conditions: []
machines: []
"""
    assert config_problems(text) == [
        "points[0].rules[0].effective_until: '9999-12-31T23:00:00-05:00' is out of the range of dates that can be "
        "stored (line 13)"
    ]


FACT_MATCHES = "          - fact_matches:\n              fact: channel\n              pattern: '^web'\n"
CONDITION = "          - fact: amount\n            op: '>'\n            threshold: limit\n"


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "fact: channel",
            "fact: amount",
            "points[0].rules[0].conditions[0].fact_matches.fact: a regular expression needs a string fact; this one "
            "is number (line 22)",
        ),
        (
            "fact: channel",
            "fact: total",
            "points[0].rules[0].conditions[0].fact_matches.fact: 'total' is not a declared fact of refund (line 22)",
        ),
        (
            "pattern: '^web'",
            "pattern: '(web'",
            "points[0].rules[0].conditions[0].fact_matches.pattern: not a valid regular expression: missing ), "
            "unterminated subpattern at position 0 (line 23)",
        ),
        (
            "pattern: '^web'",
            "pattern: 'a{99999999999}'",
            "points[0].rules[0].conditions[0].fact_matches.pattern: not a valid regular expression: the repetition "
            "number is too large (line 23)",
        ),
        (
            "pattern: '^web'",
            f"pattern: '{'w' * 201}'",
            "points[0].rules[0].conditions[0].fact_matches.pattern: the regular expression is longer than 200 "
            "characters (line 23)",
        ),
        (
            "pattern: '^web'",
            "pattern: '   '",
            "points[0].rules[0].conditions[0].fact_matches.pattern: give the regular expression (line 23)",
        ),
        (
            "pattern: '^web'",
            'pattern: "web\\0"',
            "points[0].rules[0].conditions[0].fact_matches.pattern: text cannot hold a NUL character (line 23)",
        ),
        (
            "              pattern: '^web'\n",
            "",
            "points[0].rules[0].conditions[0].fact_matches: missing required key 'pattern' (line 21)",
        ),
        (
            "pattern: '^web'",
            "pattern: '^web'\n              flags: i",
            "points[0].rules[0].conditions[0].fact_matches.flags: unknown key 'flags' (expected one of: fact, "
            "pattern) (line 24)",
        ),
        (
            "          - fact_matches:\n              fact: channel\n              pattern: '^web'\n",
            "          - fact_matches: '^web'\n",
            "points[0].rules[0].conditions[0].fact_matches: expected a mapping with fact and pattern, got the text "
            "'^web' (line 21)",
        ),
    ],
)
def test_fact_matches_problems_name_their_path_and_line(old, new, expected):
    text = BASE.replace(CONDITION, FACT_MATCHES, 1)
    assert config_problems(text) == []
    assert old in text, old
    assert config_problems(text.replace(old, new, 1)) == [expected]


def test_a_fact_matches_pattern_is_stored_trimmed():
    text = BASE.replace(CONDITION, FACT_MATCHES.replace("'^web'", "'  ^web  '"), 1)
    [condition] = config_from_yaml(text)["points"][0]["rules"][0]["conditions"]
    assert condition == {"fact_matches": {"fact": "channel", "pattern": "^web"}}


def test_a_validators_sentence_becomes_a_clause():
    from rules.config.document.readers import clause

    assert clause("A term cannot be empty.") == "a term cannot be empty"
    assert clause("The operator > needs a number fact; this one is string.") == (
        "the operator > needs a number fact; this one is string"
    )
    assert clause("IANA names only.") == "IANA names only"
    assert clause("'x' is not a valid key.") == "'x' is not a valid key"


def test_an_empty_term_is_a_problem_at_its_line():
    assert problems_after("    terms: [退款, refund]", "    terms: [退款, ' ']") == [
        "keyword_lists[0].terms[1]: a term cannot be empty (line 9)"
    ]
