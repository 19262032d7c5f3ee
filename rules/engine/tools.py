"""Tool contracts compiled once per revision: each schema turned into a validator, ready for every call.

``jsonschema-rs`` compiles the schemas: it reads JSON Schema 2020-12, reports every error (not only the
first) with its JSON-pointer path, and was the fastest that does (bench/RESULTS.md, "Tool input
validation"). Pure: no Django.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema_rs

from rules.engine.model import CompileError


@dataclass(frozen=True, slots=True)
class SchemaError:
    """One way a value fails its schema: where (a JSON pointer, ``""`` for the whole value) and why."""

    pointer: str
    message: str


def _pointer(parts: Any) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


@dataclass(frozen=True, slots=True)
class CompiledTool:
    name: str
    risk: str
    contract: Mapping[str, Any]  # the contract as the revision holds it (rules.config.tool_definitions)
    input_validator: Any
    output_validator: Any | None
    error_codes: Mapping[str, Mapping[str, Any]]

    def input_errors(self, value: Any) -> list[SchemaError]:
        """Every error of a call's input, in the order the schema finds them; empty when it is valid."""
        return _errors(self.input_validator, value)

    def output_errors(self, value: Any) -> list[SchemaError]:
        return [] if self.output_validator is None else _errors(self.output_validator, value)


def _errors(validator: Any, value: Any) -> list[SchemaError]:
    if validator.is_valid(value):  # the common case, without building error objects
        return []
    return [SchemaError(_pointer(e.instance_path), e.message) for e in validator.iter_errors(value)]


def _validator(schema: Mapping[str, Any], where: str) -> Any:
    try:
        return jsonschema_rs.Draft202012Validator(dict(schema))
    except (ValueError, jsonschema_rs.ValidationError) as exc:
        raise CompileError(f"{where}: not a valid JSON Schema: {str(exc).splitlines()[0]}") from exc


def compile_tools(snapshot: Mapping[str, Any]) -> dict[str, CompiledTool]:
    """The revision's tools by name, each schema compiled; ``CompileError`` names a schema that does not."""
    tools: dict[str, CompiledTool] = {}
    for raw in snapshot.get("tools", []):
        name = raw["name"]
        output = raw.get("output_schema")
        tools[name] = CompiledTool(
            name=name,
            risk=raw["risk"],
            contract=raw,
            input_validator=_validator(raw["input_schema"], f"tool {name} input_schema"),
            output_validator=None if output is None else _validator(output, f"tool {name} output_schema"),
            error_codes={e["code"]: e for e in raw.get("error_codes", [])},
        )
    return tools
