"""Every endpoint's answers, as recorded: the steps of ``steps.json`` replayed against ``answers.json``.

How the corpus works, what is normalised and how to re-record it (only when a behaviour change is
intended): see ``tests/support/corpus.py``. In short:

    ARBITER_RECORD_CORPUS=1 .venv/bin/python -m pytest tests/api/corpus
"""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from agents.runtimes.services import agent_create
from rules.config.yaml_import import config_import
from tests.support import DEMO
from tests.support import corpus as runner

pytestmark = pytest.mark.django_db


@pytest.fixture
def tokens(db, settings) -> dict[str, str]:
    """The demo loaded as tests/api/conftest.py loads it, and two agents' tokens."""
    # The answers name the engine that decided ("engine": "native"): ARBITER_ENGINE must not change them.
    settings.ARBITER_ENGINE = "native"
    config_import(text=DEMO.read_text(encoding="utf-8"), source=str(DEMO), actor=None, reason="api corpus")
    _, token = agent_create(
        name="corpus_bot", point_keys=["intent_routing", "refund_approval"], actor=None, reason="api corpus"
    )
    _, refund_token = agent_create(name="refund_bot", point_keys=["refund_approval"], actor=None, reason="api corpus")
    return {"token": token, "refund_token": refund_token}


def test_every_answer_is_as_recorded(tokens):
    client = APIClient()
    client.raise_request_exception = False  # a server error is an answer to record, not a test crash
    steps = runner.read_json(runner.STEPS)
    answers = runner.run(client, steps, tokens)
    if runner.recording():
        runner.write_json(runner.ANSWERS, answers)
        return
    problem = runner.differences(runner.read_json(runner.ANSWERS), answers, steps)
    if problem is not None:
        pytest.fail(problem, pytrace=False)


@pytest.mark.parametrize("path", [runner.STEPS, runner.ANSWERS], ids=lambda p: p.name)
def test_the_corpus_files_are_written_canonically(path):
    # Sorted keys, indent 2, UTF-8 text as it is: a hand edit of steps.json keeps the files' diffs readable.
    text = path.read_text(encoding="utf-8")
    assert text == runner.dumps(runner.read_json(path)), f"rewrite {path.name} with runner.write_json"
