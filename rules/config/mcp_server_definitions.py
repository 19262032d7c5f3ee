"""Upstream MCP servers: where the gateway forwards a namespace's tool calls, and how it authenticates.

One pure checker (``mcp_server_problems``) and one canonical form (``canonical_mcp_server``), used by the
model's ``clean()`` and by the YAML document checker alike (the ``machine_problems`` pattern); a problem is
keyed by its path inside the server's document (``("auth", "secret_env")``).

A server's ``name`` is the namespace of its tools: the contract ``orders.query_order`` is the tool
``query_order`` of the server ``orders``. A name is lower case and holds no dot, so the first dot of a
contract's name always splits it.

Secrets never enter the configuration: ``auth.secret_env`` names the environment variable the gateway
reads the secret from, so revisions, exports, change requests and the admin never hold one. A value
that cannot be a variable's name (a token pasted in its place), any other key under ``auth``, and a URL
carrying a user and password or a query string are refused for that reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from django.utils.translation import gettext

MCP_SERVER_KEYS = ("name", "description", "url", "auth", "timeout_ms", "enabled", "tools_refresh_s")
MCP_SERVER_REQUIRED = ("name", "url")
AUTH_KEYS = ("kind", "header", "secret_env")
AUTH_KINDS = ("none", "bearer", "header")

DEFAULT_TIMEOUT_MS = 10_000
TIMEOUT_BOUNDS = (100, 300_000)  # a tenth of a second to five minutes
DEFAULT_REFRESH_S = 60
REFRESH_BOUNDS = (1, 86_400)
URL_MAX = 500

MCP_SERVER_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")
SECRET_ENV = re.compile(r"[A-Z_][A-Z0-9_]{0,127}")
_HEADER = re.compile(r"[A-Za-z0-9-]{1,64}")
# Headers the MCP transport sets itself: an auth header with one of these names would break every call.
TRANSPORT_HEADERS = frozenset(
    {"accept", "content-type", "content-length", "host", "mcp-session-id", "mcp-protocol-version"}
)

Problems = dict[tuple[Any, ...], str]


def _bounded(value: Any, bounds: tuple[int, int]) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and bounds[0] <= value <= bounds[1]


def url_problem(url: Any) -> str | None:
    """Why ``url`` cannot be an upstream's streamable HTTP endpoint, or None."""
    if not isinstance(url, str) or not url or len(url) > URL_MAX:
        return gettext("The URL is an http or https address of at most %(max)s characters.") % {"max": URL_MAX}
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 — raises on a port that is not a number
    except ValueError:
        return gettext("This is not a URL.")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return gettext("The URL is an http or https address (with a host).")
    if parts.username is not None or parts.password is not None:
        return gettext("A URL cannot carry a user or password: name the secret's environment variable in auth.")
    if parts.query or parts.fragment:
        return gettext("A URL cannot carry a query or fragment (a secret could hide there): use auth.")
    if any(ch.isspace() for ch in url):
        return gettext("This is not a URL.")
    return None


