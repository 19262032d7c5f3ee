"""Tool input validation: ``jsonschema`` against ``fastjsonschema`` and ``jsonschema-rs``, side by side.

    .venv/bin/pip install fastjsonschema   # not a dependency; only this comparison needs it
    .venv/bin/python -m bench.tool_schemas.run [--rounds 7] [--number 2000]

Each library compiles the same contracts once (as a revision does: ``rules.engine.tools``) and then
validates the same inputs: valid ones and refused ones (a phone given as a number and as ``"abc"``, a
missing required field, an unknown field, several problems at once). Timed per input from the parsed
dict, collecting **every** error with its JSON-pointer path where the library can (``jsonschema``:
``iter_errors`` and ``error.path``; ``jsonschema-rs``: ``iter_errors`` and ``instance_path``;
``fastjsonschema`` stops at the first error and names it ``data.phone``, not ``/phone``). It also says
which drafts each reads: the contracts are JSON Schema 2020-12.
"""

from __future__ import annotations

import argparse
import statistics
import timeit
from collections.abc import Callable
from typing import Any

VERIFY_PHONE = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {"phone": {"type": "string", "pattern": "^1[3-9][0-9]{9}$"}},
    "required": ["phone"],
    "additionalProperties": False,
}
UPDATE_ORDER = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{8}$"},
        "receiver_phone": {"type": "string", "pattern": "^1[3-9][0-9]{9}$"},
        "address": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "minLength": 1},
                "line": {"type": "string", "minLength": 1, "maxLength": 200},
            },
            "required": ["city", "line"],
        },
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}},
                "required": ["sku", "qty"],
            },
            "maxItems": 20,
        },
    },
    "required": ["order_id"],
    "additionalProperties": False,
}
CASES: list[tuple[str, dict[str, Any], Any]] = [
    ("verify_phone valid", VERIFY_PHONE, {"phone": "13800138000"}),
    ("verify_phone number", VERIFY_PHONE, {"phone": 13800138000}),
    ("verify_phone 'abc'", VERIFY_PHONE, {"phone": "abc"}),
    ("verify_phone missing", VERIFY_PHONE, {}),
    (
        "update_order valid",
        UPDATE_ORDER,
        {
            "order_id": "AB12345678",
            "receiver_phone": "13800138000",
            "address": {"city": "上海", "line": "南京西路 1 号"},
            "items": [{"sku": "x1", "qty": 2}, {"sku": "x2", "qty": 1}],
        },
    ),
    (
        "update_order 4 errors",
        UPDATE_ORDER,
        {
            "order_id": "nope",
            "receiver_phone": "abc",
            "address": {"city": ""},
            "items": [{"sku": "x1", "qty": 0}],
        },
    ),
    ("update_order unknown field", UPDATE_ORDER, {"order_id": "AB12345678", "param_name": "does_not_exist"}),
]

Errors = list[str]


def _pointer(parts: Any) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def jsonschema_validator(schema: dict[str, Any]) -> Callable[[Any], Errors]:
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema, format_checker=None)

    def check(value: Any) -> Errors:
        return sorted(_pointer(e.absolute_path) for e in validator.iter_errors(value))

    return check


def jsonschema_rs_validator(schema: dict[str, Any]) -> Callable[[Any], Errors]:
    import jsonschema_rs

    validator = jsonschema_rs.Draft202012Validator(schema)

    def check(value: Any) -> Errors:
        return sorted(_pointer(e.instance_path) for e in validator.iter_errors(value))

    return check


def fastjsonschema_validator(schema: dict[str, Any]) -> Callable[[Any], Errors]:
    import fastjsonschema

    # fastjsonschema knows drafts 4, 6 and 7 only; it reads the 2020-12 $schema as draft 7 (these
    # schemas mean the same under draft 7).
    validate = fastjsonschema.compile(schema)

    def check(value: Any) -> Errors:
        try:
            validate(value)
        except fastjsonschema.JsonSchemaValueException as error:
            return [error.name]  # only the first error, named "data.phone"
        return []

    return check


LIBRARIES: dict[str, Callable[[dict[str, Any]], Callable[[Any], Errors]]] = {
    "jsonschema": jsonschema_validator,
    "jsonschema-rs": jsonschema_rs_validator,
    "fastjsonschema": fastjsonschema_validator,
}


def draft_2020_12(name: str, make: Callable[[dict[str, Any]], Callable[[Any], Errors]]) -> str:
    """Whether the library applies a 2020-12 keyword: ``prefixItems`` (draft 7 does not know it, and
    fastjsonschema reads an unknown ``$schema`` as draft 7 without a word)."""
    schema = {"$schema": VERIFY_PHONE["$schema"], "type": "array", "prefixItems": [{"type": "string"}]}
    return "yes" if make(schema)([1]) else "no (prefixItems ignored: [1] passes)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--number", type=int, default=2000)
    args = parser.parse_args()
    available = {}
    for name, make in LIBRARIES.items():
        try:
            make(VERIFY_PHONE)
        except ImportError:
            print(f"{name}: not installed, left out")
            continue
        available[name] = make
    print(f"rounds {args.rounds}, {args.number} validations per round; µs per input, median of rounds\n")
    print("| input | " + " | ".join(available) + " |")
    print("| --- |" + " ---: |" * len(available))
    errors: dict[str, dict[str, Errors]] = {}
    for label, schema, value in CASES:
        row = []
        for name, make in available.items():
            check = make(schema)
            errors.setdefault(label, {})[name] = check(value)
            times = timeit.repeat(lambda check=check, value=value: check(value), number=args.number, repeat=args.rounds)
            row.append(f"{statistics.median(times) / args.number * 1e6:.2f}")
        print(f"| {label} | " + " | ".join(row) + " |")
    print("\nErrors reported (paths):\n")
    for label, by_library in errors.items():
        print(f"- {label}: " + "; ".join(f"{n} {by_library[n]}" for n in available))
    print("\nDraft 2020-12: " + "; ".join(f"{n} {draft_2020_12(n, make)}" for n, make in available.items()))


if __name__ == "__main__":
    main()
