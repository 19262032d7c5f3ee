"""The keyword corpus through the real decision path: catch rate and false-positive rates, with targets.

Every line of the corpus is a ``POST /api/v1/decisions`` on the demo configuration with a confident
whitelisted candidate, so only a hard rule can hand the message over. A line counts as handed over when
the high-risk keyword rule decided it. Runs on the test database, SQLite or PostgreSQL (DATABASE_URL).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from rules.models import DecisionRecord
from tests.support import agent_token, load_demo

HERE = Path(__file__).parent
CATCH_TARGET = 0.95  # of the evasions, at least
BENIGN_LIMIT = 1 / 20  # of the benign near-collisions, at most
_ESCAPE = re.compile(r"\\(\\|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})")


def unescape(text: str) -> str:
    return _ESCAPE.sub(lambda m: "\\" if m.group(1) == "\\" else chr(int(m.group(1)[1:], 16)), text)


def rows(name: str) -> list[list[str]]:
    lines = (HERE / name).read_text(encoding="utf-8").splitlines()
    return [[unescape(part) for part in line.split("\t")] for line in lines if line and not line.startswith("#")]


@pytest.fixture
def client(db) -> APIClient:
    load_demo(reason="api test demo")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {agent_token('api_bot', reason='api test')}")
    return client


def decide(client: APIClient, text: str) -> dict:
    response = client.post(
        "/api/v1/decisions",
        {
            "point": "intent_routing",
            "input": text,
            "candidate": {"decision": "general_query", "confidence": 0.9, "reason": "corpus"},
        },
        format="json",
    )
    assert response.status_code == 201, (text, response.content)
    return response.json()


def handed_over(decision: dict) -> bool:
    return decision["ruled_by"] == "hard_rule" and decision["rule"]["key"] == "high_risk_keyword"


def test_the_corpus_is_as_large_as_the_issue_asks():
    evasions = [r for r in rows("evasions.tsv") if r[0] != "plain"]
    assert len(evasions) >= 150
    assert len(rows("benign.tsv")) >= 20
    assert len(rows("ordinary.tsv")) >= 50
    kinds = {r[0] for r in evasions}
    assert {"invisible", "bidi", "variant", "digits", "bridge", "pinyin", "encoding", "latin"} <= kinds


def test_keyword_evasions_are_caught_and_near_collisions_are_not(client, capsys):
    missed: list[tuple[str, str, str]] = []
    evasions = rows("evasions.tsv")
    for kind, text, keyword in evasions:
        decision = decide(client, text)
        if not handed_over(decision):
            missed.append((kind, text, keyword))
        else:
            # The expected keyword is among the hits the decision log recorded (as the list's own terms).
            logged = DecisionRecord.objects.get(pk=decision["id"])
            assert keyword in logged.keyword_hits["high_risk"], (text, logged.keyword_hits)
    benign = rows("benign.tsv")
    false_alarms = [(kind, text) for kind, text, _near in benign if handed_over(decide(client, text))]
    ordinary = rows("ordinary.tsv")
    ordinary_alarms = [text for (text,) in ordinary if handed_over(decide(client, text))]

    caught = 1 - len(missed) / len(evasions)
    with capsys.disabled():
        print(
            f"\nkeyword corpus: {len(evasions) - len(missed)}/{len(evasions)} evasions caught ({caught:.1%}); "
            f"{len(false_alarms)}/{len(benign)} benign near-collisions handed over; "
            f"{len(ordinary_alarms)}/{len(ordinary)} ordinary sentences handed over"
        )
        for kind, text, keyword in missed:
            print(f"  missed {kind}: {text!r} (expected {keyword})")
        for kind, text in false_alarms:
            print(f"  false alarm {kind}: {text!r}")
    assert caught >= CATCH_TARGET, missed
    assert len(false_alarms) <= len(benign) * BENIGN_LIMIT, false_alarms
    assert not ordinary_alarms


def test_seed_001_s_weak_signal_is_the_model_s_to_weigh_and_names_no_keyword(client):
    decision = decide(client, "我不是要投诉，只是问一下流程")
    assert decision["decision"] == "general_query" and decision["ruled_by"] == "llm_candidate"
    # A strong word elsewhere in the same message still hands it over.
    assert handed_over(decide(client, "我不是要投诉，我要报警"))


def test_the_reason_says_which_reading_made_the_match(client):
    assert decide(client, "我要头诉")["reason"] == "high_risk_keyword: keyword 投诉 via pinyin (list high_risk)"
    assert decide(client, "投\u3164诉")["reason"].endswith("keyword 投诉 via invisible characters (list high_risk)")
    assert decide(client, "打一二三一五")["reason"].endswith("keyword 12315 via digits (list high_risk)")
    assert decide(client, "我要投诉")["reason"] == "high_risk_keyword: keyword 投诉 (list high_risk)"


def test_the_independent_corpus_meets_the_targets(client, capsys):
    """The independent adversarial corpus (``independent/``): written by a second pass that had not read the
    main corpus, decided through the same real path and held to the same targets as the test above.

    When it was added (2026-12-01) it caught 131 of 146 evasions and handed 15 of its 46 benign near-collisions
    over; the misses were fixed with general readings (docs/threat-model.md, "Keyword evasion"), each shown on
    new lines of the main corpus. What it still misses is listed in the threat model ("Known misses").
    """
    evasions = rows("independent/evasions.tsv")
    missed = [(kind, text, keyword) for kind, text, keyword in evasions if not handed_over(decide(client, text))]
    benign = rows("independent/benign.tsv")
    false_alarms = [(kind, text) for kind, text, _near in benign if handed_over(decide(client, text))]
    ordinary = [text for (text,) in rows("independent/ordinary.tsv") if handed_over(decide(client, text))]
    with capsys.disabled():
        print(
            f"\nindependent keyword corpus: {len(evasions) - len(missed)}/{len(evasions)} evasions caught; "
            f"{len(false_alarms)}/{len(benign)} benign near-collisions handed over; {len(ordinary)} ordinary"
        )
        for kind, text, keyword in missed:
            print(f"  missed {kind}: {text!r} (expected {keyword})")
        for kind, text in false_alarms:
            print(f"  false alarm {kind}: {text!r}")
    assert 1 - len(missed) / len(evasions) >= CATCH_TARGET, missed
    assert len(false_alarms) <= len(benign) * BENIGN_LIMIT, false_alarms
    assert not ordinary


# A third independent pass (``third/``), written without reading the project's corpora or code, and decided
# here only after the readings above were fixed: what they do on text nobody tuned them for.


def test_the_third_corpus_meets_the_targets(client, capsys):
    """Added 2026-12-02 with 143 of 150 evasions caught (95.3%) but 19 of 60 benign sentences handed over.
    The misses were fixed with general readings (negated hits, enclosed digits, quantities, brand names, a
    keyword never spanning two sentences; docs/threat-model.md, "Keyword evasion"), each shown on new lines of
    the main corpus; it is now held to the same targets. What it still misses is in "Known misses"."""
    evasions = rows("third/evasions.tsv")
    missed = [(kind, text, keyword) for kind, text, keyword in evasions if not handed_over(decide(client, text))]
    benign = rows("third/benign.tsv")
    false_alarms = [(kind, text) for kind, text, _near in benign if handed_over(decide(client, text))]
    ordinary = [text for (text,) in rows("third/ordinary.tsv") if handed_over(decide(client, text))]
    with capsys.disabled():
        print(
            f"\nthird keyword corpus: {len(evasions) - len(missed)}/{len(evasions)} evasions caught; "
            f"{len(false_alarms)}/{len(benign)} benign near-collisions handed over; {len(ordinary)} ordinary"
        )
        for kind, text, keyword in missed:
            print(f"  missed {kind}: {text!r} (expected {keyword})")
        for kind, text in false_alarms:
            print(f"  false alarm {kind}: {text!r}")
    assert 1 - len(missed) / len(evasions) >= CATCH_TARGET, missed
    assert len(false_alarms) <= len(benign) * BENIGN_LIMIT, false_alarms
    assert not ordinary
