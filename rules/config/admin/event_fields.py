"""The admin's YAML text inputs for a machine's events (a list) and guards (a mapping), as the ``events:``
and ``guards:`` blocks of the configuration document; what they mean is checked by the model's ``clean()``."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext

from rules.config.admin.fields import YamlBlockField
from rules.config.event_definitions import canonical_event


class EventDeclarationsField(YamlBlockField):
    empty: Any = []

    def shown(self, value: Any) -> Any:
        # In the document's key order: PostgreSQL's jsonb keeps no key order of its own.
        return [canonical_event(item) if isinstance(item, dict) else item for item in value]

    def shape_message(self) -> str:
        return gettext("Write the events as a YAML list: each one starting with “- name: …”.")


class GuardsField(YamlBlockField):
    empty: Any = {}

    def shape_message(self) -> str:
        return gettext("Write the guards as a YAML mapping: a state, then the state it moves to, then the guard.")
