"""Session field values checked against a machine's field declarations. Pure Python, no Django.

A state machine declares the fields its sessions hold (``StateMachine.fields``, the ``fields:`` block of
the configuration document). This module answers, for one declaration and one value an agent sends,
"is this a value of the field, and what is it?" — the same answer for the YAML checker (a declared
``default``), the session services (a patch, a move with updates) and a replay.

Invariants (tests/rules/engine/test_field_values.py checks them as properties):
- **Strict types.** A value is taken in the type the field declares or refused; nothing is coerced
  silently. The number 13800138000 given to a string field is refused, not turned into text; the text
  ``"3"`` given to an integer field is refused too.
- **Normalising is opt-in.** A normaliser runs only when the declaration names it in ``normalize``.
  Without one the accepted value is exactly the value sent: the "sanitizer" of seed 000 §4.1 once ate
  the 市 of 北京市朝阳区, so nothing cleans a field that did not ask for it.
- **Idempotent.** A value accepted is accepted again as itself, with nothing normalised the second time,
  so storing what was accepted and checking it later (a replay, a later move) gives the same answer.
- **Said out loud.** The answer names every normaliser that changed the value (``normalised_by``).
"""

from __future__ import annotations

import datetime as dt
import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

FIELD_TYPES = ("string", "integer", "number", "boolean", "datetime", "enum", "array", "object")
# The order normalisers run in, whatever order a declaration lists them in.
NORMALIZERS = ("trim", "digits", "boolean_words", "date")
# Which normalisers make sense for which type: ``digits`` on an integer would turn "-3" into 3, so an
# integer field takes integers only.
NORMALIZERS_FOR_TYPE: Mapping[str, frozenset[str]] = {
    "string": frozenset({"trim", "digits"}),
    "integer": frozenset(),
    "number": frozenset(),
    "boolean": frozenset({"boolean_words"}),
    "datetime": frozenset({"trim", "date"}),
    "enum": frozenset({"trim"}),
    "array": frozenset(),
    "object": frozenset(),
}
# Which constraints make sense for which type (``enum`` is the enum type's list of values; ``schema``
# the JSON Schema of an array or object).
CONSTRAINTS_FOR_TYPE: Mapping[str, frozenset[str]] = {
    "string": frozenset({"pattern", "min_length", "max_length"}),
    "integer": frozenset({"min", "max"}),
    "number": frozenset({"min", "max"}),
    "boolean": frozenset(),
    "datetime": frozenset(),
    "enum": frozenset({"enum"}),
    "array": frozenset({"schema", "min_length", "max_length"}),
    "object": frozenset({"schema"}),
}

TRUE_WORDS = frozenset({"是", "是的", "对", "对的", "好", "好的", "可以", "ok", "okay", "yes", "y", "true"})
FALSE_WORDS = frozenset({"否", "不", "不是", "不对", "不要", "不用", "no", "n", "false"})

# 2025-06-01, 2025/6/1, 2025.06.01, 2025年6月1日 (or 号), each with an optional time 08:30, 08:30:15, 8点30分.
_LOOSE_DATE = re.compile(
    r"(\d{4})\s*[-/.年]\s*(\d{1,2})\s*[-/.月]\s*(\d{1,2})\s*[日号]?"
    r"(?:(?:\s*|T)(\d{1,2})\s*[:：点时]\s*(\d{1,2})\s*(?:[:：分]\s*(\d{1,2})\s*秒?|分)?)?"
)
_ISO_DATE_ONLY = re.compile(r"\d{4}-?\d{2}-?\d{2}")


@dataclass(frozen=True)
class FieldSpec:
    """One field declaration, read once (``field_spec``) and checked against many values."""

    name: str
    type: str
    description: str = ""
    pattern: str | None = None
    min: int | float | None = None
    max: int | float | None = None
    min_length: int | None = None
    max_length: int | None = None
    enum: tuple[str, ...] = ()
    schema: Mapping[str, Any] | None = None
    has_default: bool = False
    default: Any = None
    required_in: frozenset[str] = frozenset()
    pii: bool = False
    normalize: tuple[str, ...] = ()


