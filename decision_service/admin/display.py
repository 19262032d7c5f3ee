"""How the admin and the HTML reports write values in lists and pages: one date-time format, and
compact cells that fit a laptop's screen (the full value stays in a ``title`` and on the record's page).

Every date-time goes through ``when`` (or the ``when`` template filter, built on it), which writes it
in the active language's ``DATETIME_FORMAT`` (``decision_service/formats``: ``2026-12-01 03:10:32 UTC``)
in the current time zone; nothing else calls ``strftime`` for display. Long keys and ids are left
whole; a list's cells may break a key after its underscores (``break_after_underscores``, applied to
every list by ``templates/admin/change_list_results.html``), never inside a word.
"""

from __future__ import annotations

import datetime as dt
import re

from django.utils import formats, timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.text import Truncator
from django.utils.translation import gettext

NONE = "—"
# The text between two tags of a rendered cell (never inside a tag: attributes and URLs stay as they are).
_TEXT_BETWEEN_TAGS = re.compile(r"(?<=>)[^<>]+(?=<|$)|^[^<>]+(?=<|$)")
_FORM_FIELD = re.compile(r"<(textarea|select|input|script|style)\b", re.IGNORECASE)


def moment(value: dt.datetime | str | None) -> dt.datetime | None:
    """A datetime from a datetime or an ISO-8601 text (the reports carry ``…Z`` strings)."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    if isinstance(value, dt.datetime) and timezone.is_naive(value):
        value = timezone.make_aware(value, dt.UTC)
    return value if isinstance(value, dt.datetime) else None


def when(value: dt.datetime | str | None) -> str:
    """``2026-12-01 03:10:32 UTC``: the moment in the current time zone, in the one format."""
    found = moment(value)
    if found is None:
        return NONE if value in (None, "") else str(value)
    return formats.date_format(timezone.localtime(found), "DATETIME_FORMAT")


def when_cell(value: dt.datetime | str | None) -> SafeString:
    """``when`` for a list column: the date may go on a line of its own, the time and zone stay together."""
    text = when(value)
    day, sep, rest = text.partition(" ")
    found = moment(value)
    if not sep or found is None:
        return format_html("{}", text)
    return format_html(
        '<time class="arbiter-when" datetime="{}"><span>{}</span> <span>{}</span></time>', found.isoformat(), day, rest
    )


def key_cell(text: object, *, chars: int = 0) -> SafeString:
    """A key or id for a list column (whose CSS lets it wrap anywhere): past ``chars`` characters
    shortened, with the whole in a title."""
    value = str(text or "")
    if not value:
        return format_html("{}", NONE)
    if chars and len(value) > chars:
        return format_html('<span title="{}">{}</span>', value, Truncator(value).chars(chars))
    return format_html("{}", value)


def summary_cell(text: object, *, chars: int) -> SafeString:
    """Free text for a list column: its first ``chars`` characters, the whole in a title."""
    value = " ".join(str(text or "").split())
    if not value:
        return format_html("{}", NONE)
    short = Truncator(value).chars(chars)
    if short == value:
        return format_html('<span class="arbiter-summary">{}</span>', value)
    return format_html('<span class="arbiter-summary" title="{}">{}</span>', value, short)


def break_after_underscores(html: str) -> SafeString:
    """Rendered, escaped cell HTML with a ``<wbr>`` after every underscore of its text, so that
    ``low_confidence`` wraps as ``low_`` / ``confidence`` and never as ``low_confide`` / ``nce``."""
    html = str(html)
    if _FORM_FIELD.search(html):
        return SafeString(html)  # an editable cell: a textarea's text is its value, left untouched
    return SafeString(_TEXT_BETWEEN_TAGS.sub(lambda m: m.group(0).replace("_", "_<wbr>"), html))


def flag_cell(flag: bool) -> SafeString:
    """A yes/no column where "yes" is the exception worth seeing (a decision whose candidate was overridden):
    a mark on those rows only, a neutral dash on the others. Django's boolean icons would put a red ✗ on
    every normal row."""
    if flag:
        return format_html('<strong class="arbiter-flag">{}</strong>', gettext("yes"))
    return format_html('<span class="arbiter-flag-no" title="{}">{}</span>', gettext("no"), NONE)
