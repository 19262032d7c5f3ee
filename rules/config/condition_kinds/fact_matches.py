"""``fact_matches: {fact: <name>, pattern: <regular expression>}`` — a text fact matches a pattern, ignoring case.

Stored in ``Condition.fact`` and, as text, ``Condition.value``. The fact must be a declared ``string``
fact; the pattern is held to the limits of a regex keyword term (stored trimmed, at most 200
characters, it must compile as the engine compiles it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.db.models import Q
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from rules.config.condition_kinds.base import (
    ConditionRow,
    ConditionValues,
    DocumentContext,
    PointView,
    Records,
    SingleKeyAdapter,
)
from rules.config.document.readers import clause
from rules.config.validators import declared_fact_problem, pattern_problem
from rules.engine.normalize import normalize_term

if TYPE_CHECKING:
    from rules.config.document.readers import Reader
    from rules.config.document.yamlload import Path

KEYS = ("fact", "pattern")


def text_fact_problem(fact_type: str) -> str | None:
    if fact_type == "string":
        return None
    return gettext("A regular expression needs a string fact; this one is %(type)s.") % {"type": fact_type}


def stored_pattern(text: str) -> str:
    """A pattern as it is stored: trimmed, case kept (as a regex keyword term)."""
    return normalize_term(text, "regex")


class FactMatches(SingleKeyAdapter):
    kind = "fact_matches"
    label = _("fact matches a regular expression")
    position = 25
    inputs = ("fact", "value")
    help_texts = {
        "fact": _("A text (string) fact declared by the decision point."),
        "value": _(
            "The regular expression the fact must match, e.g. ^E\\d{10}$. Case is ignored; it matches "
            "anywhere in the fact unless anchored with ^ and $."
        ),
    }
    requires = ("condition_fact_matches_complete", ~Q(fact="") & Q(value__isnull=False))

    def problems(self, values: ConditionValues, point: PointView | None) -> dict[str, str]:
        errors: dict[str, str] = {}
        fact = values["fact"]
        if not fact:
            errors["fact"] = gettext("Name the fact to match.")
        elif point is not None:
            problem = declared_fact_problem(fact, point.facts, point.key)
            if problem := problem or text_fact_problem(point.facts[fact]):
                errors["fact"] = problem
        if problem := pattern_problem(values["value"]):
            errors["value"] = problem
        return errors

    def read_value(self, r: Reader, value: Any, path: Path, ctx: DocumentContext) -> dict[str, Any] | None:
        spec = r.mapping(value, path, KEYS, KEYS, what="a mapping with fact and pattern")
        if spec is None:
            return None
        fact = r.key(spec["fact"], (*path, "fact")) if "fact" in spec else None
        if fact is not None and ctx.facts is not None:
            problem = declared_fact_problem(fact, ctx.facts, ctx.point)
            if problem := problem or text_fact_problem(ctx.facts[fact]):
                r.problem((*path, "fact"), clause(problem))
        pattern = None
        written = r.text(spec["pattern"], (*path, "pattern")) if "pattern" in spec else None
        if written is not None:
            pattern = stored_pattern(written)
            if problem := pattern_problem(pattern):
                r.problem((*path, "pattern"), clause(problem))
        return {self.kind: {"fact": fact, "pattern": pattern}}

    def document(self, c: ConditionRow) -> dict[str, Any]:
        return {self.kind: {"fact": c.fact, "pattern": c.value}}

    def fill(self, c: ConditionRow, doc: Mapping[str, Any], records: Records) -> None:
        c.fact = doc[self.kind]["fact"]
        c.value = doc[self.kind]["pattern"]

    def describe(self, c: ConditionRow) -> str:
        return gettext("%(fact)s matches /%(pattern)s/") % {"fact": c.fact, "pattern": c.value}

    def fact_of(self, c: ConditionRow) -> str | None:
        return c.fact

    def fact_type_problem(self, c: ConditionRow, fact_type: str) -> str | None:
        return text_fact_problem(fact_type)

    def form_initial(self, c: ConditionRow) -> dict[str, Any]:
        return {"value": c.value if isinstance(c.value, str) else ""}

    def form_clean(self, cleaned: dict[str, Any], point: PointView | None) -> None:
        text = cleaned.get("value")
        if isinstance(text, str):
            cleaned["value"] = stored_pattern(text) or None
