"""How values are spelt in the configuration document (``rules.config.selectors.config_document``).

Export writes these spellings and the YAML validator brings a file into them, so a document read
back compares equal to the one written. Pure Python, no Django.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

# The version of the document's format: export writes it, the validator refuses any other.
CONFIG_FORMAT_VERSION = 1


def number_out(value: Decimal | None) -> int | float | None:
    """Decimals leave as the plainest JSON number: ``500`` rather than ``500.0``, ``0.65`` exact."""
    if value is None:
        return None
    if value == value.to_integral_value():
        return int(value)
    return float(value)


def time_out(value: dt.time | None) -> str | None:
    if value is None:
        return None
    return value.strftime("%H:%M:%S" if value.second else "%H:%M")


def datetime_out(value: dt.datetime | None) -> str | None:
    return None if value is None else value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def drop_empty(item: dict[str, Any], *optional: str) -> dict[str, Any]:
    return {k: v for k, v in item.items() if not (k in optional and v in (None, "", [], {}))}
