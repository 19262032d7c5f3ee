"""A machine with fields, events and guards (seed 003's change of address), and a session of it whose
fields were set the ways an agent sets them — PATCH …/fields, a move with updates, a clearing PATCH — all
through the HTTP API. Shared by the session admin's page tests and its browser test."""

from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient

from agents.sessions.models import Session
from rules.config.machines import machine_save
from rules.models import StateMachine
from tests.support import agent_api

PHONE_RAW = "138-0013-8000"
PHONE = "13800138000"
MACHINE_KEY = "address_fields"
FIELDS: list[dict[str, Any]] = [
    {
        "name": "receiver_phone",
        "type": "string",
        "pattern": r"^1[3-9]\d{9}$",
        "normalize": ["digits"],
        "required_in": ["executing"],
        "pii": True,
    },
    {"name": "new_address", "type": "string", "min_length": 2, "required_in": ["executing"]},
    {"name": "note", "type": "string"},
]
EVENTS: list[dict[str, Any]] = [
    {"name": "confirm", "from": ["collecting_params", "clarify"], "to": "executing"},
    {"name": "clarification_required", "from": ["collecting_params"], "to": "clarify"},
]
GUARDS: dict[str, Any] = {"clarify": {"executing": {"requires_fields": ["new_address"]}}}
MACHINE: dict[str, Any] = {
    "states": ["collecting_params", "executing", "clarify", "handoff", "completed"],
    "initial_state": "collecting_params",
    "handoff_state": "handoff",
    "terminal_states": ["completed"],
    "transitions": {
        "collecting_params": ["executing", "clarify", "handoff"],
        "clarify": ["collecting_params", "executing", "handoff"],
        "executing": ["completed", "handoff"],
        "handoff": ["collecting_params"],
    },
    "max_anomalies": 3,
}


def address_machine_save(*, actor: Any, **changes: Any) -> StateMachine:
    """The machine saved (created, or changed by ``changes``) as an operator's audited write."""
    machine = StateMachine.objects.filter(key=MACHINE_KEY).first()
    if machine is None:
        machine = StateMachine(key=MACHINE_KEY, **MACHINE, fields=FIELDS, events=EVENTS, guards=GUARDS)
    for name, value in changes.items():
        setattr(machine, name, value)
    return machine_save(machine=machine, actor=actor, reason="field history test")


def _ok(response: Any) -> dict[str, Any]:
    assert response.status_code in (200, 201), response.content
    return response.json()


def session_with_field_history(
    *, actor: Any, key: str = "addr-1", agent: str = "address_bot", note: str = "call after 6pm"
) -> tuple[APIClient, Session]:
    """A session of the machine (saved first if need be) whose fields moved like this:

    1. PATCH: receiver_phone (typed with dashes, normalised) and note — a ``fields`` move, seq 1;
    2. PATCH: note changed and new_address set — seq 2;
    3. a move with the address updated — collecting_params → executing, seq 3;
    4. PATCH: note cleared — seq 4.
    """
    if not StateMachine.objects.filter(key=MACHINE_KEY).exists():
        address_machine_save(actor=actor)
    api = agent_api(agent, points=[], actor=actor)
    base = f"/api/v1/sessions/{key}"
    _ok(api.post("/api/v1/sessions", {"machine": MACHINE_KEY, "session_id": key}, format="json"))
    patch = [
        {"receiver_phone": PHONE_RAW, "note": note},
        {"note": "after 7pm", "new_address": "杭州市西湖区"},
    ]
    for updates in patch:
        _ok(api.patch(f"{base}/fields", {"expected_state": "collecting_params", "updates": updates}, format="json"))
    move = {"to": "executing", "expected_state": "collecting_params", "updates": {"new_address": "杭州市滨江区"}}
    _ok(api.post(f"{base}/transitions", move, format="json"))
    _ok(api.patch(f"{base}/fields", {"expected_state": "executing", "updates": {"note": None}}, format="json"))
    return api, Session.objects.get(key=key, agent__name=agent)