def field_spec(declaration: Mapping[str, Any]) -> FieldSpec:
    """A declaration (as ``StateMachine.fields`` and the document hold it, already checked) as a spec."""
    listed = set(declaration.get("normalize") or ())
    return FieldSpec(
        name=declaration["name"],
        type=declaration["type"],
        description=declaration.get("description") or "",
        pattern=declaration.get("pattern"),
        min=declaration.get("min"),
        max=declaration.get("max"),
        min_length=declaration.get("min_length"),
        max_length=declaration.get("max_length"),
        enum=tuple(declaration.get("enum") or ()),
        schema=declaration.get("schema"),
        has_default="default" in declaration and declaration["default"] is not None,
        default=declaration.get("default"),
        required_in=frozenset(declaration.get("required_in") or ()),
        pii=bool(declaration.get("pii", False)),
        normalize=tuple(n for n in NORMALIZERS if n in listed),
    )


def field_specs(declarations: Iterable[Mapping[str, Any]]) -> tuple[FieldSpec, ...]:
    return tuple(field_spec(d) for d in declarations)


@dataclass(frozen=True)
class FieldProblem:
    """Why a value is not one of the field's: a stable ``code`` (the constraint it broke, or ``type``)
    and an English sentence for the agent's API and the YAML checker."""

    code: str
    message: str


@dataclass(frozen=True)
class FieldCheck:
    """The answer for one value: the value to store, or the problem; and which normalisers changed it."""

    value: Any = None
    problem: FieldProblem | None = None
    normalised_by: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return self.problem is None


def field_value_check(spec: FieldSpec, raw: Any) -> FieldCheck:
    """Check ``raw`` against ``spec``: normalise (only as the spec asks), then the type, then the constraints."""
    value, normalised_by = _normalised(spec, raw)
    problem = _type_problem(spec, value) or _constraint_problem(spec, value)
    if problem is not None:
        return FieldCheck(problem=problem, normalised_by=normalised_by)
    return FieldCheck(value=value, normalised_by=normalised_by)


def missing_fields(specs: Sequence[FieldSpec], values: Mapping[str, Any], state: str) -> tuple[str, ...]:
    """The fields a session must hold, present and valid, to enter ``state``, that ``values`` lacks.

    A declared default counts as present. In declaration order, so an agent's prompt lists them stably.
    """
    missing = []
    for spec in specs:
        if state not in spec.required_in:
            continue
        if spec.name in values and values[spec.name] is not None:
            present = field_value_check(spec, values[spec.name]).ok
        else:
            present = spec.has_default
        if not present:
            missing.append(spec.name)
    return tuple(missing)


def _normalised(spec: FieldSpec, raw: Any) -> tuple[Any, tuple[str, ...]]:
    value = raw
    changed: list[str] = []
    for name in spec.normalize:
        if not isinstance(value, str):
            break
        after = _NORMALIZE[name](value)
        if after != value:
            changed.append(name)
            value = after
    return value, tuple(changed)


def normalize_trim(text: str) -> str:
    return text.strip()


def normalize_digits(text: str) -> str:
    """Every decimal digit of ``text`` (full-width ones as ASCII), nothing else: "138-0013 8000" → "13800138000"."""
    return "".join(str(unicodedata.decimal(c)) for c in text if c.isdecimal())


def normalize_boolean_words(text: str) -> str | bool:
    """是/对/好/ok/yes → true, 否/不/no → false; any other text is left as it is (and then refused)."""
    word = unicodedata.normalize("NFKC", text).strip().casefold().rstrip("。.!！")
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    return text


