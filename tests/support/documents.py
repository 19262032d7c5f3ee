"""The demo's configuration as a plain document, and lookups of its records by key, for tests that edit a
document and ask what the edit means (risk, diffs) without a database."""

from __future__ import annotations

from typing import Any

from rules.config.document.validate import config_from_yaml
from tests.support import DEMO_TEXT

DEMO_DOCUMENT: dict[str, Any] = config_from_yaml(DEMO_TEXT)


def point(doc: dict[str, Any], key: str) -> dict[str, Any]:
    return next(p for p in doc["points"] if p["key"] == key)


def rule(doc: dict[str, Any], point_key: str, key: str) -> dict[str, Any]:
    return next(r for r in point(doc, point_key)["rules"] if r["key"] == key)


def machine(doc: dict[str, Any], key: str) -> dict[str, Any]:
    return next(m for m in doc["machines"] if m["key"] == key)
