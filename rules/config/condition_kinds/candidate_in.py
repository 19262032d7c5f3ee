"""``candidate_in: [<outcome>, …]`` — the LLM's candidate is one of the outcomes (``Condition.outcomes``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from django.utils.translation import gettext, gettext_noop
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
from rules.config.validators import key_list_problem, outcome_problem, outcomes_problem

if TYPE_CHECKING:
    from rules.config.document.readers import Reader
    from rules.config.document.yamlload import Path

NO_OUTCOMES = gettext_noop("List at least one outcome.")


def outcome_list_problems(values: ConditionValues, point: PointView | None) -> dict[str, str]:
    """The outcomes of a candidate condition: keys, at least one, each an outcome of the point."""
    outcomes = values["outcomes"]
    if problem := key_list_problem(outcomes):
        return {"outcomes": problem}
    if not outcomes:
        return {"outcomes": gettext(NO_OUTCOMES)}
    if point is not None and (problem := outcomes_problem(outcomes, point.outcomes, point.key)):
        return {"outcomes": problem}
    return {}


def read_outcome_list(r: Reader, value: Any, path: Path, ctx: DocumentContext) -> list[str] | None:
    listed = r.key_list(value, path, non_empty=clause(NO_OUTCOMES))
    for index, outcome in enumerate(listed or []):
        if ctx.outcomes is not None and (problem := outcome_problem(outcome, ctx.outcomes, ctx.point)):
            r.problem((*path, index), clause(problem))
    return listed


class CandidateIn(SingleKeyAdapter):
    kind = "candidate_in"
    label = _("candidate is one of")
    position = 30
    inputs = ("outcomes",)

    def problems(self, values: ConditionValues, point: PointView | None) -> dict[str, str]:
        return outcome_list_problems(values, point)

    def read_value(self, r: Reader, value: Any, path: Path, ctx: DocumentContext) -> dict[str, Any] | None:
        return {self.kind: read_outcome_list(r, value, path, ctx)}

    def document(self, c: ConditionRow) -> dict[str, Any]:
        return {self.kind: list(c.outcomes)}

    def fill(self, c: ConditionRow, doc: Mapping[str, Any], records: Records) -> None:
        c.outcomes = list(doc[self.kind])

    def describe(self, c: ConditionRow) -> str:
        return gettext("candidate in %(outcomes)s") % {"outcomes": ", ".join(c.outcomes or [])}

    def outcomes_used(self, c: ConditionRow) -> Iterable[str]:
        return c.outcomes or []
