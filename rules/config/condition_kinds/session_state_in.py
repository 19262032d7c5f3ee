"""``session_state_in: [<state>, …]`` — the request's session is in one of the states (``Condition.states``)."""

from __future__ import annotations

from collections.abc import Mapping
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
from rules.config.validators import key_list_problem

if TYPE_CHECKING:
    from rules.config.document.readers import Reader
    from rules.config.document.yamlload import Path

NO_STATES = gettext_noop("List at least one state.")


class SessionStateIn(SingleKeyAdapter):
    kind = "session_state_in"
    label = _("session state is one of")
    position = 80
    inputs = ("states",)

    def problems(self, values: ConditionValues, point: PointView | None) -> dict[str, str]:
        states = values["states"]
        if problem := key_list_problem(states):
            return {"states": problem}
        if not states:
            return {"states": gettext(NO_STATES)}
        return {}

    def read_value(self, r: Reader, value: Any, path: Path, ctx: DocumentContext) -> dict[str, Any] | None:
        return {self.kind: r.key_list(value, path, non_empty=clause(NO_STATES))}

    def document(self, c: ConditionRow) -> dict[str, Any]:
        return {self.kind: list(c.states)}

    def fill(self, c: ConditionRow, doc: Mapping[str, Any], records: Records) -> None:
        c.states = list(doc[self.kind])

    def describe(self, c: ConditionRow) -> str:
        return gettext("session state in %(states)s") % {"states": ", ".join(c.states or [])}
