"""What the reference conversations need beyond demo/after_sales.yaml, added to it for a throwaway
installation (the tests' and ``bin/agent-demo``'s own database), never to the demo file itself.

The address change of seed 003 needs a point that routes its intents with ``change_address``'s machine
(the demo routes only the after-sales one), and the order tool the agent runs once the session is in
``executing`` (``update_order``; seed 003 §3.1, §3.3). What is missing before it may run is no longer
asked of the tool: the demo machine's fields (``new_address``, ``receiver_phone``, required in
``executing``) and the session's ``missing`` say it.
"""

from __future__ import annotations

from typing import Any

import yaml

ADDRESS_POINT = "address_intent"
AGENT_POINTS = ("intent_routing", "refund_approval", ADDRESS_POINT)

_ADDRESS_POINT: dict[str, Any] = {
    "key": ADDRESS_POINT,
    "name": "Address-change intents",
    "description": "What the customer wants in a change_address conversation (seed 003).",
    "outcomes": ["change_address", "check_logistics", "human_handoff", "intent_clarify"],
    "candidate_whitelist": ["change_address", "check_logistics"],
    "default_outcome": "intent_clarify",
    "when_no_candidate": "ask",
    "machine": "change_address",
    "state_map": {
        "change_address": "collecting_params",
        "check_logistics": "collecting_params",
        "human_handoff": "human_handoff",
        "intent_clarify": "awaiting_intent",
    },
    "fallback_state": "human_handoff",
    "rules": [
        {
            "key": "address_candidate_not_whitelisted",
            "description": "The model proposed an outcome it may not decide alone; hand over to a person.",
            "priority": 60,
            "category": "risk",
            "outcome": "human_handoff",
            "conditions": [{"candidate_not_in_whitelist": True}],
        }
    ],
}


def agent_config_text(demo_text: str) -> str:
    """The demo configuration with the address point and the ``update_order`` action added."""
    document = yaml.safe_load(demo_text)
    if not any(p["key"] == ADDRESS_POINT for p in document["points"]):
        document["points"].append(_ADDRESS_POINT)
    for machine in document["machines"]:
        if machine["key"] == "change_address":
            actions = machine.setdefault("actions", {})
            if "update_order" not in actions.setdefault("executing", []):
                actions["executing"].append("update_order")
    return yaml.safe_dump(document, allow_unicode=True, sort_keys=False)
