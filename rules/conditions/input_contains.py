"""``input_contains: <list>`` — the input holds a term of a keyword list (``Condition.keyword_list``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.db.models import Q
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from rules.conditions.base import ConditionValues, DocumentContext, PointView, Records, SingleKeyAdapter

if TYPE_CHECKING:
    from rules.configio.readers import Reader
    from rules.configio.yamlload import Path
    from rules.models import Condition


class InputContains(SingleKeyAdapter):
    kind = "input_contains"
    label = _("input contains a keyword of list")
    position = 10
    inputs = ("keyword_list",)
    requires = ("condition_input_contains_has_list", Q(keyword_list__isnull=False))

    def problems(self, values: ConditionValues, point: PointView | None) -> dict[str, str]:
        if values["keyword_list"] is None:
            return {"keyword_list": gettext("Choose the keyword list the input must contain a term of.")}
        return {}

    def read_value(self, r: Reader, value: Any, path: Path, ctx: DocumentContext) -> dict[str, Any] | None:
        list_key = r.key(value, path)
        if list_key is not None and list_key not in ctx.keyword_lists:
            r.problem(path, f"there is no keyword list '{list_key}' in keyword_lists")
        return {self.kind: list_key}

    def document(self, c: Condition) -> dict[str, Any]:
        assert c.keyword_list is not None  # guaranteed by a database constraint
        return {self.kind: c.keyword_list.key}

    def fill(self, c: Condition, doc: Mapping[str, Any], records: Records) -> None:
        c.keyword_list = records.keyword_lists[doc[self.kind]]

    def describe(self, c: Condition) -> str:
        return gettext("input contains a term of %(list)s") % {"list": c.keyword_list.key if c.keyword_list else "?"}
