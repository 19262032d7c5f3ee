"""Write the answers' TypedDicts (src/arbiter_client/types.py) from docs/openapi.yaml.

Run from the repository root when the schema grows: ``python clients/python/scripts/typeddicts.py``.
The client's contract test compares the module with the schema, so a forgotten run fails there.
Needs PyYAML (the server's environment has it; the client does not depend on it).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[3]
OUT = ROOT / "clients" / "python" / "src" / "arbiter_client" / "types.py"
PRIMITIVE = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


def annotation(schema: dict[str, Any], wanted: set[str], schemas: dict[str, Any]) -> str:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        target = schemas[name]
        if target.get("type") == "object" and "properties" in target:
            wanted.add(name)
            return name
        return annotation(target, wanted, schemas)
    if "anyOf" in schema:
        parts = [annotation(s, wanted, schemas) for s in schema["anyOf"]]
        return " | ".join(dict.fromkeys(parts))
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(dict.fromkeys(PRIMITIVE.get(k, "Any") for k in kind))
    if kind == "array":
        return f"list[{annotation(schema.get('items', {}), wanted, schemas)}]"
    if kind == "object":
        return "dict[str, Any]"
    return PRIMITIVE.get(kind, "Any") if kind else "Any"


def main() -> None:
    document = yaml.safe_load((ROOT / "docs" / "openapi.yaml").read_text(encoding="utf-8"))
    schemas = document["components"]["schemas"]
    roots: dict[str, dict[str, Any]] = {}
    for ops in document["paths"].values():
        for op in ops.values():
            for code, response in op.get("responses", {}).items():
                if not code.startswith("2"):
                    continue
                schema = response.get("content", {}).get("application/json", {}).get("schema")
                if schema is None:
                    continue
                if "$ref" in schema:
                    roots[schema["$ref"].rsplit("/", 1)[1]] = schemas[schema["$ref"].rsplit("/", 1)[1]]
                else:
                    roots[op["operationId"][0].upper() + op["operationId"][1:]] = schema
    wanted = set(roots)
    done: dict[str, str] = {}
    while wanted - set(done):
        name = sorted(wanted - set(done))[0]
        schema = roots.get(name) or schemas[name]
        required = set(schema.get("required", []))
        lines = [f"class {name}(TypedDict):"]
        description = (schema.get("description") or "").strip().splitlines()
        if description:
            lines.append(f'    """{description[0]}"""')
            lines.append("")
        for field, sub in schema["properties"].items():
            kind = annotation(sub, wanted, schemas)
            if field not in required:
                kind = f"NotRequired[{kind}]"
            lines.append(f"    {field}: {kind}")
        done[name] = "\n".join(lines)
    header = '''"""The answers of the Arbiter API as TypedDicts, one per schema of docs/openapi.yaml.

Written by clients/python/scripts/typeddicts.py; tests/client/test_schema_drift.py fails when the two
differ. An answer is the JSON object itself: fields a newer server adds pass through untouched.
No ``from __future__ import annotations`` here: TypedDict must see ``NotRequired`` to tell required
keys from optional ones, so the classes come in the order they use each other.
"""

from typing import Any, NotRequired, TypedDict


'''
    # Keys that are not identifiers ("from") need the functional form.
    order: list[str] = []

    def visit(name: str) -> None:
        if name in order:
            return
        for other in sorted(done):
            if other != name and re.search(rf"\b{other}\b", done[name].split("\n", 1)[1]):
                visit(other)
        order.append(name)

    for name in sorted(done):
        visit(name)
    body = []
    for name in order:
        text = done[name]
        if "\n    from:" in text:
            fields = []
            schema = roots.get(name) or schemas[name]
            required = set(schema.get("required", []))
            for field, sub in schema["properties"].items():
                kind = annotation(sub, set(), schemas)
                fields.append(f'"{field}": {kind if field in required else f"NotRequired[{kind}]"}')
            text = f'{name} = TypedDict("{name}", {{{", ".join(fields)}}})'
            if len(text) > 120:  # one field a line, as ruff format writes it
                lines = "".join(f"        {f},\n" for f in fields)
                text = f'{name} = TypedDict(\n    "{name}",\n    {{\n{lines}    }},\n)'
        body.append(text)
    OUT.write_text(header + "\n\n\n".join(body) + "\n", encoding="utf-8")
    sys.stdout.write(f"wrote {len(done)} TypedDicts to {OUT}\n")


if __name__ == "__main__":
    main()
