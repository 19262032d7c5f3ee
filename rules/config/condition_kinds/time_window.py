"""``time_window: {from: HH:MM, to: HH:MM, tz: <IANA zone>}`` — the local time of day is within a window.

Stored in ``Condition.window_start``, ``window_end`` and ``timezone``.
"""

from __future__ import annotations

import datetime as dt
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
from rules.config.document.spelling import time_out
from rules.config.validators import time_zone_problem

if TYPE_CHECKING:
    from rules.config.document.readers import Reader
    from rules.config.document.yamlload import Path

WINDOW_KEYS = ("from", "to", "tz")


class TimeWindow(SingleKeyAdapter):
    kind = "time_window"
    label = _("time of day within a window")
    position = 70
    inputs = ("window_start", "window_end", "timezone")
    requires = (
        "condition_time_window_complete",
        Q(window_start__isnull=False) & Q(window_end__isnull=False) & ~Q(timezone=""),
    )

    def problems(self, values: ConditionValues, point: PointView | None) -> dict[str, str]:
        errors: dict[str, str] = {}
        start, end, tz = values["window_start"], values["window_end"], values["timezone"]
        if start is None:
            errors["window_start"] = gettext("Give the start of the window (HH:MM).")
        if end is None:
            errors["window_end"] = gettext("Give the end of the window (HH:MM).")
        if not tz:
            errors["timezone"] = gettext("Give the time zone the window is in.")
        elif problem := time_zone_problem(tz):
            errors["timezone"] = problem
        if start is not None and start == end:
            errors["window_end"] = gettext("The window is empty: start and end are the same time.")
        return errors

    def read_value(self, r: Reader, value: Any, path: Path, ctx: DocumentContext) -> dict[str, Any] | None:
        window = r.mapping(value, path, WINDOW_KEYS, WINDOW_KEYS, what="a mapping with from, to and tz")
        if window is None:
            return None
        start = r.time_of_day(window["from"], (*path, "from")) if "from" in window else None
        end = r.time_of_day(window["to"], (*path, "to")) if "to" in window else None
        tz = r.text(window["tz"], (*path, "tz"), max_length=64) if "tz" in window else None
        if tz is not None and (problem := time_zone_problem(tz)):
            r.problem((*path, "tz"), clause(problem))
        if start is not None and start == end:
            r.problem((*path, "to"), "the window is empty: from and to are the same time")
        return {self.kind: {"from": time_out(start), "to": time_out(end), "tz": tz}}

    def document(self, c: ConditionRow) -> dict[str, Any]:
        return {self.kind: {"from": time_out(c.window_start), "to": time_out(c.window_end), "tz": c.timezone}}

    def fill(self, c: ConditionRow, doc: Mapping[str, Any], records: Records) -> None:
        window = doc[self.kind]
        c.window_start = dt.time.fromisoformat(window["from"])
        c.window_end = dt.time.fromisoformat(window["to"])
        c.timezone = window["tz"]

    def describe(self, c: ConditionRow) -> str:
        return gettext("time within %(start)s–%(end)s %(tz)s") % {
            "start": c.window_start,
            "end": c.window_end,
            "tz": c.timezone,
        }
