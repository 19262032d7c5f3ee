"""``{fact: <name>, op: <op>, threshold: <key> | value: <literal>}`` — a fact compared with a threshold or a literal.

Stored in ``Condition.fact``, ``operator`` and either ``threshold`` or ``value``. The document form is
flat: the condition's mapping holds ``fact``, ``op`` and one of ``threshold`` or ``value``.
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
from rules.config.document.readers import clause, describe, one_of
from rules.config.literals import parse_literal, parse_literal_list, show_literal, text_items
from rules.config.validators import (
    NUMERIC_FACT_TYPES,
    OPERATORS,
    ORDERING_OPERATORS,
    declared_fact_problem,
    literal_fits,
    storable_problems,
)

if TYPE_CHECKING:
    from rules.config.document.readers import Reader
    from rules.config.document.yamlload import Path

KEYS = ("fact", "op", "threshold", "value")


class OperatorProblem(str):
    """A problem with the operator (not the value): the admin shows it at the operator's input."""

    __slots__ = ()


def fact_compare_problem(fact_type: str, operator: str, uses_threshold: bool, value: Any) -> str | None:
    """A fact of ``fact_type`` compared by ``operator`` with a threshold, or with the literal ``value``."""
    numeric = fact_type in NUMERIC_FACT_TYPES
    if operator in ORDERING_OPERATORS and not numeric:
        return OperatorProblem(
            gettext("The operator %(operator)s needs a number fact; this one is %(type)s.")
            % {"operator": operator, "type": fact_type}
        )
    if uses_threshold:
        if not numeric:
            return gettext("A threshold compares with number facts only; this one is %(type)s.") % {"type": fact_type}
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
        if not literal_fits(fact_type, item):
            return gettext("The value %(value)r does not fit a %(type)s fact.") % {"value": item, "type": fact_type}
    return None


def _literal_shape_ok(value: Any) -> bool:
    """Text, a number, true/false, or a list of those: what a literal can be in a document."""

    def scalar(item: Any) -> bool:
        if isinstance(item, float):
            return math.isfinite(item)
        return isinstance(item, str | int | bool)

    if isinstance(value, list):
        return all(scalar(item) for item in value)
    return scalar(value)


class FactComparison(ConditionAdapter):
    kind = "fact"
    label = _("fact compared with a threshold or value")
    position = 20
    inputs = ("fact", "operator", "threshold", "value")
    document_keys = ("op", "threshold", "value")
    requires = (
        "condition_fact_complete",
        ~Q(fact="") & ~Q(operator="") & (Q(threshold__isnull=False) | Q(value__isnull=False)),
    )

    def problems(self, values: ConditionValues, point: PointView | None) -> dict[str, str]:
        errors: dict[str, str] = {}
        fact, operator, value = values["fact"], values["operator"], values["value"]
        uses_threshold = values["threshold"] is not None
        facts = point.facts if point is not None else {}
        if not fact:
            errors["fact"] = gettext("Name the fact to compare.")
        elif point is not None and (problem := declared_fact_problem(fact, facts, point.key)):
            errors["fact"] = problem
        if not operator:
            errors["operator"] = gettext("Choose an operator.")
        elif operator not in OPERATORS:
            errors["operator"] = gettext("A fact is compared by %(allowed)s.") % {"allowed": ", ".join(OPERATORS)}
        if (not uses_threshold) == (value is None):
            errors["value"] = gettext("Compare with either a threshold or a literal value, not both or neither.")
        fact_type = facts.get(fact)
        if fact_type and operator and "value" not in errors and "operator" not in errors:
            problem = fact_compare_problem(fact_type, operator, uses_threshold, value)
            if problem:
                errors["operator" if isinstance(problem, OperatorProblem) else "value"] = problem
        if "value" not in errors:
            errors.update(storable_problems({"value": value}))
        return errors

    def read(self, r: Reader, item: dict[str, Any], path: Path, ctx: DocumentContext) -> dict[str, Any] | None:
        if r.mapping(item, path, KEYS, ("fact", "op")) is None:
            return None
        start = r.count()
        fact = r.key(item["fact"], (*path, "fact")) if "fact" in item else None
        facts = ctx.facts
        if fact is not None and facts is not None and (problem := declared_fact_problem(fact, facts, ctx.point)):
            r.problem((*path, "fact"), clause(problem))
        operator = None
        if "op" in item:
            operator = r.text(item["op"], (*path, "op"))
            if operator is not None and operator not in OPERATORS:
                r.problem((*path, "op"), f"'{operator}' is not one of {one_of(OPERATORS)}")
                operator = None
        has_threshold, has_value = "threshold" in item, "value" in item
        doc: dict[str, Any] = {"fact": fact, "op": operator}
        if has_threshold == has_value:
            r.problem(path, "compare the fact with either a threshold or a value, not both or neither")
            return None
        if has_threshold:
            threshold = r.key(item["threshold"], (*path, "threshold"))
            if threshold is not None and threshold not in ctx.thresholds:
                r.problem((*path, "threshold"), f"there is no threshold '{threshold}' in thresholds")
            doc["threshold"] = threshold
        else:
            value = item["value"]
            if not _literal_shape_ok(value):
                r.problem(
                    (*path, "value"), f"expected text, a number, true/false or a list of those, got {describe(value)}"
                )
            elif problems := storable_problems({"value": value}):
                r.problem((*path, "value"), clause(problems["value"]))
            doc["value"] = value
        if r.count() > start:
            return None
        fact_type = (ctx.facts or {}).get(fact or "")
        if fact_type and operator:
            problem = fact_compare_problem(fact_type, operator, has_threshold, doc.get("value"))
            if problem:
                where = "op" if isinstance(problem, OperatorProblem) else ("threshold" if has_threshold else "value")
                r.problem((*path, where), clause(problem))
                return None
        return doc

    def document(self, c: ConditionRow) -> dict[str, Any]:
        doc: dict[str, Any] = {"fact": c.fact, "op": c.operator}
        if c.threshold is not None:
            doc["threshold"] = c.threshold.key
        else:
            doc["value"] = c.value
        return doc

    def fill(self, c: ConditionRow, doc: Mapping[str, Any], records: Records) -> None:
        c.fact = doc["fact"]
        c.operator = doc["op"]
        if "threshold" in doc:
            c.threshold = records.thresholds[doc["threshold"]]
        else:
            c.value = doc["value"]

    def describe(self, c: ConditionRow) -> str:
        rhs = c.threshold.key if c.threshold else repr(c.value)
        return f"{c.fact} {c.operator} {rhs}"

    def fact_of(self, c: ConditionRow) -> str | None:
        return c.fact

    def fact_type_problem(self, c: ConditionRow, fact_type: str) -> str | None:
        return fact_compare_problem(fact_type, c.operator, c.threshold_id is not None, c.value)

    def form_initial(self, c: ConditionRow) -> dict[str, Any]:
        return {"value": show_literal(c.value)}

    def form_clean(self, cleaned: dict[str, Any], point: PointView | None) -> None:
        # A text fact compares with text: 500 typed for a text fact means the text "500".
        text = cleaned.get("value")
        if not isinstance(text, str):
            return
        text = text.strip()
        if not text:
            cleaned["value"] = None
            return
        fact_type = point.facts.get(cleaned.get("fact") or "") if point is not None else None
        textual = fact_type in ("string", "string_list")
        if cleaned.get("operator") == "in":
            cleaned["value"] = text_items(text) if textual else parse_literal_list(text)
            return
        value = parse_literal(text)
        cleaned["value"] = text if textual and not isinstance(value, str) else value
