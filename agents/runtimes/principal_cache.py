"""Authenticated agent tokens, remembered per process: a decide reads neither the agent nor its points.

A token's principal (the agent's id, name and allowed points) is kept by the token's hash once an active
agent's token authenticated. The whole cache is dropped when the agents' change stamp moves; the stamp
is read with the engine cache's periodic revision check (``rules.config.runtime.EngineCache.watch``), before
the lookup, so no request pays a query for it.

**Staleness window.** A rotated or revoked token, a deactivated or deleted agent, or a change of an
agent's points takes effect in every process within ``ARBITER_REVISION_CHECK_SECONDS`` (0.5 s by
default) of its commit: the first request after that interval re-reads the stamp before authenticating.

The stamp is the number of the agents' history rows and the highest history id. Every change to an
agent runtime goes through ``agents.runtimes.services`` and is audited (``audited_save``, a history
row per change, deletion included), so every change moves the stamp — the count even when a change
with a lower id commits after one with a higher id. A write that bypasses the history (a queryset
``.update()`` on agents, which the house style forbids) is seen only with the next audited change.
Unknown tokens are not remembered: each costs a query, as before.
"""

from __future__ import annotations

from django.db.models import Expression, IntegerField
from django.db.models.expressions import RawSQL

from agents.runtimes.models import AgentRuntime
from agents.runtimes.services import token_hash
from decision_service.principals import AgentPrincipal

_MAX_ENTRIES = 10_000  # far more agents than any installation has; a bound against surprises

_principals: dict[str, AgentPrincipal] = {}


def clear() -> None:
    _principals.clear()


def agents_stamp() -> Expression:
    """One value that changes with every audited change of any agent runtime (see the module docstring)."""
    table = AgentRuntime.history.model._meta.db_table
    # COUNT(*) * 2^32 + MAX(id): both in one comparable number, as one scalar subquery of the revision check.
    # The table name comes from the model, no value from outside.
    return RawSQL(  # noqa: S611
        f'SELECT COUNT(*) * 4294967296 + COALESCE(MAX(history_id), 0) FROM "{table}"',  # noqa: S608
        (),
        output_field=IntegerField(),
    )


def principal_for_token(token: str) -> AgentPrincipal | None:
    """The principal of an active agent's token, from this process's cache when it is fresh enough."""
    from agents.runtimes.selectors import agent_principal_by_hash
    from rules.config.runtime import engines

    engines.check()  # may drop the cache: at most every ARBITER_REVISION_CHECK_SECONDS
    digest = token_hash(token)
    found = _principals.get(digest)
    if found is not None:
        return found
    principal = agent_principal_by_hash(digest=digest)
    if principal is not None:
        if len(_principals) >= _MAX_ENTRIES:
            _principals.clear()
        _principals[digest] = principal
    return principal
