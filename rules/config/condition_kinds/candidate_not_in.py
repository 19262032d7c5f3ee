"""``candidate_not_in: [<outcome>, …]`` — the LLM's candidate is none of the outcomes (``Condition.outcomes``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

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
from rules.config.condition_kinds.candidate_in import outcome_list_problems, read_outcome_list

if TYPE_CHECKING:
    from rules.config.document.readers import Reader
    from rules.config.document.yamlload import Path


class CandidateNotIn(SingleKeyAdapter):
    kind = "candidate_not_in"
    label = _("candidate is none of")
    position = 40
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
        return gettext("candidate not in %(outcomes)s") % {"outcomes": ", ".join(c.outcomes or [])}

    def outcomes_used(self, c: ConditionRow) -> Iterable[str]:
        return c.outcomes or []
