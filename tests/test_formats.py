"""One date-time format in every language the admin speaks, and the helpers lists and pages use."""

from __future__ import annotations

import datetime as dt
import importlib
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.template import Context, Template
from django.utils import formats, timezone, translation
from django.utils.translation import to_locale

from decision_service.admin.display import key_cell, summary_cell, when, when_cell
from tests.support import ROOT

MOMENT = dt.datetime(2026, 12, 1, 3, 10, 32, 123456, tzinfo=dt.UTC)


@pytest.mark.parametrize("language", [code for code, _ in settings.LANGUAGES])
def test_every_language_has_the_one_format(language):
    # Django's own locale formats win over the settings' DATETIME_FORMAT: each language needs a module.
    module = importlib.import_module(f"decision_service.formats.{to_locale(language)}.formats")
    assert module.DATETIME_FORMAT == "Y-m-d H:i:s T"
    with translation.override(language):
        assert formats.get_format("DATETIME_FORMAT") == "Y-m-d H:i:s T"
        assert formats.get_format("SHORT_DATETIME_FORMAT") == "Y-m-d H:i:s T"
        assert formats.get_format("DATE_FORMAT") == "Y-m-d"
        assert when(MOMENT) == "2026-12-01 03:10:32 UTC"
        # What Django writes for a plain {{ datetime }} (list columns of model fields, read-only fields).
        assert Template("{{ v }}").render(Context({"v": MOMENT})) == "2026-12-01 03:10:32 UTC"


def test_when_writes_the_current_time_zone_and_reads_report_text():
    with timezone.override("Asia/Shanghai"):
        assert when(MOMENT) == "2026-12-01 11:10:32 CST"
    assert when("2026-12-01T03:10:32.123456Z") == "2026-12-01 03:10:32 UTC"
    assert when(None) == "—"
    assert Template("{{ v|when }}").render(Context({"v": MOMENT})) == "2026-12-01 03:10:32 UTC"


def test_list_cells_are_compact_and_keep_the_whole_value():
    cell = when_cell(MOMENT)
    assert re.sub(r"<[^>]+>", "", cell) == "2026-12-01 03:10:32 UTC"
    assert 'datetime="2026-12-01T03:10:32.123456+00:00"' in cell
    long_id = "wx-" + "x" * 60
    shown = key_cell(long_id, chars=24)
    assert f'title="{long_id}"' in shown and "…" in shown
    assert key_cell("a_b<c>") == "a_b&lt;c&gt;"
    assert key_cell("") == "—"
    summary = summary_cell("投诉 " * 100, chars=20)
    assert 'title="' in summary and len(re.sub(r"<[^>]+>|title=\"[^\"]*\"", "", summary)) < 80


def test_nothing_formats_a_date_time_on_its_own():
    """Display code goes through ``when`` (or ``|when``): no strftime or explicit date format for display
    in the admin modules and templates (an input's value is not display)."""
    offenders = []
    for path in [*ROOT.glob("*/admin/*.py"), *ROOT.glob("templates/**/*.html")]:
        text = Path(path).read_text(encoding="utf-8")
        for line in text.splitlines():
            if ".strftime(" in line or (re.search(r"\|date:", line) and "<input" not in line):
                offenders.append(f"{path.relative_to(ROOT)}: {line.strip()}")
    assert not offenders, offenders