def _auth_problems(auth: Any) -> Problems:
    at = ("auth",)
    if not isinstance(auth, dict):
        return {at: gettext("auth is a mapping: kind (none, bearer or header), header, secret_env.")}
    problems: Problems = {}
    for key in auth:
        if key not in AUTH_KEYS:
            problems[(*at, key)] = gettext(
                "Unknown key '%(key)s' (expected one of: %(keys)s); a secret is never written here: "
                "name its environment variable in secret_env."
            ) % {"key": key, "keys": ", ".join(AUTH_KEYS)}
    kind = auth.get("kind", "none")
    if kind not in AUTH_KINDS:
        problems[(*at, "kind")] = gettext("The auth kind is none, bearer or header.")
        return problems
    header, secret_env = auth.get("header"), auth.get("secret_env")
    if kind == "none":
        if header is not None or secret_env is not None:
            problems[at] = gettext("auth of kind none takes no header and no secret_env.")
        return problems
    if secret_env is None:
        problems[(*at, "secret_env")] = gettext("auth of kind %(kind)s needs secret_env.") % {"kind": kind}
    elif not isinstance(secret_env, str) or not SECRET_ENV.fullmatch(secret_env):
        problems[(*at, "secret_env")] = gettext(
            "secret_env names an environment variable (upper-case letters, digits and _), never the secret itself."
        )
    if kind == "bearer" and header is not None:
        problems[(*at, "header")] = gettext("auth of kind bearer sends Authorization: Bearer; it takes no header.")
    elif kind == "header":
        if not isinstance(header, str) or not _HEADER.fullmatch(header):
            problems[(*at, "header")] = gettext("auth of kind header needs a header name (letters, digits and -).")
        elif header.lower() in TRANSPORT_HEADERS:
            problems[(*at, "header")] = gettext("The MCP transport sets %(header)s itself.") % {"header": header}
    return problems


def mcp_server_problems(server: Mapping[str, Any]) -> Problems:
    """Every problem of one upstream MCP server (document shape), keyed by its path inside it."""
    problems: Problems = {}
    name = server.get("name")
    if not isinstance(name, str) or not MCP_SERVER_NAME.fullmatch(name):
        problems[("name",)] = gettext(
            "A server's name is a lower-case letter, then up to 31 lower-case letters, digits, _ or - (no dot: "
            "it is the namespace before the dot of its tools' names)."
        )
    if not isinstance(server.get("description", ""), str):
        problems[("description",)] = gettext("A description is text.")
    url = url_problem(server.get("url"))
    if url is not None:
        problems[("url",)] = url
    if "auth" in server:
        problems.update(_auth_problems(server["auth"]))
    if not _bounded(server.get("timeout_ms", DEFAULT_TIMEOUT_MS), TIMEOUT_BOUNDS):
        problems[("timeout_ms",)] = gettext("timeout_ms is a whole number of milliseconds from %(min)s to %(max)s.") % {
            "min": TIMEOUT_BOUNDS[0],
            "max": TIMEOUT_BOUNDS[1],
        }
    if not isinstance(server.get("enabled", True), bool):
        problems[("enabled",)] = gettext("enabled is true or false.")
    if not _bounded(server.get("tools_refresh_s", DEFAULT_REFRESH_S), REFRESH_BOUNDS):
        problems[("tools_refresh_s",)] = gettext(
            "tools_refresh_s is a whole number of seconds from %(min)s to %(max)s."
        ) % {
            "min": REFRESH_BOUNDS[0],
            "max": REFRESH_BOUNDS[1],
        }
    return problems


def canonical_auth(auth: Mapping[str, Any] | None) -> dict[str, Any]:
    auth = auth or {}
    kind = auth.get("kind") or "none"
    document: dict[str, Any] = {"kind": kind}
    if kind == "header":
        document["header"] = auth["header"]
    if kind != "none":
        document["secret_env"] = auth["secret_env"]
    return document


def canonical_mcp_server(server: Mapping[str, Any]) -> dict[str, Any]:
    """A valid server in the one shape revisions, exports and diffs use: every default written out but an
    empty description."""
    document: dict[str, Any] = {"name": server["name"]}
    if server.get("description"):
        document["description"] = server["description"]
    document["url"] = server["url"]
    document["auth"] = canonical_auth(server.get("auth"))
    document["timeout_ms"] = server.get("timeout_ms") or DEFAULT_TIMEOUT_MS
    document["enabled"] = server.get("enabled", True)
    document["tools_refresh_s"] = server.get("tools_refresh_s") or DEFAULT_REFRESH_S
    return document


def server_of(tool_name: str) -> str:
    """The server a contract belongs to (``orders`` for ``orders.query_order``), or ``""`` for a plain name."""
    server, dot, _ = tool_name.partition(".")
    return server if dot else ""
