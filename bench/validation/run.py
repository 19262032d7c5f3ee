"""The decide request's validation: DRF's serializer (what serves it) against msgspec, side by side.

    .venv/bin/pip install msgspec     # not a dependency of the project; only this comparison needs it
    .venv/bin/python -m bench.validation.run [--rounds 7] [--number 2000]

Both validate the same bodies of ``POST /api/v1/decisions``: valid ones (minimal; a candidate; every
field) and refused ones (an unknown field, a wrong type, a confidence out of range, a text too long,
``point`` missing, both ``candidate`` and ``candidate_raw``, a nested field wrong). Timed per body, from
the raw bytes (DRF: ``json.loads`` as its parser does, then ``InputSerializer``; msgspec: one
``msgspec.json.decode`` into typed structs, then the one cross-field rule) and from the parsed dict
(validation alone: the serializer against ``msgspec.convert``). It also prints, for each refused body,
the errors each gives, since the API's contract is DRF's messages and field map.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import timeit
from typing import Annotated, Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "decision_service.settings.test")

import django

django.setup()

import msgspec  # noqa: E402
from msgspec import Meta  # noqa: E402
from rest_framework.exceptions import ValidationError  # noqa: E402

from agents.sessions.apis import DecisionCreateApi  # noqa: E402

Serializer = DecisionCreateApi.InputSerializer


class Candidate(msgspec.Struct, forbid_unknown_fields=True):
    decision: Annotated[str, Meta(max_length=128)]
    confidence: Annotated[float, Meta(ge=0.0, le=1.0)]
    reason: Annotated[str, Meta(max_length=2000)] = ""


class Tokens(msgspec.Struct, forbid_unknown_fields=True):
    prompt: Annotated[int, Meta(ge=0, le=10_000_000)] | None = None
    completion: Annotated[int, Meta(ge=0, le=10_000_000)] | None = None


class DecisionCreate(msgspec.Struct, forbid_unknown_fields=True):
    point: Annotated[str, Meta(max_length=64)]
    session_id: Annotated[str, Meta(max_length=128)] = ""
    input: Annotated[str, Meta(max_length=10_000)] = ""
    candidate: Candidate | None = None
    candidate_raw: Annotated[str, Meta(max_length=20_000)] | None = None
    facts: dict[str, Any] = msgspec.field(default_factory=dict)
    tokens: Tokens | None = None
    apply: bool = False


def msgspec_check(value: DecisionCreate) -> DecisionCreate:
    if value.candidate is not None and value.candidate_raw is not None:
        raise ValueError("Send either candidate or candidate_raw, not both.")
    return value


CANDIDATE = {"decision": "general_query", "confidence": 0.9}
BODIES: dict[str, dict[str, Any]] = {
    "valid: minimal": {"point": "intent_routing", "input": "where is my parcel 12"},
    "valid: candidate": {"point": "intent_routing", "input": "where is my parcel 12", "candidate": CANDIDATE},
    "valid: every field": {
        "point": "refund_approval",
        "session_id": "s-20251201-0001",
        "input": "我要退款，订单 12345，金额 80 元" * 4,
        "candidate": {**CANDIDATE, "reason": "the customer asks where the parcel is"},
        "facts": {"refund_amount": 80, "vip": True, "tags": ["a", "b"]},
        "tokens": {"prompt": 812, "completion": 40},
        "apply": True,
    },
    "refused: unknown field": {"point": "intent_routing", "inptu": "typo"},
    "refused: wrong type": {"point": "intent_routing", "input": 12},
    "refused: confidence > 1": {"point": "intent_routing", "candidate": {"decision": "x", "confidence": 1.5}},
    "refused: input too long": {"point": "intent_routing", "input": "x" * 10_001},
    "refused: point missing": {"input": "hello"},
    "refused: candidate and candidate_raw": {"point": "intent_routing", "candidate": CANDIDATE, "candidate_raw": "{}"},
    "refused: several fields wrong": {"point": 1, "input": 2, "apply": "yes"},
}


def drf_from_data(data: Any) -> Any:
    serializer = Serializer(data=data)
    if serializer.is_valid():
        return serializer.validated_data
    return serializer.errors


def drf_from_bytes(raw: bytes) -> Any:
    return drf_from_data(json.loads(raw))


def msgspec_from_bytes(raw: bytes) -> Any:
    try:
        return msgspec_check(msgspec.json.decode(raw, type=DecisionCreate))
    except (msgspec.ValidationError, ValueError) as exc:
        return str(exc)


def msgspec_from_data(data: Any) -> Any:
    try:
        return msgspec_check(msgspec.convert(data, DecisionCreate))
    except (msgspec.ValidationError, ValueError) as exc:
        return str(exc)


def per_call_us(call: Any, arg: Any, *, rounds: int, number: int) -> float:
    # CPU time of this process, not wall-clock: on a shared machine the time spent descheduled would
    # otherwise land on whichever side happened to be running.
    times = timeit.repeat(lambda: call(arg), repeat=rounds, number=number, timer=time.process_time)
    return statistics.median(times) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--number", type=int, default=2000)
    args = parser.parse_args()
    print(f"msgspec {msgspec.__version__}; median of {args.rounds} rounds of {args.number} calls, CPU µs per body\n")
    print("| body | DRF from bytes | msgspec from bytes | ratio | DRF from dict | msgspec.convert | ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, body in BODIES.items():
        raw = json.dumps(body, ensure_ascii=False).encode()
        times = [
            per_call_us(drf_from_bytes, raw, rounds=args.rounds, number=args.number),
            per_call_us(msgspec_from_bytes, raw, rounds=args.rounds, number=args.number),
            per_call_us(drf_from_data, body, rounds=args.rounds, number=args.number),
            per_call_us(msgspec_from_data, body, rounds=args.rounds, number=args.number),
        ]
        print(
            f"| {name} | {times[0]:.1f} | {times[1]:.2f} | {times[0] / times[1]:.0f}× "
            f"| {times[2]:.1f} | {times[3]:.2f} | {times[2] / times[3]:.0f}× |"
        )
    print("\nWhat each says about the refused bodies:\n")
    print("| body | DRF (the API's `errors`) | msgspec |")
    print("| --- | --- | --- |")
    for name, body in BODIES.items():
        if not name.startswith("refused"):
            continue
        drf = drf_from_data(body)
        shown = json.dumps(drf if not isinstance(drf, ValidationError) else drf.detail, ensure_ascii=False)
        print(f"| {name} | `{shown[:160]}` | `{msgspec_from_data(body)[:160]}` |")


if __name__ == "__main__":
    main()
