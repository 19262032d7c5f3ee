"""What the tool-call services read of the configuration: the active revision's compiled contracts, and
how an input is kept (masked like facts, with the digest of the input as sent)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from decision_service.digests import canonical_digest
from rules.config.runtime import engines
from rules.engine.compiler import CompiledConfig, CompileError
from rules.engine.masking import Masker
from rules.engine.tools import SchemaError
from rules.errors import EngineUnavailable

# Tool inputs and outputs belong to no decision point: the built-in patterns mask them (phones, e-mail
# addresses, ID card numbers), at any depth, as a point's facts are masked.
MASKER = Masker()
SUMMARY_CHARS = 500  # of an output or an error message kept with an attempt


def active_config() -> CompiledConfig:
    try:
        return engines.current()
    except CompileError as exc:
        raise EngineUnavailable(str(exc)) from exc


def input_digest(value: Any) -> str:
    """Tells a repeat of a call (same input) from an operation id reused for another input."""
    return canonical_digest(value, text="ascii")  # ASCII: a body may hold lone surrogates


def input_masked(value: Mapping[str, Any]) -> dict[str, Any]:
    return MASKER.mask_facts(value).facts


def masked_text(text: str, *, limit: int = SUMMARY_CHARS) -> str:
    shown = MASKER.mask(text).text
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def summary(value: Any) -> str:
    """An output as the attempt keeps it: JSON, masked, cut short."""
    return masked_text(json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":")))


def pointer_errors(problems: list[SchemaError]) -> dict[str, list[str]]:
    """JSON pointer (``""``: the value as a whole, RFC 6901) → its messages, in the order found."""
    errors: dict[str, list[str]] = {}
    for problem in problems:
        errors.setdefault(problem.pointer, []).append(problem.message)
    return errors
