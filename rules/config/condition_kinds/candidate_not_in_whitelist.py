"""``candidate_not_in_whitelist: true`` — the LLM's candidate is not in the point's whitelist (no inputs)."""

from __future__ import annotations

from collections.abc import Mapping
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
from rules.config.document.readers import describe

if TYPE_CHECKING:
    from rules.config.document.readers import Reader
    from rules.config.document.yamlload import Path


class CandidateNotInWhitelist(SingleKeyAdapter):
    kind = "candidate_not_in_whitelist"
    label = _("candidate is not in the point's whitelist")
    position = 50

    def problems(self, values: ConditionValues, point: PointView | None) -> dict[str, str]:
        return {}

    def read_value(self, r: Reader, value: Any, path: Path, ctx: DocumentContext) -> dict[str, Any] | None:
        if value is not True:
            r.problem(path, f"write {self.kind}: true (got {describe(value)})")
        return {self.kind: True}

    def document(self, c: ConditionRow) -> dict[str, Any]:
        return {self.kind: True}

    def fill(self, c: ConditionRow, doc: Mapping[str, Any], records: Records) -> None:
        pass  # nothing but its kind

    def describe(self, c: ConditionRow) -> str:
        return gettext("candidate not in the whitelist")
