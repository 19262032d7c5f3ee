"""Run by ``tests.support.breakers.another_process`` (after ``django.setup()``): gate steps in a process of
its own, set up from the environment it was given; prints their answers (the store's name first) as one
JSON line."""

from __future__ import annotations

import json
import sys
from typing import Any


def _main(steps: list[dict[str, Any]]) -> list[Any]:
    from agents.tools import gate
    from agents.tools.breaker_backend import store
    from agents.tools.errors import CircuitOpen, ToolConcurrency

    answers: list[Any] = [store().name]
    for step in steps:
        op, tool = step["op"], step["tool"]
        if op == "record":
            answers.append(gate.breaker_record(tool, breaker=step["breaker"], ok=step["ok"]))
        elif op == "state":
            answers.append(gate.breaker_state(tool, breaker=step["breaker"]))
        else:
            try:
                permit = gate.gate_enter(
                    tool,
                    breaker=step["breaker"],
                    max_concurrent=step.get("max_concurrent"),
                    lease=step["lease"],
                    deadline_ms=step["deadline_ms"],
                )
                answers.append(permit.state)
            except (CircuitOpen, ToolConcurrency) as refused:
                answers.append(refused.code)
    return answers


def main() -> None:
    print(json.dumps(_main(json.loads(sys.argv[1]))))
