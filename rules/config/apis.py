"""The API's reads of configuration records.

``ConfigDocumentApi``: the staff API's read of the live configuration, the document ``export_config``
prints, as YAML or JSON. Staff API tokens only (``StaffApi``). The document holds every record the admin's
configuration pages show, so the user needs the view permission of each of them (``READ_CONFIG``), as both
governance groups have.

``MachineDetailApi``: an agent's read of a state machine its points move sessions of, so that a runtime
reads the flow instead of copying it.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from rest_framework.request import Request
from rest_framework.response import Response

from decision_service.api.base import AgentApi, StaffApi, request_agent, require_permission
from decision_service.errors import InvalidRequest
from rules.config.selectors import config_document, machine_get_for_agent
from rules.config.yaml_export import document_yaml
from rules.models import StateMachine

READ_CONFIG = tuple(
    f"rules.view_{model}" for model in ("threshold", "keywordlist", "decisionpoint", "rule", "statemachine")
)
FORMATS = ("yaml", "json")


def _wants_json(request: Request) -> bool:
    chosen = request.query_params.get("format")
    if chosen is not None:
        if chosen not in FORMATS:
            raise InvalidRequest(f"Unknown format {chosen!r}.", errors={"format": [f"One of: {', '.join(FORMATS)}."]})
        return chosen == "json"
    accept = request.headers.get("Accept", "")
    # YAML unless JSON is asked for and YAML is not: a client that accepts anything reads what
    # ``import_config`` and a change request take.
    return "application/json" in accept and "yaml" not in accept


class ConfigDocumentApi(StaffApi):
    query_parameters = ("format",)

    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        # The format is chosen by ``_wants_json``, never refused with a 406.
        return super().perform_content_negotiation(request, force=True)

    def get(self, request: Request) -> HttpResponse | Response:
        for permission in READ_CONFIG:
            require_permission(request, permission)
        wants_json = _wants_json(request)
        document = config_document()
        if wants_json:
            return Response(document)
        return HttpResponse(document_yaml(document).encode("utf-8"), content_type="application/yaml; charset=utf-8")


def machine_body(machine: StateMachine) -> dict[str, Any]:
    """A machine as the agent API shows it: the model's names (``initial_state``, ``handoff_state``,
    ``terminal_states``), every state in ``transitions`` and ``actions`` (``[]`` where it has none), in
    the order the machine declares its states."""
    states = list(machine.states)
    return {
        "key": machine.key,
        "name": machine.name,
        "description": machine.description,
        "states": states,
        "initial_state": machine.initial_state,
        "handoff_state": machine.handoff_state,
        "terminal_states": list(machine.terminal_states),
        "transitions": {s: list(machine.transitions.get(s, [])) for s in states},
        "actions": {s: list(machine.actions.get(s, [])) for s in states},
        "timeouts": {s: machine.timeouts[s] for s in states if s in machine.timeouts},
        "max_anomalies": machine.max_anomalies,
    }


class MachineDetailApi(AgentApi):
    def get(self, request: Request, machine_key: str) -> Response:
        machine = machine_get_for_agent(allowed=request_agent(request).points, machine_key=machine_key)
        return Response(machine_body(machine))
