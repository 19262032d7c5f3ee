"""``Session.update_fields`` and ``Session.move(updates=…)`` against the live server: the normalised value
stored and reported, a refused value (all or nothing) and a state that requires a missing field, with the
session's position taken from every answer and refusal."""

from __future__ import annotations

import arbiter_client as ac
import pytest

from rules.config.machines import machine_save
from rules.models import StateMachine
from tests.support import make_user

PHONE = {
    "name": "receiver_phone",
    "type": "string",
    "pattern": r"^1[3-9]\d{9}$",
    "normalize": ["digits"],
    "required_in": ["executing"],
    "pii": True,
}
MACHINE = {
    "states": ["collecting_params", "executing", "handoff", "completed"],
    "initial_state": "collecting_params",
    "handoff_state": "handoff",
    "terminal_states": ["completed"],
    "transitions": {"collecting_params": ["executing", "handoff"], "executing": ["completed", "handoff"]},
    "max_anomalies": 3,
}


@pytest.fixture
def machine(live) -> str:
    fields = [PHONE, {"name": "note", "type": "string"}]
    machine_save(machine=StateMachine(key="address_fields", **MACHINE, fields=fields), actor=make_user("m"), reason="t")
    return "address_fields"


def test_fields_are_set_normalised_and_required(bot, machine) -> None:
    s = bot.session(machine=machine, session_id="f-1")
    with pytest.raises(ac.FieldsMissing) as missing:
        s.move("executing")
    assert missing.value.problem["missing"] == ["receiver_phone"] and (s.state, s.seq) == ("collecting_params", 0)

    with pytest.raises(ac.InvalidFields) as refused:
        s.update_fields({"receiver_phone": "abc", "note": "ring twice"})
    assert set(refused.value.errors) == {"receiver_phone"}
    assert s.seq == 0 and "note" not in bot.session_get("f-1")["session"]["fields"]  # all or nothing

    with pytest.raises(ac.InvalidFields):
        s.update_fields({"receiver_phone": 13800138000})  # a number is not text: strict types

    updated = s.update_fields({"receiver_phone": "138-0013-8000"})
    assert updated["fields"]["receiver_phone"] == "13800138000"
    assert updated["normalised"] == {"receiver_phone": ["digits"]}
    assert s.seq == 1  # a fields write is a move that stays in its state

    moved = s.move("executing", updates={"note": "ring twice"})
    assert (s.state, s.seq) == ("executing", 2) and moved["session"]["fields"]["note"] == "ring twice"
