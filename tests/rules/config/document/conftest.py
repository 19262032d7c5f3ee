"""Fixtures for the configuration-as-code tests (their documents are in ``tests.support.configio``)."""

from __future__ import annotations

import pytest


@pytest.fixture
def write(tmp_path):
    """Write YAML text to a file and return its path as a string."""

    def _write(text: str, name: str = "config.yaml") -> str:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return str(path)

    return _write
