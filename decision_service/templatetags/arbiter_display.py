"""Template filters for the one date-time format; a builtin library (``TEMPLATES`` in the settings),
so every template has them without ``{% load %}``."""

from __future__ import annotations

from django import template

from decision_service.admin import display
from decision_service.admin.forms import reason_shown

register = template.Library()


@register.filter(name="when")
def when(value: object) -> str:
    """``{{ record.created_at|when }}`` → ``2026-12-01 03:10:32 UTC`` (also for ISO-8601 text)."""
    return display.when(value)  # type: ignore[arg-type]


@register.filter(name="when_cell")
def when_cell(value: object) -> str:
    """``when`` as a ``<time>`` whose date may wrap onto its own line in a narrow column."""
    return display.when_cell(value)  # type: ignore[arg-type]


@register.filter(name="break_after_underscores")
def break_after_underscores(value: object) -> str:
    """A list cell's HTML that may wrap after the underscores of its keys, not inside their words."""
    return display.break_after_underscores(str(value))


@register.filter(name="reason_shown")
def reason_filter(value: object) -> str:
    """A recorded change reason, the admin's own defaults ("Edited in admin") in the operator's language."""
    return reason_shown(value)
