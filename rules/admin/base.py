"""The configuration admins' base: the generic kit, with one configuration change per submission."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from decision_service.admin.kit import AuditedAdmin, AuditedInline
from rules.services.revisions import Actor, config_change


class ConfigAdmin(AuditedAdmin):
    """A configuration record's admin: a submission (form, inline rows, bulk delete, revert) is one
    ``config_change``, so it cuts at most one revision."""

    def change_scope(self, *, actor: Actor, reason: str) -> AbstractContextManager[Any]:
        return config_change(actor=actor, reason=reason)


__all__ = ["AuditedInline", "ConfigAdmin"]
