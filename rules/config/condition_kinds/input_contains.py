"""``input_contains: <list>`` — the input holds a term of a keyword list (``Condition.keyword_list``)."""

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

if TYPE_CHECKING:
    from rules.config.document.readers import Reader
    from rules.config.document.yamlload import Path


class InputContains(SingleKeyAdapter):
    kind = "input_contains"
    label = _("input contains a keyword of list")
    position = 10
    inputs = ("keyword_list", "unless", "unless_negated")
    # ``unless: [不是要投诉]`` beside the kind's key: a hit inside a weak-signal phrase does not count;
    # ``unless_negated: true``: nor does a hit its clause negates (rules.engine.negation).
    document_keys = ("unless", "unless_negated")
    requires = ("condition_input_contains_has_list", Q(keyword_list__isnull=False))

    def problems(self, values: ConditionValues, point: PointView | None) -> dict[str, str]:
        if values["keyword_list"] is None:
            return {"keyword_list": gettext("Choose the keyword list the input must contain a term of.")}
        if problem := unless_problem(values.get("unless")):
            return {"unless": problem}
        return {}

    def read(self, r: Reader, item: dict[str, Any], path: Path, ctx: DocumentContext) -> dict[str, Any] | None:
        if r.mapping(item, path, (self.kind, *self.document_keys), (self.kind,)) is None:
            return None
        start = r.count()
        result = self.read_value(r, item[self.kind], (*path, self.kind), ctx)
        if "unless" in item:
            items = r.sequence(item["unless"], (*path, "unless"))
            phrases = [r.text(p, (*path, "unless", i), max_length=200) for i, p in enumerate(items or [])]
            unless = [p for p in phrases if p is not None]
            if (problem := unless_problem(unless)) is not None:
                r.problem((*path, "unless"), problem)
            if result is not None and unless:
                result["unless"] = unless
        if r.boolean(item, path, "unless_negated", False) and result is not None:
            result["unless_negated"] = True
        return None if r.count() > start else result

    def read_value(self, r: Reader, value: Any, path: Path, ctx: DocumentContext) -> dict[str, Any] | None:
        list_key = r.key(value, path)
        if list_key is not None and list_key not in ctx.keyword_lists:
            r.problem(path, f"there is no keyword list '{list_key}' in keyword_lists")
        return {self.kind: list_key}

    def document(self, c: ConditionRow) -> dict[str, Any]:
        assert c.keyword_list is not None  # guaranteed by a database constraint
        doc: dict[str, Any] = {self.kind: c.keyword_list.key}
        if c.unless:
            doc["unless"] = list(c.unless)
        if c.unless_negated:
            doc["unless_negated"] = True
        return doc

    def fill(self, c: ConditionRow, doc: Mapping[str, Any], records: Records) -> None:
        c.keyword_list = records.keyword_lists[doc[self.kind]]
        c.unless = list(doc.get("unless", []))
        c.unless_negated = bool(doc.get("unless_negated", False))

    def describe(self, c: ConditionRow) -> str:
        described = gettext("input contains a term of %(list)s") % {
            "list": c.keyword_list.key if c.keyword_list else "?"
        }
        if c.unless:
            described += gettext(" unless %(phrases)s") % {"phrases": ", ".join(c.unless)}
        if c.unless_negated:
            described += gettext(" unless negated")
        return described


def unless_problem(unless: Any) -> str | None:
    """What is wrong with an ``unless`` list: phrases of text, none empty, none twice."""
    if unless in (None, []):
        return None
    if not isinstance(unless, list) or not all(isinstance(p, str) and p.strip() for p in unless):
        return gettext("Give each weak-signal phrase as text, one per line.")
    if len({p.strip() for p in unless}) != len(unless):
        return gettext("A weak-signal phrase is listed twice.")
    return None
