"""``candidate_confidence_below: <threshold>`` — the LLM's confidence is below a threshold (``Condition.threshold``)."""

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


class CandidateConfidenceBelow(SingleKeyAdapter):
    kind = "candidate_confidence_below"
    label = _("candidate confidence below threshold")
    position = 60
    inputs = ("threshold",)
    help_texts = {"threshold": _("The threshold the candidate's confidence is compared with.")}
    requires = ("condition_confidence_has_threshold", Q(threshold__isnull=False))

    def problems(self, values: ConditionValues, point: PointView | None) -> dict[str, str]:
        if values["threshold"] is None:
            return {"threshold": gettext("Choose the threshold the candidate's confidence is compared with.")}
        return {}

    def read_value(self, r: Reader, value: Any, path: Path, ctx: DocumentContext) -> dict[str, Any] | None:
        threshold = r.key(value, path)
        if threshold is not None and threshold not in ctx.thresholds:
            r.problem(path, f"there is no threshold '{threshold}' in thresholds")
        return {self.kind: threshold}

    def document(self, c: ConditionRow) -> dict[str, Any]:
        assert c.threshold is not None  # guaranteed by a database constraint
        return {self.kind: c.threshold.key}

    def fill(self, c: ConditionRow, doc: Mapping[str, Any], records: Records) -> None:
        c.threshold = records.thresholds[doc[self.kind]]

    def describe(self, c: ConditionRow) -> str:
        return gettext("candidate confidence below %(threshold)s") % {
            "threshold": c.threshold.key if c.threshold else "?"
        }
