"""``{session_keyword_seen: <keyword list>, last: N}`` — the list hit in one of the session's last N logged
decisions (``Condition.keyword_list``; ``N`` in ``Condition.value``, 1 … 50, 5 when not given)."""

from __future__ import annotations

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
from rules.engine.conditions.session_keyword_seen import DEFAULT_LAST, MAX_LAST

if TYPE_CHECKING:
    from rules.config.document.readers import Reader
    from rules.config.document.yamlload import Path


def last_problem(last: Any) -> str | None:
    """How many decisions back a session_keyword_seen condition looks: a whole number in 1 … ``MAX_LAST``."""
    if isinstance(last, bool) or not isinstance(last, int) or not 1 <= last <= MAX_LAST:
        return gettext("Look back on a whole number of decisions from 1 to %(max)s.") % {"max": MAX_LAST}
    return None


class SessionKeywordSeen(ConditionAdapter):
    kind = "session_keyword_seen"
    label = _("keyword list seen in the session's last decisions")
    position = 86
    inputs = ("keyword_list", "value")
    document_keys = ("last",)
    help_texts = {
        "value": _("How many of the session's latest logged decisions to look back on (1 to 50; 5 when empty)."),
    }
    requires = ("condition_session_keyword_seen_has_list", Q(keyword_list__isnull=False))

    def problems(self, values: ConditionValues, point: PointView | None) -> dict[str, str]:
        errors: dict[str, str] = {}
        if values["keyword_list"] is None:
            errors["keyword_list"] = gettext("Choose the keyword list the session's decisions must have hit.")
        if values["value"] is not None and (problem := last_problem(values["value"])):
            errors["value"] = problem
        return errors

    def read(self, r: Reader, item: dict[str, Any], path: Path, ctx: DocumentContext) -> dict[str, Any] | None:
        if r.mapping(item, path, (self.kind, "last"), (self.kind,)) is None:
            return None
        start = r.count()
        list_key = r.key(item[self.kind], (*path, self.kind))
        if list_key is not None and list_key not in ctx.keyword_lists:
            r.problem((*path, self.kind), f"there is no keyword list '{list_key}' in keyword_lists")
        last = item.get("last", DEFAULT_LAST)
        if last_problem(last):
            r.problem((*path, "last"), f"expected a whole number from 1 to {MAX_LAST}, got {last!r}")
        if r.count() > start:
            return None
        return {self.kind: list_key, "last": last}

    def document(self, c: ConditionRow) -> dict[str, Any]:
        assert c.keyword_list is not None  # guaranteed by a database constraint
        return {self.kind: c.keyword_list.key, "last": c.value if c.value is not None else DEFAULT_LAST}

    def fill(self, c: ConditionRow, doc: Mapping[str, Any], records: Records) -> None:
        c.keyword_list = records.keyword_lists[doc[self.kind]]
        c.value = int(doc.get("last", DEFAULT_LAST))

    def describe(self, c: ConditionRow) -> str:
        return gettext("keyword list %(list)s seen in the session's last %(last)s decisions") % {
            "list": c.keyword_list.key if c.keyword_list else "?",
            "last": c.value if c.value is not None else DEFAULT_LAST,
        }

    def form_clean(self, cleaned: dict[str, Any], point: PointView | None) -> None:
        text = cleaned.get("value")
        if isinstance(text, str):
            text = text.strip()
            cleaned["value"] = int(text) if text.isdigit() else (text or None)
