"""Export → import → export gives the same bytes, on the demo and on a configuration using every feature."""

from __future__ import annotations

import pytest
import yaml

from rules.config.document.validate import config_from_yaml
from rules.config.selectors import config_document
from rules.config.yaml_export import config_export
from rules.config.yaml_import import config_import
from tests.support.configio import DEMO_FILE, EMPTY_YAML, FULL_YAML, db_state

pytestmark = pytest.mark.django_db


def load(text: str, actor=None) -> None:
    config_import(text=text, source="test.yaml", actor=actor, reason="test")


@pytest.mark.applies_config_at_once(reason="empties the configuration and imports it again: about the bytes")
@pytest.mark.parametrize("source", ["full", "demo"])
def test_export_import_export_is_byte_identical(source, actor):
    load(FULL_YAML if source == "full" else DEMO_FILE.read_text(encoding="utf-8"), actor)
    first = config_export()

    # Into the same database: nothing to do.
    before = db_state()
    result = config_import(text=first, source="export.yaml", actor=actor, reason="round trip")
    assert result.changed is False
    assert result.diff == []
    assert db_state() == before
    assert config_export() == first

    # Into an empty configuration: everything is created again, and exports the same bytes.
    load(EMPTY_YAML, actor)
    assert config_document()["points"] == []
    config_import(text=first, source="export.yaml", actor=actor, reason="round trip")
    assert config_export() == first


def test_the_canonical_form_of_a_file_is_what_the_database_exports(actor):
    load(FULL_YAML, actor)
    assert config_document() == config_from_yaml(FULL_YAML)
    assert yaml.safe_load(config_export()) == config_from_yaml(FULL_YAML)


def test_export_is_plain_readable_yaml(actor):
    load(FULL_YAML, actor)
    text = config_export()
    assert text.startswith("version: 1\nthresholds:\n  - key: min_confidence\n")
    assert "退款" in text  # unicode as itself, not escaped
    assert "effective_from: '2025-01-01T00:00:00Z'" in text
    assert "from: '22:00'" in text  # quoted, so that YAML 1.1 does not read a base-60 number
    assert "- '12315'" in text
    assert "value: 1.0e-06" in text


def test_export_of_an_empty_configuration():
    assert config_export() == EMPTY_YAML