def normalize_date(text: str) -> str:
    """Common ways of writing a date (and time) as ISO 8601: "2025年6月1日" → "2025-06-01",
    "2025/6/1 8:30" → "2025-06-01T08:30:00"; text it cannot read is left as it is (and then refused)."""
    stripped = unicodedata.normalize("NFKC", text).strip()
    iso = _iso_text(stripped)
    if iso is not None:
        return iso
    match = _LOOSE_DATE.fullmatch(stripped)
    if match is None:
        return text
    year, month, day = (int(g) for g in match.group(1, 2, 3))
    hour, minute, second = (int(g) if g else 0 for g in match.group(4, 5, 6))
    try:
        if match.group(4) is None:
            return dt.date(year, month, day).isoformat()
        return dt.datetime(year, month, day, hour, minute, second).isoformat()
    except ValueError:
        return text


_NORMALIZE: Mapping[str, Callable[[str], Any]] = {
    "trim": normalize_trim,
    "digits": normalize_digits,
    "boolean_words": normalize_boolean_words,
    "date": normalize_date,
}


def _iso_text(text: str) -> str | None:
    """``text`` as canonical ISO 8601 (a date, or a date and time), or None when it is not ISO 8601."""
    try:
        if _ISO_DATE_ONLY.fullmatch(text):
            return dt.date.fromisoformat(text).isoformat()
        return dt.datetime.fromisoformat(text).isoformat()
    except ValueError:
        return None


def _describe(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the text {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"a value of type {type(value).__name__}"


def _type_problem(spec: FieldSpec, value: Any) -> FieldProblem | None:
    kind = spec.type
    if kind in ("string", "enum", "datetime"):
        fits = isinstance(value, str)
        expected = "text (in quotes, even when it is all digits)" if kind == "string" else "text"
    elif kind == "integer":
        fits, expected = isinstance(value, int) and not isinstance(value, bool), "a whole number"
    elif kind == "number":
        fits = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        expected = "a finite number"
    elif kind == "boolean":
        fits, expected = isinstance(value, bool), "true or false"
    elif kind == "array":
        fits, expected = isinstance(value, list), "a list"
    elif kind == "object":
        fits, expected = isinstance(value, dict), "a mapping"
    else:
        return FieldProblem("type", f"the field's type {kind!r} is not known")
    if not fits:
        return FieldProblem("type", f"expected {expected}, got {_describe(value)}")
    if kind == "datetime" and _iso_text(value) is None:
        return FieldProblem(
            "type", f"{value!r} is not an ISO 8601 date or date and time (e.g. 2025-06-01T08:00:00+08:00)"
        )
    return None


def _constraint_problem(spec: FieldSpec, value: Any) -> FieldProblem | None:
    if spec.pattern is not None and isinstance(value, str) and re.fullmatch(spec.pattern, value) is None:
        return FieldProblem("pattern", f"{value!r} does not match the pattern {spec.pattern}")
    if spec.min is not None and isinstance(value, int | float) and value < spec.min:
        return FieldProblem("min", f"{value} is less than the minimum {spec.min}")
    if spec.max is not None and isinstance(value, int | float) and value > spec.max:
        return FieldProblem("max", f"{value} is more than the maximum {spec.max}")
    if isinstance(value, str | list):
        unit = "characters" if isinstance(value, str) else "items"
        if spec.min_length is not None and len(value) < spec.min_length:
            return FieldProblem("min_length", f"{len(value)} {unit}, at least {spec.min_length} expected")
        if spec.max_length is not None and len(value) > spec.max_length:
            return FieldProblem("max_length", f"{len(value)} {unit}, at most {spec.max_length} expected")
    if spec.type == "enum" and value not in spec.enum:
        return FieldProblem("enum", f"{value!r} is not one of {', '.join(spec.enum)}")
    if spec.schema is not None:
        return _schema_problem(spec.schema, value)
    return None


def _schema_problem(schema: Mapping[str, Any], value: Any) -> FieldProblem | None:
    import jsonschema  # imported when a field has a schema: most never do

    validator_class = jsonschema.validators.validator_for(schema)
    error = jsonschema.exceptions.best_match(validator_class(schema).iter_errors(value))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return FieldProblem("schema", f"{'at ' + where + ': ' if where else ''}{error.message}")
