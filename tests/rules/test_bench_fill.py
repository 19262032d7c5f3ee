"""The partition benchmark fills its 10-million-row log with one INSERT written by hand: it must name
every column the log requires, or the benchmark stops at its first million rows."""

from __future__ import annotations

import re

from bench.partitions.run import FILL
from rules.models import DecisionRecord


def test_the_fill_names_every_column_the_log_requires():
    named = set(re.findall(r"\w+", FILL[FILL.index("(") : FILL.index(")")]))
    required = {f.column for f in DecisionRecord._meta.concrete_fields if not f.null}
    assert required - named == set()
