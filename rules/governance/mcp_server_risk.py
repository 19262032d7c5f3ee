"""Which changes to an upstream MCP server are high-risk (``rules.governance.risk`` asks).

Judged by effect. A server's ``url`` and ``auth`` decide where every call of its tools goes and as whom;
switching a disabled server on lets its tools be called again; deleting it stops them. When a tool of
the server (a contract named ``server.tool``) writes or destroys — as the configuration is before the
change **or** after it — such a change redirects or changes calls that act on the world, so it waits for
a second person, as changing that tool's contract would (``tool_risk.py``). Everything else applies at
once: a new server (its tools are offered only once their contracts exist, each judged itself), a server
whose tools only read, its description, timeout, refresh interval, and switching it off (calls stop;
nothing is sent anywhere new). Pure functions over document data.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from django.utils.translation import gettext, gettext_noop

from rules.config.document.diff import RecordChange
from rules.config.mcp_server_definitions import server_of
from rules.governance.tool_risk import ACTING_RISKS

REDIRECTING_FIELDS = frozenset({"url", "auth"})


def acting_tools(server: str, tools: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The write or destructive contracts of ``server`` among ``tools`` (by name), sorted."""
    return sorted(name for name, t in tools.items() if server_of(name) == server and t.get("risk") in ACTING_RISKS)


def mcp_server_risks(
    change: RecordChange, old_tools: Mapping[str, Mapping[str, Any]], new_tools: Mapping[str, Mapping[str, Any]]
) -> Iterator[tuple[str, dict[str, Any]]]:
    """A server change's reasons, as (message id, params); ``old_tools`` / ``new_tools`` are each side's
    contracts by name."""
    acting = sorted({*acting_tools(change.key, old_tools), *acting_tools(change.key, new_tools)})
    if not acting or change.action == "add":
        return
    shown = {"tools": ", ".join(acting)}
    if change.action == "remove":
        yield gettext_noop("deletes an MCP server with the write or destructive tools %(tools)s"), shown
        return
    watched = {f.field for f in change.fields} & REDIRECTING_FIELDS
    if watched:
        yield (
            gettext_noop("changes %(fields)s of an MCP server with the write or destructive tools %(tools)s"),
            {"fields": ", ".join(sorted(watched)), **shown},
        )
    switched_on = change.old is not None and change.new is not None and not change.old.get("enabled", True)
    if switched_on and change.new is not None and change.new.get("enabled", True):
        yield gettext_noop("enables an MCP server with the write or destructive tools %(tools)s"), shown


def mcp_server_approval_note(server: str, tools: Mapping[str, Mapping[str, Any]]) -> str:
    """For the admin: which changes to this server need approval."""
    acting = acting_tools(server, tools)
    if not acting:
        return gettext(
            "Its tools only read: changes apply at once. Once a write or destructive tool %(server)s.… exists, "
            "changing its URL or authentication, enabling it or deleting it needs approval."
        ) % {"server": server}
    return gettext(
        "Has the write or destructive tools %(tools)s: changing its URL or authentication, enabling it or "
        "deleting it needs approval."
    ) % {"tools": ", ".join(acting)}
