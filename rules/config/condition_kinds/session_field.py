"""``{session_field: <name>, op: <op>, value: <literal> | threshold: <key>}`` or
``{session_field: <name>, pattern: <regular expression>}`` — a field of the session, compared or matched.

Stored in ``Condition.fact`` (the field's name), ``operator`` (``matches`` for a pattern) and either
``threshold`` or ``value`` (the literal, or the pattern's text). The field must be declared by the
point's machine, and the operator must fit the field's type (``FIELD_OPERATORS``); the document form is
flat, as the ``fact`` kind's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.db.models import Q
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from rules.config.condition_kinds.base import (
    ConditionAdapter,
    ConditionRow,
    ConditionValues,
    DocumentContext,
    PointView,
    Records,
)
from rules.config.condition_kinds.fact import OperatorProblem, _literal_shape_ok
from rules.config.condition_kinds.fact_matches import stored_pattern
from rules.config.document.readers import clause, describe, one_of
from rules.config.literals import parse_literal, parse_literal_list, show_literal, text_items
from rules.config.validators import OPERATORS, pattern_problem, storable_problems
from rules.engine.conditions.session_field import MATCHES

if TYPE_CHECKING:
    from rules.config.document.readers import Reader
    from rules.config.document.yamlload import Path

KEYS = ("session_field", "op", "threshold", "value", "pattern")
_NUMBER = ("<", "<=", ">", ">=", "==", "!=", "in")
_TEXT = ("==", "!=", "in", MATCHES)
# Field type → the operators a session_field condition may use on it (``matches``: with a pattern). An
# ``object`` field is compared with nothing; an ``array`` field only by ``in`` (any of its items).
FIELD_OPERATORS: Mapping[str, tuple[str, ...]] = {
    "integer": _NUMBER,
    "number": _NUMBER,
    "string": _TEXT,
    "enum": _TEXT,
    "datetime": _TEXT,
    "boolean": ("==", "!="),
    "array": ("in",),
    "object": (),
}
NUMERIC = frozenset({"integer", "number"})


def declared_field_problem(name: str, point: str, machine: str, fields: Mapping[str, str]) -> str | None:
    """A session_field condition's field is one the point's machine declares."""
    if not machine:
        return gettext("%(point)s moves no state machine, so its sessions have no fields.") % {"point": point}
    if name in fields:
        return None
    return gettext("'%(field)s' is not a field of the machine %(machine)s (declared: %(declared)s).") % {
        "field": name,
        "machine": machine,
        "declared": ", ".join(sorted(fields)) or "-",
    }


def _item_fits(field_type: str, item: Any) -> bool:
    """A literal a field of ``field_type`` can be compared with (an array's: any of its items' scalars)."""
    if field_type in NUMERIC:
        if isinstance(item, bool) or not isinstance(item, int | float):
            return False
        return isinstance(item, int) if field_type == "integer" else math.isfinite(item)
    if field_type == "boolean":
        return isinstance(item, bool)
    if field_type == "array":
        return isinstance(item, str | bool | int) or (isinstance(item, float) and math.isfinite(item))
    return isinstance(item, str)


def field_compare_problem(field_type: str, operator: str, uses_threshold: bool, value: Any) -> str | None:
    """A session field of ``field_type`` compared by ``operator`` with a threshold, the literal ``value``, or
    (``matches``) the pattern ``value``."""
    allowed = FIELD_OPERATORS.get(field_type, ())
    if operator not in allowed:
        return OperatorProblem(
            gettext("A %(type)s field is compared by %(allowed)s, not %(operator)s.")
            % {"type": field_type, "allowed": ", ".join(allowed) or gettext("nothing"), "operator": operator}
        )
    if operator == MATCHES:
        return pattern_problem(value)
    if uses_threshold:
        if field_type not in NUMERIC:
            return gettext("A threshold compares with number fields only; this one is %(type)s.") % {"type": field_type}
        if operator == "in":
            return OperatorProblem(gettext("The operator in takes a list of values, not a threshold."))
        return None
    if operator == "in":
        if not isinstance(value, list) or not value:
            return OperatorProblem(gettext("The operator in takes a non-empty list of values."))
        items = value
    else:
        items = [value]
    for item in items:
        if not _item_fits(field_type, item):
            return gettext("The value %(value)r does not fit a %(type)s field.") % {"value": item, "type": field_type}
    return None


class SessionField(ConditionAdapter):
    kind = "session_field"
    label = _("session field compared or matched")
    position = 85
    inputs = ("fact", "operator", "threshold", "value")
    document_keys = ("op", "threshold", "value", "pattern")
    help_texts = {
        "fact": _("A field the point's state machine declares (the session's field, not a fact of the request)."),
        "operator": _("For a pattern choose matches and type the regular expression as the value."),
    }
    requires = (
        "condition_session_field_complete",
        ~Q(fact="") & ~Q(operator="") & (Q(threshold__isnull=False) | Q(value__isnull=False)),
    )

    def problems(self, values: ConditionValues, point: PointView | None) -> dict[str, str]:
        errors: dict[str, str] = {}
        name, operator, value = values["fact"], values["operator"], values["value"]
        uses_threshold = values["threshold"] is not None
        if not name:
            errors["fact"] = gettext("Name the session field to compare.")
        elif (
            point is not None
            and point.session_fields is not None
            and (problem := declared_field_problem(name, point.key, point.machine, point.session_fields))
        ):
            errors["fact"] = problem
        if not operator:
            errors["operator"] = gettext("Choose an operator.")
        if (not uses_threshold) == (value is None):
            errors["value"] = gettext("Compare with either a threshold or a literal value, not both or neither.")
        field_type = (point.session_fields or {}).get(name) if point is not None else None
        if field_type and operator and "value" not in errors and "fact" not in errors:
            problem = field_compare_problem(field_type, operator, uses_threshold, value)
            if problem:
                errors["operator" if isinstance(problem, OperatorProblem) else "value"] = problem
        if "value" not in errors:
            errors.update(storable_problems({"value": value}))
        return errors

    def read(self, r: Reader, item: dict[str, Any], path: Path, ctx: DocumentContext) -> dict[str, Any] | None:
        if r.mapping(item, path, KEYS, ("session_field",)) is None:
            return None
        start = r.count()
        name = r.key(item["session_field"], (*path, "session_field"))
        fields = ctx.session_fields
        if (
            name is not None
            and fields is not None
            and (problem := declared_field_problem(name, ctx.point, ctx.machine, fields))
        ):
            r.problem((*path, "session_field"), clause(problem))
        if "pattern" in item:
            if any(k in item for k in ("op", "threshold", "value")):
                r.problem(path, "match the field with a pattern, or compare it with op and a value, not both")
                return None
            written = r.text(item["pattern"], (*path, "pattern"))
            pattern = stored_pattern(written) if written is not None else None
            if pattern is not None and (problem := pattern_problem(pattern)):
                r.problem((*path, "pattern"), clause(problem))
            doc: dict[str, Any] = {"session_field": name, "pattern": pattern}
            operator: str | None = MATCHES
            where, has_threshold = "pattern", False
        else:
            if "op" not in item:
                r.problem(path, "missing required key 'op' (or give a pattern)")
                return None
            operator = r.text(item["op"], (*path, "op"))
            if operator is not None and operator not in OPERATORS:
                r.problem((*path, "op"), f"'{operator}' is not one of {one_of(OPERATORS)}")
                operator = None
            has_threshold, has_value = "threshold" in item, "value" in item
            if has_threshold == has_value:
                r.problem(path, "compare the field with either a threshold or a value, not both or neither")
                return None
            doc = {"session_field": name, "op": operator}
            if has_threshold:
                threshold = r.key(item["threshold"], (*path, "threshold"))
                if threshold is not None and threshold not in ctx.thresholds:
                    r.problem((*path, "threshold"), f"there is no threshold '{threshold}' in thresholds")
                doc["threshold"], where = threshold, "threshold"
            else:
                value = item["value"]
                if not _literal_shape_ok(value):
                    r.problem(
                        (*path, "value"),
                        f"expected text, a number, true/false or a list of those, got {describe(value)}",
                    )
                elif problems := storable_problems({"value": value}):
                    r.problem((*path, "value"), clause(problems["value"]))
                doc["value"], where = value, "value"
        if r.count() > start:
            return None
        field_type = (fields or {}).get(name or "")
        if field_type and operator:
            compared = doc.get("pattern") if operator == MATCHES else doc.get("value")
            problem = field_compare_problem(field_type, operator, has_threshold, compared)
            if problem:
                r.problem(
                    (*path, "op" if isinstance(problem, OperatorProblem) and "op" in item else where), clause(problem)
                )
                return None
        return doc

    def document(self, c: ConditionRow) -> dict[str, Any]:
        if c.operator == MATCHES:
            return {"session_field": c.fact, "pattern": c.value}
        doc: dict[str, Any] = {"session_field": c.fact, "op": c.operator}
        if c.threshold is not None:
            doc["threshold"] = c.threshold.key
        else:
            doc["value"] = c.value
        return doc

    def fill(self, c: ConditionRow, doc: Mapping[str, Any], records: Records) -> None:
        c.fact = doc["session_field"]
        if "pattern" in doc:
            c.operator, c.value = MATCHES, doc["pattern"]
            return
        c.operator = doc["op"]
        if "threshold" in doc:
            c.threshold = records.thresholds[doc["threshold"]]
        else:
            c.value = doc["value"]

    def describe(self, c: ConditionRow) -> str:
        if c.operator == MATCHES:
            return gettext("session field %(field)s matches /%(pattern)s/") % {"field": c.fact, "pattern": c.value}
        rhs = c.threshold.key if c.threshold else repr(c.value)
        return gettext("session field %(field)s %(operator)s %(value)s") % {
            "field": c.fact,
            "operator": c.operator,
            "value": rhs,
        }

    def form_initial(self, c: ConditionRow) -> dict[str, Any]:
        return {"value": c.value if c.operator == MATCHES else show_literal(c.value)}

    def form_clean(self, cleaned: dict[str, Any], point: PointView | None) -> None:
        text = cleaned.get("value")
        if not isinstance(text, str):
            return
        if cleaned.get("operator") == MATCHES:
            cleaned["value"] = stored_pattern(text) or None
            return
        text = text.strip()
        if not text:
            cleaned["value"] = None
            return
        fields = (point.session_fields or {}) if point is not None else {}
        textual = fields.get(cleaned.get("fact") or "") in ("string", "enum", "datetime")
        if cleaned.get("operator") == "in":
            cleaned["value"] = text_items(text) if textual else parse_literal_list(text)
            return
        value = parse_literal(text)
        cleaned["value"] = text if textual and not isinstance(value, str) else value
