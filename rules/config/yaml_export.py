"""The live configuration as YAML text: ``config_document()`` dumped deterministically."""

from __future__ import annotations

from typing import Any

import yaml

from rules.config.selectors import config_document


class _Dumper(yaml.SafeDumper):
    """Indents list items under their key (``rules:`` / ``  - key: …``), as people write YAML by hand."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def document_yaml(document: dict[str, Any]) -> str:
    """A configuration document as YAML. The same document always gives the same bytes."""
    return yaml.dump(
        document,
        Dumper=_Dumper,
        allow_unicode=True,
        sort_keys=False,
        default_flow_style=False,
        width=100,
    )


def config_export() -> str:
    """The whole live configuration as YAML, in the format ``import_config`` reads."""
    return document_yaml(config_document())
